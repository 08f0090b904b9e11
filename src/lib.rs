//! The napi binding of procward: converts between JS values and `procward-core` types and
//! maps core errors to JS errors. No logic lives here.

#![deny(clippy::all)]

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue};
use napi_derive::napi;
use procward_core as core;
use std::collections::HashMap;
use std::time::Duration;

/// The one place where core errors become JS errors. The message starts with a stable
/// code (`EMFILE: ...`, `EINVAL: ...`); the TypeScript facade lifts it into `error.code`.
fn map_error(e: core::Error) -> Error {
  Error::new(Status::GenericFailure, format!("{}: {}", e.code(), e))
}

fn invalid(msg: impl Into<String>) -> Error {
  map_error(core::Error::InvalidInput(msg.into()))
}

/// Who a process is: PID plus start time plus boot id. A PID alone is never enough.
#[napi(object)]
#[derive(Clone)]
pub struct Identity {
  /// Process id.
  pub pid: i32,
  /// Start time as a decimal string (Linux: clock ticks since boot, `/proc/<pid>/stat` field 22).
  pub start_time: String,
  /// Boot id (Linux: `/proc/sys/kernel/random/boot_id`).
  pub boot_id: String,
}

impl From<core::Identity> for Identity {
  fn from(id: core::Identity) -> Self {
    Identity { pid: id.pid, start_time: id.start_time.to_string(), boot_id: id.boot_id }
  }
}

impl TryFrom<Identity> for core::Identity {
  type Error = Error;
  fn try_from(id: Identity) -> Result<Self> {
    let start_time = id.start_time.parse().map_err(|_| invalid(format!("startTime {:?} is not a decimal integer", id.start_time)))?;
    Ok(core::Identity { pid: id.pid, start_time, boot_id: id.boot_id })
  }
}

/// Comparison of a recorded identity with the live system.
#[napi(string_enum = "lowercase")]
pub enum Verdict {
  /// The same process is alive.
  Current,
  /// The PID is alive but is another process (reused PID, or another boot).
  Replaced,
  /// No such PID, or a zombie.
  Gone,
  /// Cannot be read now: treat as alive, never signal.
  Unknown,
}

impl From<core::Verdict> for Verdict {
  fn from(v: core::Verdict) -> Self {
    match v {
      core::Verdict::Current => Verdict::Current,
      core::Verdict::Replaced => Verdict::Replaced,
      core::Verdict::Gone => Verdict::Gone,
      core::Verdict::Unknown => Verdict::Unknown,
    }
  }
}

/// One PID's state as the kernel reports it (Linux: one read of `/proc/<pid>/stat`).
#[napi(object)]
pub struct ProbeResult {
  pub pid: i32,
  /// Present and not a zombie.
  pub alive: bool,
  /// Whether a process with this PID exists at all (zombies included).
  pub exists: bool,
  /// Kernel state letter (`R`, `S`, `D`, `T`, `Z`, ...), field 3.
  pub state: Option<String>,
  /// Parent PID, field 4.
  pub ppid: Option<i32>,
  /// Process group id, field 5.
  pub pgid: Option<i32>,
  /// Start time (decimal string, clock ticks since boot), field 22.
  pub start_time: Option<String>,
  /// Why the PID could not be read (then `alive` is false and `exists` unknown-false).
  pub error: Option<String>,
}

/// A process found in a tree, with the identity that makes it safe to signal later.
#[napi(object)]
pub struct ProcessEntry {
  pub pid: i32,
  pub ppid: i32,
  pub pgid: i32,
  /// Kernel state letter.
  pub state: String,
  /// Not a zombie.
  pub alive: bool,
  pub identity: Identity,
}

fn entry(p: &core::probe::ProcessInfo, boot_id: &str) -> ProcessEntry {
  ProcessEntry {
    pid: p.pid,
    ppid: p.ppid,
    pgid: p.pgid,
    state: p.state.to_string(),
    alive: !p.is_dead(),
    identity: Identity { pid: p.pid, start_time: p.start_time.to_string(), boot_id: boot_id.to_string() },
  }
}

/// Reads the identity of a live process; `null` when there is no such process or it is a zombie.
#[napi]
pub fn identity(pid: i32) -> Result<Option<Identity>> {
  core::identity::identity(pid)
    .map(|o| o.map(Identity::from))
    .map_err(|e| map_error(core::Error::Io { context: format!("reading identity of {pid}"), source: e }))
}

/// Compares a recorded identity with the live system, reading the kernel now.
#[napi]
pub fn verdict(identity: Identity) -> Result<Verdict> {
  Ok(core::identity::verdict(&identity.try_into()?).into())
}

/// Probes many PIDs at once (one stat read each). Never throws for a missing PID.
#[napi]
pub fn probe(pids: Vec<i32>) -> Vec<ProbeResult> {
  core::probe::probe(&pids)
    .into_iter()
    .zip(pids)
    .map(|(p, pid)| match p {
      core::probe::Probe::Found(i) => ProbeResult {
        pid,
        alive: !i.is_dead(),
        exists: true,
        state: Some(i.state.to_string()),
        ppid: Some(i.ppid),
        pgid: Some(i.pgid),
        start_time: Some(i.start_time.to_string()),
        error: None,
      },
      core::probe::Probe::Missing => {
        ProbeResult { pid, alive: false, exists: false, state: None, ppid: None, pgid: None, start_time: None, error: None }
      }
      core::probe::Probe::Unreadable(e) => {
        ProbeResult { pid, alive: false, exists: false, state: None, ppid: None, pgid: None, start_time: None, error: Some(e) }
      }
    })
    .collect()
}

/// Descendants of `pid` (not including it), from one pass over the process table.
/// Empty when `pid` does not exist.
#[napi]
pub fn descendants(pid: i32) -> Result<Vec<ProcessEntry>> {
  let boot_id = core::identity::identity(std::process::id() as i32).ok().flatten().map(|i| i.boot_id).unwrap_or_default();
  Ok(core::tree::descendants(pid).map_err(map_error)?.iter().map(|p| entry(p, &boot_id)).collect())
}

/// Options of a tree kill. Milliseconds.
#[napi(object)]
pub struct KillOptions {
  /// Grace period between the first signal and SIGKILL. Default 2000; 0 = never escalate.
  pub grace_ms: Option<u32>,
  /// First signal by name (`SIGTERM`, `TERM`, `SIGINT`, ...). Default `SIGTERM`.
  pub signal: Option<String>,
  /// How long to wait for processes to vanish after the last signal. Default 500. The
  /// window stretches up to `settleMaxMs` while survivors are still dying.
  pub settle_ms: Option<u32>,
  /// Longest the settle window stretches while survivors are still dying (SIGKILL pending,
  /// exit under way, or still disappearing). Default 5000.
  pub settle_max_ms: Option<u32>,
  /// The job's cgroup as recorded: its name (the session id, `proc_` + 12 hex digits) or
  /// the directory an earlier version recorded. Used only when procward created it, directly
  /// below its own cgroup root and named for `sessionId`; otherwise refused
  /// (`cgroup_not_ours`) and never read or written. Linux only; ignored elsewhere.
  pub cgroup: Option<String>,
  /// The session the cgroup must be named for. Default: `cgroup` itself.
  pub session_id: Option<String>,
  /// Refuse the whole kill (`not_session_leader`) unless the root leads its own session,
  /// as every procward job does. Default false: the root and its descendants are signalled
  /// one by one, without the group signal.
  pub require_session_leader: Option<bool>,
}

/// Something a kill refused to signal, and why.
#[napi(object)]
pub struct KillRefusal {
  /// The PID refused (or whose group was refused); absent for a cgroup.
  pub pid: Option<i32>,
  /// The cgroup refused, as it was recorded; absent for a PID.
  pub cgroup: Option<String>,
  /// `pid_le_1`, `host`, `host_group`, `host_session`, `host_ancestor`,
  /// `not_session_leader` or `cgroup_not_ours`.
  pub reason: String,
}

/// What a tree kill did (PIDs).
#[napi(object)]
pub struct KillReport {
  /// Sent at least one signal.
  pub signalled: Vec<i32>,
  /// Already gone (or zombies) when their turn came.
  pub already_gone: Vec<i32>,
  /// Alive but another process (reused PID): never signalled.
  pub refused_reused: Vec<i32>,
  /// Still alive at the end: the kill failed for these.
  pub survivors: Vec<i32>,
  /// Identities of the survivors, to finish the kill later without risking a reused PID.
  pub survivor_identities: Vec<Identity>,
  /// Whether SIGKILL was sent.
  pub escalated: bool,
  /// What the guard refused to signal: never in `signalled`, `alreadyGone` or `survivors`.
  /// A refused root means the kill did nothing.
  pub refused: Vec<KillRefusal>,
}

#[cfg(unix)]
fn kill_options(o: Option<KillOptions>) -> Result<core::kill::KillOptions> {
  let mut opts = core::kill::KillOptions::default();
  if let Some(o) = o {
    if let Some(g) = o.grace_ms {
      opts.grace = Duration::from_millis(g.into());
    }
    if let Some(s) = o.settle_ms {
      opts.settle = Duration::from_millis(s.into());
    }
    if let Some(s) = o.settle_max_ms {
      opts.settle_max = Duration::from_millis(s.into());
    }
    opts.cgroup = o.cgroup.map(|recorded| {
      let session = o.session_id.unwrap_or_else(|| recorded.clone());
      core::kill::CgroupClaim { recorded, session }
    });
    opts.require_session_leader = o.require_session_leader.unwrap_or(false);
    if let Some(name) = o.signal {
      let n = core::status::signal_number(&name).ok_or_else(|| invalid(format!("unknown signal {name:?}")))?;
      opts.signal = n.try_into().map_err(|_| invalid(format!("unknown signal {name:?}")))?;
    }
  }
  Ok(opts)
}

/// Tree kill (snapshot, SIGTERM, grace period, SIGKILL) on a dedicated thread, never libuv's pool; the callback
/// gets `(error, report)` once. Holds the event loop open until it has reported.
#[napi]
pub fn kill_tree(
  identity: Identity,
  options: Option<KillOptions>,
  callback: ThreadsafeFunction<KillReport, UnknownReturnValue>,
) -> Result<()> {
  #[cfg(not(unix))]
  {
    let _ = (identity, options, callback);
    return Err(map_error(core::Error::Unsupported("tree kill (Windows Job Objects are not written yet)")));
  }
  #[cfg(unix)]
  {
    let root: core::Identity = identity.try_into()?;
    let opts = kill_options(options)?;
    std::thread::Builder::new()
      .name("procward-kill".into())
      .spawn(move || {
        let result = core::kill::kill_tree(&root, &opts).map_err(map_error).map(|r| KillReport {
          signalled: r.signalled,
          already_gone: r.already_gone,
          refused_reused: r.refused_reused,
          survivors: r.survivors,
          survivor_identities: r.survivor_identities.into_iter().map(Identity::from).collect(),
          escalated: r.escalated,
          refused: r.refused.into_iter().map(|x| KillRefusal { pid: x.pid, cgroup: x.cgroup, reason: x.reason.as_str().into() }).collect(),
        });
        callback.call(result, ThreadsafeFunctionCallMode::Blocking);
      })
      .map_err(|e| map_error(core::Error::Io { context: "starting the kill thread".into(), source: e }))?;
    Ok(())
  }
}

/// What to spawn.
#[napi(object)]
pub struct SpawnOptions {
  /// Shell command, passed byte for byte as one argument.
  pub command: String,
  /// Shell executable. Default `/bin/bash` when it exists, else `/bin/sh`.
  pub shell: Option<String>,
  /// Arguments before the command. Default `["-c"]`.
  pub shell_args: Option<Vec<String>>,
  /// Working directory. Default: the host's.
  pub cwd: Option<String>,
  /// The complete environment of the job. Default: the host's.
  pub env: Option<HashMap<String, String>>,
  /// Durable mode: log file for merged output (created 0600, appended).
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
  /// After the direct child exits, publish once output has been idle this long. Default 40.
  pub drain_idle_ms: Option<u32>,
  /// ... and at the latest this long after the exit. Default 120.
  pub drain_max_ms: Option<u32>,
  /// Keep a stdin pipe open for `write`/`closeStdin`. Default false: stdin is `/dev/null`.
  pub stdin: Option<bool>,
  /// Run under a pseudo-terminal of this size (stdin, stdout and stderr). Not with durable mode.
  pub pty: Option<PtySize>,
  /// Run in a cgroup v2 of this name when the host may create cgroups (Linux); silently
  /// without one otherwise. See `NativeJob.cgroup`.
  pub cgroup_name: Option<String>,
  /// Bytes of output the native tail keeps (see `NativeJob.tailText`). Default 200 000.
  pub tail_bytes: Option<u32>,
  /// Also deliver output events to `onEvent` (the tail always gets them). Default true.
  pub forward_output: Option<bool>,
}

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

#[cfg(unix)]
fn pty_size(p: &PtySize) -> Result<core::pty::PtySize> {
  let d = core::pty::PtySize::default();
  let dim = |v: Option<u32>, default: u16, what: &str| match v {
    None => Ok(default),
    Some(n) if (1..=u16::MAX as u32).contains(&n) => Ok(n as u16),
    Some(n) => Err(invalid(format!("{what} must be from 1 to 65535, got {n}"))),
  };
  Ok(core::pty::PtySize { cols: dim(p.cols, d.cols, "cols")?, rows: dim(p.rows, d.rows, "rows")? })
}

/// A started job: its PID and identity, and its input side when it has one.
#[napi]
pub struct NativeJob {
  /// PID of the direct child; also its process group id and session id.
  #[napi(readonly)]
  pub pid: i32,
  identity: Identity,
  cgroup: Option<String>,
  #[cfg(unix)]
  tail: core::tail::SharedTail,
  #[cfg(unix)]
  input: Option<core::pty::JobInput>,
  #[cfg(unix)]
  exit: std::sync::Arc<std::sync::Mutex<Option<core::status::ExitInfo>>>,
}

#[napi]
impl NativeJob {
  /// The job's identity (PID, start time, boot id), recorded before anything else happened.
  #[napi(getter)]
  pub fn identity(&self) -> Identity {
    self.identity.clone()
  }

  #[cfg(unix)]
  fn input(&self) -> Result<&core::pty::JobInput> {
    self.input.as_ref().ok_or_else(|| invalid("the job has no stdin (start it with stdin or pty)"))
  }

  /// The retained output (the last `tailBytes` bytes, starting at a whole character).
  #[napi]
  pub fn tail_text(&self) -> String {
    #[cfg(unix)]
    return self.tail.lock().map(|t| t.text()).unwrap_or_default();
    #[cfg(not(unix))]
    String::new()
  }

  /// The job's end (an `exit` event) once its reader has published it, even if the event
  /// has not reached JS yet (the event loop has not run); `null` while it runs.
  #[napi]
  pub fn exit_status(&self) -> Option<JobEvent> {
    #[cfg(unix)]
    if let Ok(e) = self.exit.lock() {
      return e.map(core::reader::JobEvent::Exit).map(Into::into);
    }
    None
  }

  /// Counters of the output tail.
  #[napi]
  pub fn tail_stats(&self) -> TailStats {
    #[cfg(unix)]
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
    #[cfg(unix)]
    if let Ok(mut t) = self.tail.lock() {
      t.set_limit(bytes as usize);
    }
    #[cfg(not(unix))]
    let _ = bytes;
  }

  /// The job's cgroup directory, or `null` when it runs without containment.
  #[napi(getter)]
  pub fn cgroup(&self) -> Option<String> {
    self.cgroup.clone()
  }

  /// Whether the job has an input side: `"pipe"`, `"pty"`, or `null`.
  #[napi(getter)]
  pub fn input_kind(&self) -> Option<String> {
    #[cfg(unix)]
    return self.input.as_ref().map(|i| if i.kind() == core::pty::InputKind::Pty { "pty".into() } else { "pipe".into() });
    #[cfg(not(unix))]
    None
  }

  /// Writes all of `data` (UTF-8) to the job's stdin without blocking. Errors: `EPIPE` when
  /// the job exited, `EAGAIN` when it is not reading its input, `EINVAL` without stdin.
  #[napi]
  pub fn write(&self, data: String) -> Result<()> {
    #[cfg(unix)]
    return self.input()?.write(data.as_bytes()).map_err(map_error);
    #[cfg(not(unix))]
    {
      let _ = data;
      Err(map_error(core::Error::Unsupported("stdin")))
    }
  }

  /// Ends the input: closes the pipe, or sends EOF (Ctrl-D) to a PTY.
  #[napi]
  pub fn close_stdin(&mut self) -> Result<()> {
    #[cfg(unix)]
    return self.input.as_mut().ok_or_else(|| invalid("the job has no stdin (start it with stdin or pty)"))?.close().map_err(map_error);
    #[cfg(not(unix))]
    Err(map_error(core::Error::Unsupported("stdin")))
  }

  /// Closes the host's side of the input now (the pipe's write end or the PTY master copy)
  /// instead of when this object is garbage-collected. Idempotent.
  #[napi]
  pub fn release(&mut self) {
    #[cfg(unix)]
    {
      self.input = None;
    }
  }

  /// Resizes a PTY job's terminal.
  #[napi]
  pub fn resize(&self, size: PtySize) -> Result<()> {
    #[cfg(unix)]
    return self.input()?.resize(pty_size(&size)?).map_err(map_error);
    #[cfg(not(unix))]
    {
      let _ = size;
      Err(map_error(core::Error::Unsupported("pty")))
    }
  }
}

/// One event of a job: `output` (text, `late` when read after the exit was published) or
/// `exit` (exactly once: `exitCode`, or `signal` with `signalNumber`).
#[napi(object)]
pub struct JobEvent {
  /// `"output"` or `"exit"`.
  pub kind: String,
  /// Output as UTF-8 bytes (already decoded and re-encoded: split characters reassembled,
  /// invalid bytes as U+FFFD). Handed over without a copy, so JS pays for text only when it
  /// reads it.
  pub data: Option<Buffer>,
  pub late: Option<bool>,
  pub exit_code: Option<i32>,
  /// Terminating signal name, e.g. `SIGKILL`.
  pub signal: Option<String>,
  pub signal_number: Option<i32>,
}

#[cfg(unix)]
impl From<core::reader::JobEvent> for JobEvent {
  fn from(ev: core::reader::JobEvent) -> Self {
    match ev {
      core::reader::JobEvent::Output { text, late } => JobEvent {
        kind: "output".into(),
        data: Some(text.into_bytes().into()),
        late: Some(late),
        exit_code: None,
        signal: None,
        signal_number: None,
      },
      core::reader::JobEvent::Exit(info) => JobEvent {
        kind: "exit".into(),
        data: None,
        late: None,
        exit_code: info.code,
        signal: info.signal.map(core::status::signal_name),
        signal_number: info.signal,
      },
    }
  }
}

#[cfg(unix)]
fn spawn_options(o: SpawnOptions) -> Result<core::spawn::SpawnOptions> {
  let mut opts = core::spawn::SpawnOptions::new(o.command);
  if let Some(s) = o.shell {
    opts.shell = s.into();
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
  opts.input = match (&o.pty, o.stdin) {
    (Some(p), _) => core::spawn::Input::Pty(pty_size(p)?),
    (None, Some(true)) => core::spawn::Input::Pipe,
    _ => core::spawn::Input::Null,
  };
  opts.capture = match (o.log_path, o.exit_path, o.supervisor) {
    (None, None, None) => core::spawn::Capture::Pipe,
    (Some(log), Some(exit), Some(sup)) => core::spawn::Capture::Durable {
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

/// Events a job may have queued for the JS thread before its reader blocks. A blocked
/// reader stops reading, the pipe fills and the job blocks on write: the same back-pressure
/// Node streams apply, so an output flood cannot grow the host's memory without bound.
const EVENT_QUEUE: usize = 16;

/// Starts a job in a new session. Events arrive through `onEvent` from the job's own reader
/// thread; the callback is weak, so a running job never keeps Node's event loop alive.
#[napi]
pub fn spawn(
  options: SpawnOptions,
  on_event: ThreadsafeFunction<JobEvent, UnknownReturnValue, JobEvent, Status, false, true, { EVENT_QUEUE }>,
) -> Result<NativeJob> {
  #[cfg(not(unix))]
  {
    let _ = (options, on_event);
    return Err(map_error(core::Error::Unsupported("spawn (Windows is not written yet)")));
  }
  #[cfg(unix)]
  {
    let opts = spawn_options(options)?;
    let cgroup = opts.cgroup.as_ref().map(|p| p.display().to_string());
    let job = core::spawn::spawn(
      opts,
      Box::new(move |ev| {
        on_event.call(ev.into(), ThreadsafeFunctionCallMode::Blocking);
      }),
    )
    .map_err(map_error)?;
    Ok(NativeJob { pid: job.pid, identity: job.identity.into(), cgroup, input: job.input, tail: job.tail, exit: job.exit })
  }
}

/// The conventional name of a signal number (`SIGKILL` for 9).
#[napi]
pub fn signal_name(signal: i32) -> String {
  core::status::signal_name(signal)
}

/// Watch patterns a session may have.
#[napi]
pub const MAX_WATCH_PATTERNS: u32 = core::patterns::MAX_PATTERNS as u32;
/// Characters a watch pattern may have.
#[napi]
pub const MAX_WATCH_PATTERN_CHARS: u32 = core::patterns::MAX_PATTERN_CHARS as u32;
/// Bytes (UTF-8) at the start of a line that watch patterns are matched against, at most
/// (a set with many automaton states matches fewer: `WatchMatcher.lineBytes`).
#[napi]
pub const MAX_WATCH_LINE_BYTES: u32 = core::patterns::MAX_LINE_BYTES as u32;

/// A session's watch patterns, compiled into one linear-time `regex` set
/// (`procward_core::patterns`).
#[napi]
pub struct WatchMatcher {
  inner: core::patterns::WatchPatterns,
}

#[napi]
impl WatchMatcher {
  /// Compiles `patterns` (`regex` crate syntax). Throws `EINVAL` for more than
  /// `MAX_WATCH_PATTERNS` patterns, an empty one, one longer than `MAX_WATCH_PATTERN_CHARS`
  /// characters, one the engine rejects (look-around, backreferences, syntax: the engine's
  /// reason is in the message) or a set that compiles too big (1 MiB, 16 384 automaton states).
  #[napi(constructor)]
  pub fn new(patterns: Vec<String>) -> Result<Self> {
    Ok(WatchMatcher { inner: core::patterns::WatchPatterns::compile(&patterns).map_err(map_error)? })
  }

  /// Bytes at the start of a line that are matched (512 to `MAX_WATCH_LINE_BYTES`).
  #[napi(getter)]
  pub fn line_bytes(&self) -> u32 {
    self.inner.line_bytes() as u32
  }

  /// For each line, the index of the first pattern that matches in its first `lineBytes`
  /// bytes, -1 when none does, -2 when the line was skipped because `budgetMs` milliseconds
  /// were spent on the lines before it.
  #[napi]
  pub fn match_lines(&self, lines: Vec<String>, budget_ms: f64) -> Vec<i32> {
    // NaN would make `from_secs_f64` panic: no budget, no line.
    let budget = Duration::from_secs_f64(if budget_ms.is_nan() { 0.0 } else { budget_ms.clamp(0.0, 60_000.0) } / 1000.0);
    self
      .inner
      .match_lines(&lines, budget)
      .into_iter()
      .map(|m| match m {
        core::patterns::LineMatch::Pattern(i) => i as i32,
        core::patterns::LineMatch::None => -1,
        core::patterns::LineMatch::Skipped => -2,
      })
      .collect()
  }
}

/// An exclusive cross-process lock on a file (`flock(2)`): released by `release()`, by
/// garbage collection, or by the kernel when this process dies.
#[napi]
pub struct FileLock {
  #[cfg(unix)]
  inner: Option<core::lockfile::FileLock>,
}

/// Takes the exclusive lock on `path` (created 0600) without blocking; `null` when another
/// process holds it. Throws `ENOENT`/`EACCES`-coded errors when the file cannot be opened.
#[napi]
pub fn try_lock_file(path: String) -> Result<Option<FileLock>> {
  #[cfg(unix)]
  {
    Ok(core::lockfile::try_lock(std::path::Path::new(&path)).map_err(map_error)?.map(|l| FileLock { inner: Some(l) }))
  }
  #[cfg(not(unix))]
  {
    let _ = path;
    Err(map_error(core::Error::Unsupported("file locks")))
  }
}

/// Takes the exclusive lock on `path` (created 0600) on a dedicated thread (never libuv's
/// pool), waiting at most `timeout_ms` milliseconds in a blocking `flock`; the callback gets
/// `(error, lock)` once, `lock` being `null` after the timeout. Errors as `tryLockFile`.
#[napi]
pub fn lock_file(path: String, timeout_ms: u32, callback: ThreadsafeFunction<Option<FileLock>, UnknownReturnValue>) -> Result<()> {
  #[cfg(not(unix))]
  {
    let _ = (path, timeout_ms, callback);
    return Err(map_error(core::Error::Unsupported("file locks")));
  }
  #[cfg(unix)]
  {
    std::thread::Builder::new()
      .name("procward-lock-wait".into())
      .spawn(move || {
        let got = core::lockfile::lock_timeout(std::path::Path::new(&path), Duration::from_millis(timeout_ms.into()));
        callback.call(got.map_err(map_error).map(|l| l.map(|l| FileLock { inner: Some(l) })), ThreadsafeFunctionCallMode::Blocking);
      })
      .map_err(|e| map_error(core::Error::Io { context: "starting the lock thread".into(), source: e }))?;
    Ok(())
  }
}

#[napi]
impl FileLock {
  /// Releases the lock (idempotent).
  #[napi]
  pub fn release(&mut self) {
    #[cfg(unix)]
    {
      self.inner = None;
    }
  }
}

/// Removes a job's cgroup if it is empty; returns whether it is gone. `cgroup` is as
/// recorded (the session id, or the directory an earlier version recorded), `sessionId` the
/// session it must be named for (default: `cgroup` itself). A cgroup procward did not
/// create (another place, another name, a link) is never removed: false. Best effort.
#[napi]
pub fn remove_cgroup(cgroup: String, session_id: Option<String>) -> bool {
  #[cfg(target_os = "linux")]
  return core::cgroup::remove(&cgroup, session_id.as_deref().unwrap_or(&cgroup));
  #[cfg(not(target_os = "linux"))]
  {
    let _ = (cgroup, session_id);
    true
  }
}

/// Removes every empty job cgroup (jobs that ended); running jobs' cgroups are never touched.
/// Returns how many were removed (0 where there is no containment).
#[napi]
pub fn sweep_cgroups() -> u32 {
  #[cfg(target_os = "linux")]
  return core::cgroup::sweep_empty() as u32;
  #[cfg(not(target_os = "linux"))]
  0
}
