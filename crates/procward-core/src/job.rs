//! What a job is, shared by the modules that start and follow one: [`spawn`](crate::spawn)
//! starts a job, [`launch`](crate::launch) starts its first process, [`reader`](crate::reader)
//! captures its output. Each of them imports this module and none of them imports another
//! in a circle (`spawn` calls `launch` and `reader`; those two know only this module).
//!
//! - [`SpawnOptions`], [`Capture`], [`Input`]: what to run and how;
//! - [`DrainOptions`]: how long to read after the direct child exited;
//! - [`JobEvent`] and [`EventSink`]: what the reader reports, and where to;
//! - `Launched` (crate-private): the started direct child, waited for exactly once.

use crate::pty::PtySize;
use crate::status::ExitInfo;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// Where the job's output goes.
#[derive(Debug, Clone)]
pub enum Capture {
  /// One pipe for stdout and stderr, read by the reactor.
  Pipe,
  /// A log file (appended, created 0600) and an exit file written by the supervisor.
  Durable {
    /// Log file for merged stdout and stderr.
    log_path: PathBuf,
    /// Where the supervisor writes `{"code":N,"signal":null}` or `{"code":null,"signal":N}`.
    exit_path: PathBuf,
    /// Path of the `procward-supervise` executable.
    supervisor: PathBuf,
    /// The log rotates once a part holds this many bytes; one rotated part is kept (see
    /// `logfile`). 0: never rotate.
    log_part_bytes: u64,
    /// Give the job a FIFO at this path as stdin (created here, 0600), which any host may
    /// write to; the supervisor keeps it open until it gets SIGUSR1 (see the supervisor).
    stdin_fifo: Option<PathBuf>,
  },
}

/// What the job's stdin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Input {
  /// `/dev/null` (the default): a job that reads stdin sees EOF at once.
  #[default]
  Null,
  /// A pipe the host writes to ([`JobInput`](crate::pty::JobInput)); closing it is EOF.
  Pipe,
  /// A pseudo-terminal for stdin, stdout and stderr (pipe capture only).
  Pty(PtySize),
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct SpawnOptions {
  /// The command string, passed to the shell as one argument, byte for byte.
  pub command: String,
  /// Shell executable. Default [`default_shell`].
  pub shell: PathBuf,
  /// Arguments before the command. Default `["-c", "--"]`: `--` ends the shell's options,
  /// so a command that starts with `-` is a command, not an option.
  pub shell_args: Vec<String>,
  /// Working directory; `None` inherits the host's.
  pub cwd: Option<PathBuf>,
  /// The complete environment; `None` inherits the host's.
  pub env: Option<Vec<(String, String)>>,
  pub capture: Capture,
  pub input: Input,
  pub drain: DrainOptions,
  /// A cgroup v2 directory the job joins before it execs (see `cgroup`); `None` for none.
  pub cgroup: Option<PathBuf>,
  /// Bytes of output the native tail keeps. Default 200 000.
  pub tail_limit: usize,
  /// Also hand output events to the sink (they always go to the tail). Default true.
  pub forward_output: bool,
  /// Durable mode: the session record (JSON) the supervisor writes to `session.json` beside
  /// the exit file, creating the session directory, before it starts the job (see
  /// `procward-supervise`). At most 60 000 bytes (it goes through a pipe). Default `None`:
  /// the host wrote it.
  pub session_record: Option<String>,
}

impl SpawnOptions {
  pub fn new(command: impl Into<String>) -> Self {
    SpawnOptions {
      command: command.into(),
      shell: default_shell(),
      shell_args: vec!["-c".into(), "--".into()],
      cwd: None,
      env: None,
      capture: Capture::Pipe,
      input: Input::Null,
      drain: DrainOptions::default(),
      cgroup: None,
      tail_limit: 200_000,
      forward_output: true,
      session_record: None,
    }
  }
}

/// `/bin/bash` when it exists, else `/bin/sh`.
///
/// bash runs the last simple command of `-c` with `exec`, so `sh -c '...'` or a lone
/// `node server.js` becomes the session leader itself and its own exit status (including
/// a death by signal) is what the session reports. dash (Debian's `/bin/sh`) forks instead,
/// and a child killed by SIGKILL then surfaces as the shell's `exit 137`.
pub fn default_shell() -> PathBuf {
  let bash = PathBuf::from("/bin/bash");
  if bash.exists() {
    bash
  } else {
    PathBuf::from("/bin/sh")
  }
}

/// One thing that happened to a job, in order: output events, then exactly one exit,
/// then (pipe mode only) possibly late output from descendants still holding the pipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEvent {
  /// Decoded text. `late` is true for output read after the exit was published.
  Output { text: String, late: bool },
  /// The direct child's end (durable mode: the job's end as the supervisor recorded it).
  Exit(ExitInfo),
}

/// How long to keep reading after the direct child exited, before publishing the exit.
#[derive(Debug, Clone)]
pub struct DrainOptions {
  /// Publish once the pipe has been idle this long. Default 40 ms.
  pub idle: Duration,
  /// Publish at the latest this long after the exit. Default 120 ms.
  pub max_wait: Duration,
  /// Publish after this many bytes were read after the exit. Default 1 MiB.
  pub byte_cap: usize,
}

impl Default for DrainOptions {
  fn default() -> Self {
    DrainOptions { idle: Duration::from_millis(40), max_wait: Duration::from_millis(120), byte_cap: 1 << 20 }
  }
}

/// Receives a job's events, on the reactor thread that follows every job of the process:
/// a sink should return quickly (while it blocks, no job's output is read), and it must
/// never wait for something that waits for the reactor (another job's event, say).
pub type EventSink = Box<dyn FnMut(JobEvent) + Send + 'static>;

/// A started process this host is the parent of: wait for it exactly once.
#[derive(Debug)]
pub(crate) struct Launched {
  pub pid: i32,
  status: Option<ExitStatus>,
}

impl Launched {
  pub fn new(pid: i32) -> Self {
    Launched { pid, status: None }
  }

  fn waitpid(&mut self, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
    if let Some(s) = self.status {
      return Ok(Some(s));
    }
    loop {
      let mut raw = 0;
      let r = unsafe { libc::waitpid(self.pid, &mut raw, flags) };
      if r == self.pid {
        let s = ExitStatus::from_raw(raw);
        self.status = Some(s);
        return Ok(Some(s));
      }
      if r == 0 {
        return Ok(None);
      }
      let e = io::Error::last_os_error();
      if e.kind() != io::ErrorKind::Interrupted {
        return Err(e);
      }
    }
  }

  /// The exit status if the process has ended (it is reaped then), else `None`.
  /// Errors: `ECHILD` when someone else reaped it.
  pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
    self.waitpid(libc::WNOHANG)
  }

  /// Blocks until the process ends and reaps it.
  pub fn wait(&mut self) -> io::Result<ExitStatus> {
    self.waitpid(0).map(|s| s.expect("a blocking waitpid returns a status"))
  }
}
