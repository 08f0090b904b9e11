//! The handle of a started job: identity, output tail, end, stdin and terminal size.

use crate::identity::Identity;
use crate::invalid;
use crate::jobevent::JobEvent;
use crate::map_error;
use crate::terminal::TerminalScreen;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use procward_core as core;
use std::time::Duration;

/// Counters of a job's native output tail, in bytes.
#[napi(object)]
pub struct TailStats {
  /// Bytes ever read.
  pub total: f64,
  /// Bytes dropped from the front by the limit.
  pub dropped: f64,
  /// Bytes held now.
  pub held: f64,
  /// The limit.
  pub limit: f64,
  /// The dropped bytes ended inside a private-key block: the held text starts inside it
  /// (redaction masks it up to its END line).
  pub starts_in_key_block: bool,
}

/// Terminal size in character cells.
#[napi(object)]
pub struct PtySize {
  /// Columns. Default 120.
  pub cols: Option<u32>,
  /// Rows. Default 40.
  pub rows: Option<u32>,
}

pub(crate) fn pty_size(p: &PtySize) -> Result<core::pty::PtySize> {
  let d = core::pty::PtySize::default();
  let dim = |v: Option<u32>, default: u16, what: &str| match v {
    None => Ok(default),
    Some(n) if (1..=u16::MAX as u32).contains(&n) => Ok(n as u16),
    Some(n) => Err(invalid(format!("{what} must be from 1 to 65535, got {n}"))),
  };
  Ok(core::pty::PtySize { cols: dim(p.cols, d.cols, "cols")?, rows: dim(p.rows, d.rows, "rows")? })
}

/// How a write to a job's input ended.
#[napi(object)]
pub struct WriteOutcome {
  /// Bytes of this write that reached the job's input (all of them without a `failure`).
  pub written: f64,
  /// Why the rest did not: `"exited"` (nobody reads the input any more: the job exited or
  /// closed it), `"timed_out"` (the job took none of the input for `timeoutMs`: it is not
  /// reading), `"dropped"` (queued behind a write that failed; none of it was sent),
  /// `"closed"` (stdin was closed or released), `"io"` (another error of the write).
  #[napi(ts_type = "'exited' | 'timed_out' | 'dropped' | 'closed' | 'io'")]
  pub failure: Option<String>,
  /// The failure in words, with the byte count.
  pub message: Option<String>,
}

impl From<std::result::Result<usize, core::job::WriteError>> for WriteOutcome {
  fn from(r: std::result::Result<usize, core::job::WriteError>) -> Self {
    use core::job::WriteFailure as F;
    match r {
      Ok(n) => WriteOutcome { written: n as f64, failure: None, message: None },
      Err(e) => {
        let failure = match e.failure {
          F::Exited => "exited",
          F::TimedOut(_) => "timed_out",
          F::Dropped => "dropped",
          F::Closed => "closed",
          F::Io(_) => "io",
        };
        WriteOutcome { written: e.written as f64, failure: Some(failure.into()), message: Some(e.to_string()) }
      }
    }
  }
}

/// A started job: its PID and identity, and its input side when it has one.
#[napi]
pub struct NativeJob {
  /// PID of the direct child; also its process group id and session id.
  #[napi(readonly)]
  pub pid: i32,
  identity: Identity,
  cgroup: Option<String>,
  tail: core::tail::SharedTail,
  input: Option<core::pty::JobInput>,
  exit: core::started::SharedExit,
  terminal: Option<core::terminal::SharedTerminal>,
}

impl NativeJob {
  /// The JS handle of a started core job; `cgroup` is its cgroup directory, if any.
  pub(crate) fn new(job: core::spawn::Job, cgroup: Option<String>) -> Self {
    NativeJob {
      pid: job.pid,
      identity: job.identity.into(),
      cgroup,
      input: job.input,
      tail: job.tail,
      exit: job.exit,
      terminal: job.terminal,
    }
  }
}

#[napi]
impl NativeJob {
  /// The job's identity (PID, start time, boot id), recorded before anything else happened.
  #[napi(getter)]
  pub fn identity(&self) -> Identity {
    self.identity.clone()
  }

  fn input(&self) -> Result<&core::pty::JobInput> {
    self.input.as_ref().ok_or_else(|| invalid("the job has no stdin (start it with stdin or pty)"))
  }

  /// The retained output (the last `tailBytes` bytes, starting at a whole character).
  #[napi]
  pub fn tail_text(&self) -> String {
    self.tail.lock().map(|t| t.text()).unwrap_or_default()
  }

  /// The job's end (an `exit` event) once its reader has published it, even if the event
  /// has not reached JS yet (the event loop has not run); `null` while it runs.
  #[napi]
  pub fn exit_status(&self) -> Option<JobEvent> {
    self.exit.lock().ok().and_then(|e| e.map(core::job::JobEvent::Exit)).map(Into::into)
  }

  /// Counters of the output tail.
  #[napi]
  pub fn tail_stats(&self) -> TailStats {
    if let Ok(t) = self.tail.lock() {
      return TailStats {
        total: t.total() as f64,
        dropped: t.dropped() as f64,
        held: t.held() as f64,
        limit: t.limit() as f64,
        starts_in_key_block: t.starts_in_key_block(),
      };
    }
    TailStats { total: 0.0, dropped: 0.0, held: 0.0, limit: 0.0, starts_in_key_block: false }
  }

  /// Changes how many bytes the tail keeps (trims at once when it shrinks).
  #[napi]
  pub fn set_tail_limit(&self, bytes: u32) {
    if let Ok(mut t) = self.tail.lock() {
      t.set_limit(bytes as usize);
    }
  }

  /// The job's cgroup directory, or `null` when it runs without containment.
  #[napi(getter)]
  pub fn cgroup(&self) -> Option<String> {
    self.cgroup.clone()
  }

  /// Whether the job has an input side: `"pipe"`, `"pty"`, or `null`.
  #[napi(getter)]
  pub fn input_kind(&self) -> Option<String> {
    self.input.as_ref().map(|i| if i.kind() == core::pty::InputKind::Pty { "pty".into() } else { "pipe".into() })
  }

  /// Writes all of `data` (UTF-8) to the job's stdin after every earlier write, never
  /// blocking the JS thread: what the pipe or terminal takes now is written now, the rest by
  /// the core's writer thread as the job reads. Resolves with how it ended (never rejects
  /// for the job's doing, see `WriteOutcome`): `failure` is absent once every byte reached
  /// the input. `timeoutMs`: how long the write waits while the job takes none of its bytes
  /// (default 30 000). Throws `EINVAL` without stdin. On Windows the bytes are queued for a
  /// writer thread (up to 16 MiB waiting) and the outcome comes at once; a write the job's
  /// end made fail is reported by the next call.
  #[napi(ts_return_type = "Promise<WriteOutcome>")]
  pub fn write<'env>(&self, env: &'env Env, data: String, timeout_ms: Option<f64>) -> Result<Object<'env>> {
    let input = self.input()?;
    let timeout = match timeout_ms {
      None => core::job::DEFAULT_WRITE_TIMEOUT,
      Some(ms) if ms.is_finite() && ms > 0.0 => Duration::from_secs_f64(ms / 1000.0),
      Some(ms) => return Err(invalid(format!("timeoutMs must be a positive number of milliseconds, got {ms}"))),
    };
    let (deferred, promise) = env.create_deferred()?;
    input.write_all(data.into_bytes(), timeout, Box::new(move |r| deferred.resolve(move |_| Ok(WriteOutcome::from(r)))));
    Ok(promise)
  }

  /// Ends the input: closes the pipe, or sends EOF to a PTY (Ctrl-D; on Windows Ctrl-Z and
  /// Enter, the end of input of console programs).
  #[napi]
  pub fn close_stdin(&mut self) -> Result<()> {
    self.input.as_mut().ok_or_else(|| invalid("the job has no stdin (start it with stdin or pty)"))?.close().map_err(map_error)
  }

  /// Closes the host's side of the input now (the pipe's write end or the PTY master copy;
  /// on Windows also the pseudoconsole, which ends what is attached to it) instead of when
  /// this object is garbage-collected. Idempotent.
  #[napi]
  pub fn release(&mut self) {
    self.input = None;
  }

  /// A PTY job's terminal foreground process group (`tcgetpgrp` on its master): the group
  /// a terminal's Ctrl-C reaches, which job control may have made apart from the job's own;
  /// `null` without a PTY, once the input is released, or when the terminal has none.
  #[napi]
  pub fn foreground_group(&self) -> Option<i32> {
    self.input.as_ref().and_then(|i| i.foreground_group())
  }

  /// What a PTY job's screen shows now (the core's terminal emulator, fed with every byte
  /// of its output; kept after the job ended); `null` for a job without a PTY.
  #[napi]
  pub fn screen(&self) -> Option<TerminalScreen> {
    self.terminal.as_ref().map(|t| t.screen().into())
  }

  /// Resizes a PTY job's terminal. Errors: `EINVAL` without a PTY; `ENOTSUP` where the
  /// system's ConPTY cannot resize (Wine).
  #[napi]
  pub fn resize(&self, size: PtySize) -> Result<()> {
    self.input()?.resize(pty_size(&size)?).map_err(map_error)
  }
}

/// A running job to ask `jobsStopped` about.
#[napi(object)]
pub struct StoppedQuery {
  /// The identity the job was recorded with.
  pub identity: Identity,
  /// The identity is a durable job's supervisor's: look at the job, its child.
  pub supervised: bool,
}

/// Whether each job's own process is stopped (state `T`, `/proc/<pid>/stat` field 3: SIGSTOP,
/// or Ctrl-Z and the other stop signals it acted on), in order: `true`, `false`, or `null`
/// when that cannot be told (the process is gone or its PID reused, a supervisor has no job
/// yet, the process table cannot be read). One stat read per job, plus a supervisor's
/// children list. Never stopped on Windows.
#[napi]
pub fn jobs_stopped(jobs: Vec<StoppedQuery>) -> Result<Vec<Option<bool>>> {
  let jobs = jobs
    .into_iter()
    .map(|q| Ok(core::jobstate::JobRef { identity: q.identity.try_into()?, supervised: q.supervised }))
    .collect::<Result<Vec<_>>>()?;
  Ok(core::jobstate::stopped(&jobs))
}
