//! Spawning a job on Windows (this is the crate's `spawn` module there), with the same
//! shape as on Unix: [`spawn`] returns a [`Job`] (pid, identity, input, tail, exit) and
//! hands the job's events (output, then exactly one exit, then late output) to a sink.
//!
//! The job is `<shell> <shell_args...> <command>` (default `cmd.exe /d /s /c`, see
//! `windows::cmdline` for the quoting) started by `windows::process::launch`: suspended, in
//! a new process group with a hidden console of its own, assigned to the Job Object
//! `Local\procward-job-<pid>-<start_time>`, then resumed. stdout and stderr share one
//! pipe; stdin is NUL, a pipe, or a pseudoconsole (`Input::Pty`). One thread per job
//! captures the output (`windows::reader`), and one more writes its input when it has
//! one (`pty`).
//!
//! Exit status: Windows has no signals; the exit is the process's exit code
//! (`GetExitCodeProcess`), also for a job ended by `TerminateJobObject`/`TerminateProcess`,
//! which sets the code the killer chose. Naming such an end a kill is the kill's report,
//! not the reader's.
//!
//! Durable jobs (`Capture::Durable`) are started by `windows::durable`.

use crate::error::{Error, Result};
use crate::identity::{self, Identity};
use crate::pty::JobInput;
use crate::started::{pty_sink, recording_sink, SharedExit};
use crate::tail::Tail;
use crate::windows::process::{launch, StdinFrom, Stdio};
use crate::windows::reader::{self, Capture as ReaderCapture};
use std::sync::{Arc, Mutex};

// Their home is `job`; re-exported where the Unix `spawn` module has them.
pub use crate::job::{default_shell, Capture, EventSink, Input, SpawnOptions};
pub use crate::started::Job;

/// Starts the job and its capture thread.
///
/// Errors: `InvalidInput` for an empty command, a command line over its limit (cmd.exe:
/// 8191 characters) or an unusable environment; `Unsupported` for a durable job, or a PTY
/// job before Windows 10 1809; `Io` when the shell or the working directory is missing
/// (`ENOENT`), or a pipe, `CreateProcessW`, the Job Object or a thread fails (the job is
/// terminated then: its Job Object closes with `KILL_ON_JOB_CLOSE`).
pub fn spawn(opts: SpawnOptions, sink: EventSink) -> Result<Job> {
  if opts.command.is_empty() {
    return Err(Error::InvalidInput("command is empty".into()));
  }
  if matches!(opts.capture, Capture::Durable { .. }) {
    return crate::windows::durable::spawn(opts, sink);
  }
  let stdio = match opts.input {
    Input::Null => Stdio::Pipe { stdin: StdinFrom::Null },
    Input::Pipe => Stdio::Pipe { stdin: StdinFrom::Pipe },
    Input::Pty(size) => Stdio::Pty(size),
  };
  let launched = launch(&opts, stdio)?;
  let pid = launched.pid;
  // From here on the job runs: an error drops its Job Object, which terminates it.
  let boot_id = identity::boot_id().map_err(|e| Error::io("reading the boot id", e))?;
  let identity = Identity { pid, start_time: launched.start_time, boot_id };
  let mut input = match launched.input {
    Some(handle) => Some(JobInput::new(pid, handle, launched.console)?),
    None => None,
  };
  let tail = Tail::shared(opts.tail_limit);
  let exit: SharedExit = Arc::new(Mutex::new(None));
  let sink = recording_sink(tail.clone(), exit.clone(), opts.forward_output, sink);
  // A pseudoconsole's screen goes through the emulator too: conhost answers most queries
  // itself, and the ones it passes on are answered into its input.
  let (sink, terminal) = pty_sink(opts.input, input.as_mut(), sink);
  let capture = ReaderCapture { pid, process: launched.process, job: launched.job, output: launched.output, drain: opts.drain, sink };
  reader::follow(capture).map_err(|e| Error::io("starting the output thread", e))?;
  Ok(Job { pid, identity, input, tail, exit, terminal })
}
