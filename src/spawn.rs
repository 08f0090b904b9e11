//! Starting a job: the options and the call itself (its events: `jobevent`).

use crate::invalid;
use crate::job::{pty_size, NativeJob, PtySize};
use crate::jobevent::JobEvent;
use crate::map_error;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue};
use napi_derive::napi;
use procward_core as core;
use std::collections::HashMap;
use std::time::Duration;

/// What to spawn.
#[napi(object)]
pub struct SpawnOptions {
  /// Shell command, passed byte for byte: as one argument after `shellArgs`, or on Unix, over
  /// 64 KiB and for a POSIX shell, through an inherited descriptor the shell sources (`-c`
  /// gets `. /dev/fd/3`). At most 1 MiB (`EINVAL` naming the limit past it).
  pub command: String,
  /// Shell executable. Default `/bin/bash` when it exists, else `/bin/sh`; on Windows
  /// `%ComSpec%` (cmd.exe).
  pub shell: Option<String>,
  /// Arguments before the command. Default by the shell: `["-c", "--"]` on Unix; on Windows
  /// `["/d", "/s", "/c"]` for cmd.exe (its command line is at most 8191 characters),
  /// `["-NoProfile", "-NonInteractive", "-Command"]` for powershell/pwsh, `["-c"]` otherwise.
  pub shell_args: Option<Vec<String>>,
  /// Working directory. Default: the host's.
  pub cwd: Option<String>,
  /// The complete environment of the job. Default: the host's.
  pub env: Option<HashMap<String, String>>,
  /// Durable mode: log file for merged output (created 0600, appended). Not on Windows yet
  /// (`ENOTSUP`).
  pub log_path: Option<String>,
  /// Durable mode: rotate the log once a part holds this many bytes, keeping one rotated
  /// part (`output.log.1`). Default 0: never rotate.
  pub log_part_bytes: Option<f64>,
  /// Durable mode: create a FIFO here (0600) and make it the job's stdin, writable by any
  /// host; SIGUSR1 to the supervisor ends it (EOF). Default: stdin is `/dev/null`.
  pub stdin_fifo: Option<String>,
  /// Durable mode: exit file the supervisor writes.
  pub exit_path: Option<String>,
  /// Durable mode: path of the `procward-supervise` executable.
  pub supervisor: Option<String>,
  /// Durable mode: the session record (JSON, at most 60 000 bytes) the supervisor writes to
  /// `session.json` beside the exit file, creating the directory, before the job starts.
  /// Default: the host wrote it.
  pub session_record: Option<String>,
  /// Durable mode: the supervisor tree-kills the job this many milliseconds after it
  /// started (SIGTERM, SIGKILL after `timeoutGraceMs`) and records `"timedOut":true` in the
  /// exit file. Default: no deadline.
  pub timeout_ms: Option<f64>,
  /// Durable mode, with `timeoutMs`: milliseconds between the deadline's SIGTERM and SIGKILL.
  /// Default 2000.
  pub timeout_grace_ms: Option<f64>,
  /// After the direct child exits, publish once output has been idle this long. Default 40.
  pub drain_idle_ms: Option<u32>,
  /// ... and at the latest this long after the exit. Default 120.
  pub drain_max_ms: Option<u32>,
  /// Keep a stdin pipe open for `write`/`closeStdin`. Default false: stdin is `/dev/null`.
  pub stdin: Option<bool>,
  /// Run under a pseudo-terminal of this size (stdin, stdout and stderr; a pseudoconsole,
  /// ConPTY, on Windows). Not with durable mode.
  pub pty: Option<PtySize>,
  /// Run in a cgroup v2 of this name when the host may create cgroups (Linux); silently
  /// without one otherwise. See `NativeJob.cgroup`.
  pub cgroup_name: Option<String>,
  /// Bytes of output the native tail keeps (see `NativeJob.tailText`). Default 200 000.
  pub tail_bytes: Option<u32>,
  /// Also deliver output events to `onEvent` (the tail always gets them). Default true.
  pub forward_output: Option<bool>,
}

fn spawn_options(o: SpawnOptions) -> Result<core::job::SpawnOptions> {
  let mut opts = core::job::SpawnOptions::new(o.command);
  if let Some(s) = o.shell {
    opts.shell = s.into();
    opts.shell_args = core::job::default_shell_args(&opts.shell);
  }
  if let Some(a) = o.shell_args {
    opts.shell_args = a;
  }
  opts.cwd = o.cwd.map(Into::into);
  opts.env = o.env.map(|m| m.into_iter().collect());
  if let Some(ms) = o.drain_idle_ms {
    opts.drain.idle = Duration::from_millis(ms.into());
  }
  if let Some(ms) = o.drain_max_ms {
    opts.drain.max_wait = Duration::from_millis(ms.into());
  }
  #[cfg(target_os = "linux")]
  {
    opts.cgroup = o.cgroup_name.as_deref().and_then(core::cgroup::create);
  }
  if let Some(n) = o.tail_bytes {
    opts.tail_limit = n as usize;
  }
  opts.forward_output = o.forward_output.unwrap_or(true);
  opts.session_record = o.session_record;
  if let Some(after) = o.timeout_ms {
    if !(after.is_finite() && after >= 1.0 && after <= u32::MAX as f64) {
      return Err(invalid("timeoutMs must be a whole number of milliseconds from 1 to 4294967295"));
    }
    let grace = o.timeout_grace_ms.unwrap_or(2000.0);
    if !(grace.is_finite() && (0.0..=u32::MAX as f64).contains(&grace)) {
      return Err(invalid("timeoutGraceMs must be a whole number of milliseconds from 0 to 4294967295"));
    }
    let ms = |v: f64| std::time::Duration::from_millis(v as u64);
    opts.deadline = Some(core::job::Deadline { after: ms(after), grace: ms(grace) });
  }
  opts.input = match (&o.pty, o.stdin) {
    (Some(p), _) => core::job::Input::Pty(pty_size(p)?),
    (None, Some(true)) => core::job::Input::Pipe,
    _ => core::job::Input::Null,
  };
  opts.capture = match (o.log_path, o.exit_path, o.supervisor) {
    (None, None, None) => core::job::Capture::Pipe,
    (Some(log), Some(exit), Some(sup)) => core::job::Capture::Durable {
      log_path: log.into(),
      exit_path: exit.into(),
      supervisor: sup.into(),
      log_part_bytes: o.log_part_bytes.map_or(0, |n| n as u64),
      stdin_fifo: o.stdin_fifo.map(Into::into),
    },
    _ => return Err(invalid("durable mode needs logPath, exitPath and supervisor together")),
  };
  Ok(opts)
}

/// Events a job may have queued for the JS thread before the core's reactor (one thread
/// for every job) waits for JS to take one. A waiting reactor stops reading, the pipe fills
/// and the job blocks on write: the same back-pressure Node streams apply, so an output
/// flood cannot grow the host's memory without bound. Other jobs wait meanwhile, for as
/// long as JS takes to handle one event.
const EVENT_QUEUE: usize = 16;

/// Starts a job in a new session. Events arrive through `onEvent` from the core's reactor
/// thread; the callback is weak, so a running job never keeps Node's event loop alive.
#[napi]
pub fn spawn(
  options: SpawnOptions,
  on_event: ThreadsafeFunction<JobEvent, UnknownReturnValue, JobEvent, Status, false, true, { EVENT_QUEUE }>,
) -> Result<NativeJob> {
  let opts = spawn_options(options)?;
  let cgroup = opts.cgroup.as_ref().map(|p| p.display().to_string());
  let job = core::spawn::spawn(
    opts,
    Box::new(move |ev| {
      on_event.call(ev.into(), ThreadsafeFunctionCallMode::Blocking);
    }),
  )
  .map_err(map_error)?;
  Ok(NativeJob::new(job, cgroup))
}

/// The conventional name of a signal number (`SIGKILL` for 9).
#[napi]
pub fn signal_name(signal: i32) -> String {
  core::status::signal_name(signal)
}
