//! Tree kill: its options, its report and the call that runs it off the JS thread.

use crate::identity::Identity;
use crate::map_error;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue};
use napi_derive::napi;
use procward_core as core;
use std::time::Duration;

/// Options of a tree kill. Milliseconds.
#[napi(object)]
pub struct KillOptions {
  /// Grace period between the first signal and SIGKILL. Default 2000; 0 = SIGKILL right
  /// after the first signal.
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
  /// as every procward job does (Windows: unless it is in the Job Object procward created
  /// for it). Default false: the root and its descendants are signalled one by one, without
  /// the group signal.
  pub require_session_leader: Option<bool>,
  /// The session's mark (`<session id>:<nonce>`) its jobs carry in their environment as
  /// `PROCWARD_SESSION_ID`: the root is signalled only when it carries it (or is in the
  /// job's cgroup), and an ended job's processes are found by it (see the core's
  /// `membership`). A malformed mark counts as none. Linux; ignored elsewhere.
  pub mark: Option<String>,
  /// Refuse a live root (`no_proof`) that neither carries `mark` nor is in the job's
  /// cgroup: a record alone proves nothing. Default false (the caller vouches for the root).
  pub require_proof: Option<bool>,
  /// Windows: the path of `procward-supervise.exe`, which sends the graceful step
  /// (Ctrl-Break for `SIGTERM`, Ctrl-C for `SIGINT`) to the job's console. Without it the
  /// tree is terminated with no graceful step. Ignored elsewhere.
  pub console_helper: Option<String>,
}

/// Something a kill refused to signal, and why.
#[napi(object)]
pub struct KillRefusal {
  /// The PID refused (or whose group was refused); absent for a cgroup.
  pub pid: Option<i32>,
  /// The cgroup refused, as it was recorded; absent for a PID.
  pub cgroup: Option<String>,
  /// `pid_le_1`, `host`, `host_group`, `host_session`, `host_ancestor`,
  /// `not_session_leader` or `cgroup_not_ours`; on Windows also `system_idle` (PID 0),
  /// `system` (PID 4) and `host_console` (a process on the host's console).
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
    opts.cgroup = o.cgroup.map(|c| core::kill::CgroupClaim::new(c, o.session_id));
    opts.require_session_leader = o.require_session_leader.unwrap_or(false);
    opts.require_proof = o.require_proof.unwrap_or(false);
    opts.mark = o.mark;
    #[cfg(windows)]
    {
      opts.console_helper = o.console_helper.map(std::path::PathBuf::from);
    }
    if let Some(name) = o.signal {
      opts.signal = core::kill::signal_named(&name).map_err(map_error)?;
    }
  }
  Ok(opts)
}

/// One tree of a batch kill ([`kill_trees`]): its root and the cgroup its record names.
#[napi(object)]
pub struct KillTreeRequest {
  pub identity: Identity,
  /// As `KillOptions.cgroup`, for this tree.
  pub cgroup: Option<String>,
  /// As `KillOptions.sessionId`, for this tree.
  pub session_id: Option<String>,
  /// As `KillOptions.mark`, for this tree.
  pub mark: Option<String>,
}

/// One tree's outcome in a batch kill: its report, or the error that stopped it
/// (`"CODE: message"`, as a thrown error's message).
#[napi(object)]
pub struct KillTreeOutcome {
  pub report: Option<KillReport>,
  pub error: Option<String>,
}

impl From<core::kill::Refused> for KillRefusal {
  fn from(r: core::kill::Refused) -> Self {
    KillRefusal { pid: r.pid, cgroup: r.cgroup, reason: r.reason.as_str().into() }
  }
}

impl From<core::kill::KillReport> for KillReport {
  fn from(r: core::kill::KillReport) -> Self {
    KillReport {
      signalled: r.signalled,
      already_gone: r.already_gone,
      refused_reused: r.refused_reused,
      survivors: r.survivors,
      survivor_identities: r.survivor_identities.into_iter().map(Identity::from).collect(),
      escalated: r.escalated,
      refused: r.refused.into_iter().map(KillRefusal::from).collect(),
    }
  }
}

/// Runs `work` on a new thread named `procward-kill`, never libuv's pool.
fn on_kill_thread(work: impl FnOnce() + Send + 'static) -> Result<()> {
  std::thread::Builder::new()
    .name("procward-kill".into())
    .spawn(work)
    .map(|_| ())
    .map_err(|e| map_error(core::Error::Io { context: "starting the kill thread".into(), source: e }))
}

/// Tree kill (snapshot, SIGTERM, grace period, SIGKILL) on a dedicated thread, never libuv's pool; the callback
/// gets `(error, report)` once. Holds the event loop open until it has reported.
#[napi]
pub fn kill_tree(
  identity: Identity,
  options: Option<KillOptions>,
  callback: ThreadsafeFunction<KillReport, UnknownReturnValue>,
) -> Result<()> {
  let root: core::Identity = identity.try_into()?;
  let opts = kill_options(options)?;
  on_kill_thread(move || {
    let result = core::kill::kill_tree(&root, &opts).map(KillReport::from).map_err(map_error);
    callback.call(result, ThreadsafeFunctionCallMode::Blocking);
  })
}

/// Many tree kills on one dedicated thread, sharing one grace period and each step's read
/// of the process table (see `procward_core::kill::kill_trees`); `options.cgroup` and
/// `options.sessionId` are ignored (each request names its own). The callback gets
/// `(error, outcomes)` once, one outcome per request in order. Errors (thrown, before any
/// signal): `EINVAL` for a bad identity or option.
#[napi]
pub fn kill_trees(
  requests: Vec<KillTreeRequest>,
  options: Option<KillOptions>,
  callback: ThreadsafeFunction<Vec<KillTreeOutcome>, UnknownReturnValue>,
) -> Result<()> {
  let opts = kill_options(options)?;
  let requests = requests
    .into_iter()
    .map(|r| {
      let cgroup = r.cgroup.map(|c| core::kill::CgroupClaim::new(c, r.session_id));
      Ok(core::kill::KillRequest { root: r.identity.try_into()?, cgroup, mark: r.mark })
    })
    .collect::<Result<Vec<_>>>()?;
  on_kill_thread(move || {
    let outcomes = core::kill::kill_trees(&requests, &opts)
      .into_iter()
      .map(|r| match r {
        Ok(report) => KillTreeOutcome { report: Some(report.into()), error: None },
        // The message a thrown error of the same kind carries.
        Err(e) => KillTreeOutcome { report: None, error: Some(map_error(e).reason) },
      })
      .collect();
    callback.call(Ok(outcomes), ThreadsafeFunctionCallMode::Blocking);
  })
}

/// Options of [`signal_job`] and [`signal_job_async`].
#[napi(object)]
#[derive(Default)]
pub struct SignalJobOptions {
  /// Windows: the path of `procward-supervise.exe`, which sends `SIGBREAK`'s Ctrl-Break to
  /// the job's console. Without it `SIGBREAK` is `ENOTSUP`. Ignored elsewhere.
  pub console_helper: Option<String>,
  /// As `KillOptions.mark`. Unix; ignored on Windows (the Job Object proves a job there).
  pub mark: Option<String>,
  /// As `KillOptions.requireProof`.
  pub require_proof: Option<bool>,
  /// As `KillOptions.cgroup`: the job's cgroup proves its root too.
  pub cgroup: Option<String>,
  /// As `KillOptions.sessionId`.
  pub session_id: Option<String>,
  /// A PTY job's terminal foreground process group (see `NativeJob.foregroundGroup`): the
  /// signal goes to that group of the root's session, through one of its members, instead
  /// of the root's own group (the core's `signal_foreground`). Unix; ignored on Windows.
  pub foreground_group: Option<i32>,
}

/// One signal by name to the job led by `root` (the core's `signal_job` of this platform).
fn send_signal(root: &core::Identity, signal: &str, o: &SignalJobOptions) -> core::Result<core::kill::KillReport> {
  #[cfg(windows)]
  return core::kill::signal_job(root, core::kill::job_signal_named(signal)?, o.console_helper.as_deref().map(std::path::Path::new));
  #[cfg(not(windows))]
  {
    let cgroup = o.cgroup.clone().map(|c| core::kill::CgroupClaim::new(c, o.session_id.clone()));
    let sig = core::kill::signal_named(signal)?;
    let proof = o.require_proof.unwrap_or(false);
    match o.foreground_group {
      Some(pgid) => core::kill::signal_foreground(root, pgid, sig, o.mark.as_deref(), cgroup.as_ref(), proof),
      None => core::kill::signal_job_proven(root, sig, o.mark.as_deref(), cgroup.as_ref(), proof),
    }
  }
}

/// One signal (by name, as `KillOptions.signal` takes it) to the process group of the job
/// led by `identity`, with no escalation and no wait: checked as a kill is (identity
/// `current` right before it, the guard), reported in a kill report's shape (`signalled`
/// holds the leader's PID when its group got the signal). Windows: `SIGTERM`, `SIGKILL`,
/// `SIGINT`, `SIGQUIT` and `SIGHUP` terminate the job's root alone (exit code 1, as
/// libuv's `uv_kill`); `SIGBREAK` needs the console helper, so only
/// [`signal_job_async`] sends it. Errors: `EINVAL` for a bad identity or signal name;
/// `ENOTSUP` on Windows for any other name, and for `SIGBREAK` here.
#[napi]
pub fn signal_job(identity: Identity, signal: String, options: Option<SignalJobOptions>) -> Result<KillReport> {
  let root: core::Identity = identity.try_into()?;
  // SIGBREAK's helper is for the async form only.
  let o = SignalJobOptions { console_helper: None, ..options.unwrap_or_default() };
  send_signal(&root, &signal, &o).map(KillReport::from).map_err(map_error)
}

/// [`signal_job`] on a dedicated thread (never libuv's pool), with `options.consoleHelper`
/// for Windows' `SIGBREAK` (Ctrl-Break to the job's process group, sent by a helper process
/// the thread waits for, up to 10 s). The callback gets `(error, report)` once: the errors
/// of [`signal_job`], and `EIO` when Ctrl-Break could not be sent (always under Wine 8).
/// Errors (thrown): `EINVAL` for a bad identity.
#[napi]
pub fn signal_job_async(
  identity: Identity,
  signal: String,
  options: Option<SignalJobOptions>,
  callback: ThreadsafeFunction<KillReport, UnknownReturnValue>,
) -> Result<()> {
  let root: core::Identity = identity.try_into()?;
  let o = options.unwrap_or_default();
  on_kill_thread(move || {
    let result = send_signal(&root, &signal, &o).map(KillReport::from).map_err(map_error);
    callback.call(result, ThreadsafeFunctionCallMode::Blocking);
  })
}
