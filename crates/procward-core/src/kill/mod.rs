//! Tree kill: stop a process, its process group and every descendant, and never signal a
//! process that merely reuses a PID.
//!
//! 1. Snapshot the tree (descendants and group members, with start times) **before** the
//!    first signal, so members that escaped the group (`setsid`, `set -m`, double fork) are
//!    still known.
//! 2. Send the signal (default SIGTERM) to the group and to every member whose identity is
//!    `current` at that instant.
//! 3. Poll until every member is gone (a zombie counts as gone) or the grace period ends.
//! 4. Walk the tree again from the survivors, and SIGKILL every survivor and new descendant
//!    after a fresh identity check.
//! 5. Wait a short settle window and report who survived. A kill never reports success for
//!    a process it did not see die. On a loaded machine the kernel may take seconds to tear
//!    down hundreds of SIGKILLed processes, so the window stretches (up to `settle_max`,
//!    default 5 s) while the survivors are still dying: a SIGKILL pending or the exit under
//!    way (such a process never runs user code again), or survivors still disappearing.
//!
//! Every signal passes the [`guard`](crate::guard) first, whatever the caller's record says:
//! never PID <= 1, the host, its group, session or ancestors; a group only when its leader
//! leads its own session; a cgroup only when procward created it for the session. Each
//! refusal is listed in [`KillReport::refused`].
//!
//! [`kill_tree`] runs the steps in order; the parts live in submodules: `run` (one kill's
//! targets and report, and the identity check), `snapshot` (the tree, the group, the
//! cgroup, the walk before SIGKILL), `signal` (who gets a signal) and `settle` (waiting
//! for the targets to die).

mod run;
mod settle;
mod signal;
mod snapshot;
#[cfg(all(test, target_os = "linux"))]
mod tests;

use crate::error::{Error, Result};
use crate::guard::{session_of, Host, Refusal};
use crate::identity::{Identity, Verdict};
use crate::probe::process_table;
use crate::sys;
use crate::tree::descendants_in;
use nix::sys::signal::Signal;
use run::{Run, Target};
use snapshot::cgroup_members;
use std::time::{Duration, Instant};

/// How to kill a tree.
#[derive(Debug, Clone)]
pub struct KillOptions {
  /// First signal. Default SIGTERM.
  pub signal: Signal,
  /// How long members get to exit after the first signal before SIGKILL. Default 2 s.
  /// Zero means no escalation: the first signal only, then the settle window.
  pub grace: Duration,
  /// How long to wait for members to disappear after the last signal. Default 500 ms.
  pub settle: Duration,
  /// Longest the settle window stretches while survivors are still dying (SIGKILL pending,
  /// exit under way, or survivors still disappearing). Default 5 s; never below `settle`.
  pub settle_max: Duration,
  /// The job's cgroup v2, as its record names it: its members are part of the tree, and
  /// escalation uses `cgroup.kill`. Used only when procward created it (see
  /// [`crate::cgroup::owned`]); otherwise refused (`cgroup_not_ours`) and never touched.
  /// Linux only: ignored elsewhere.
  pub cgroup: Option<CgroupClaim>,
  /// Refuse the whole kill (`not_session_leader`) unless the root leads its own session, as
  /// every job procward starts does. Off: such a root and its descendants get signals of
  /// their own, and only the group signal is left out. Default off.
  pub require_session_leader: bool,
}

/// A cgroup as a record names it, and the session it must be named for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupClaim {
  /// The recorded value: the session id, or the directory an earlier version stored.
  pub recorded: String,
  /// The session id (`proc_` + 12 hex digits) the cgroup must be named for.
  pub session: String,
}

impl Default for KillOptions {
  fn default() -> Self {
    KillOptions {
      signal: Signal::SIGTERM,
      grace: Duration::from_secs(2),
      settle: Duration::from_millis(500),
      settle_max: Duration::from_secs(5),
      cgroup: None,
      require_session_leader: false,
    }
  }
}

/// Something a kill refused to signal: a PID (or the group it leads), or a cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
  /// The PID refused, or whose group was refused; `None` for a cgroup.
  pub pid: Option<i32>,
  /// The cgroup refused, as recorded; `None` for a PID.
  pub cgroup: Option<String>,
  pub reason: Refusal,
}

/// What a tree kill did. Each list holds PIDs; a PID appears in `signalled` if it received
/// at least one signal, and in `survivors` if its identity was still `current` at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KillReport {
  /// Processes that were sent a signal (the group leader included when the group was).
  pub signalled: Vec<i32>,
  /// Processes that were already gone (or zombies) when their turn to be signalled came.
  pub already_gone: Vec<i32>,
  /// PIDs that were alive but belonged to another process: never signalled.
  pub refused_reused: Vec<i32>,
  /// Processes still alive at the end. Non-empty means the kill failed.
  pub survivors: Vec<i32>,
  /// The survivors' identities, so a caller can keep finishing the kill safely.
  pub survivor_identities: Vec<Identity>,
  /// Whether SIGKILL was sent.
  pub escalated: bool,
  /// What the guard refused to signal, with why. A refused PID is never in `signalled`,
  /// `already_gone` or `survivors`; a refused root means the kill did nothing.
  pub refused: Vec<Refused>,
}

/// Kills the tree rooted at `root` (see the module docs for the steps). Blocks for up to
/// `grace + settle` (plus the time the kernel takes to read the process table), and up to
/// `grace + settle_max` while survivors are still dying.
///
/// Nothing the guard refuses is signalled (see [`crate::guard`]): a root that is PID <= 1,
/// the host, in its group or session, one of its ancestors, or (with
/// `require_session_leader`) not a session leader is listed in `refused` and the kill does
/// nothing else.
///
/// Errors: `Unsupported` where the platform has no identity source yet; the verdict
/// `unknown` for the root gives `InvalidInput`-free success with nothing signalled and the
/// root listed as a survivor (unknown is never signalled, and never reported dead).
pub fn kill_tree(root: &Identity, opts: &KillOptions) -> Result<KillReport> {
  let boot_id = sys::boot_id().map_err(|e| Error::io("reading the boot id", e))?;
  let same_boot = boot_id == root.boot_id;
  let mut run = Run { root, host: Host::current(), cgroup: None, boot_id, targets: Vec::new(), report: KillReport::default() };
  // cgroups are Linux's: elsewhere a claim is ignored, as `KillOptions::cgroup` says.
  #[cfg(target_os = "linux")]
  if let Some(claim) = &opts.cgroup {
    match crate::cgroup::owned(&claim.recorded, &claim.session) {
      crate::cgroup::Owned::Ours(dir) => run.cgroup = Some(dir),
      crate::cgroup::Owned::Absent => {}
      crate::cgroup::Owned::NotOurs => {
        run.report.refused.push(Refused { pid: None, cgroup: Some(claim.recorded.clone()), reason: Refusal::CgroupNotOurs });
      }
    }
  }
  if root.pid <= 1 {
    run.refuse(root.pid, Refusal::PidLe1);
    return Ok(run.report);
  }
  let root_target = Target { pid: root.pid, start_time: root.start_time, pgid: root.pid };
  let (root_verdict, root_info) = run.check(root_target);
  match root_verdict {
    Verdict::Current => {
      let info = root_info.expect("a current verdict carries the process");
      let sid = session_of(root.pid);
      let refusal = match run.host.check_process(&info, sid) {
        Err(r) => Some(r),
        Ok(()) if opts.require_session_leader => run.host.check_group(&info, sid).err(),
        Ok(()) => None,
      };
      if let Some(reason) = refusal {
        run.refuse(root.pid, reason);
        return Ok(run.report);
      }
    }
    // What is left of a gone leader's group is cleaned up below, unless that group is the
    // host's (or holds an ancestor): such a record cannot name a job.
    Verdict::Gone if same_boot => {
      if let Err(reason) = run.host.check_group_id(root.pid) {
        run.refuse(root.pid, reason);
        return Ok(run.report);
      }
      run.report.already_gone.push(root.pid)
    }
    Verdict::Gone => {
      run.report.already_gone.push(root.pid);
      return Ok(run.report);
    }
    Verdict::Replaced => {
      run.report.refused_reused.push(root.pid);
      return Ok(run.report);
    }
    Verdict::Unknown => {
      run.report.survivors.push(root.pid);
      run.report.survivor_identities.push(root.clone());
      return Ok(run.report);
    }
  }

  // Snapshot before the first signal. When the leader is already gone (a zombie, or
  // reaped), what is left of its process group is still provably its own: a PID cannot be
  // reused while a process group of that id exists, so a member of group `root.pid` (in
  // session `root.pid`) that started after the leader belongs to the group the leader created.
  let table = process_table()?;
  if root_verdict == Verdict::Current {
    run.targets.push(root_target);
    for p in descendants_in(&table, root.pid, root.start_time) {
      if !p.is_dead() {
        run.add(Target::from(&p));
      }
    }
  }
  for t in run.own_group(&table) {
    run.add(t);
  }
  for t in cgroup_members(run.cgroup.as_deref(), &table) {
    run.add(t);
  }
  if run.targets.is_empty() {
    return Ok(run.report);
  }

  // The grace period runs from the first signal.
  let first_signal = Instant::now();
  run.signal_all(opts.signal);
  let escalate = opts.signal != Signal::SIGKILL && !opts.grace.is_zero();
  let wait_for = if escalate { opts.grace } else { opts.settle };
  let mut survivors = run.wait_until(first_signal + wait_for, !escalate);
  let mut last_signal = first_signal;

  if escalate && !survivors.is_empty() {
    run.rewalk(&survivors);
    run.report.escalated = true;
    #[cfg(target_os = "linux")]
    if let Some(dir) = run.cgroup.clone() {
      if run.cgroup_kill_allowed(&dir) {
        crate::cgroup::kill_all(&dir);
      }
    }
    last_signal = Instant::now();
    run.signal_all(Signal::SIGKILL);
    survivors = run.wait_until(last_signal + opts.settle, true);
  }
  if !survivors.is_empty() {
    survivors = run.settle_longer(survivors, last_signal + opts.settle_max.max(opts.settle));
  }
  // A PID the guard refused was never signalled: it is not a survivor of this kill.
  let refused: Vec<i32> = run.report.refused.iter().filter_map(|r| r.pid).collect();
  survivors.retain(|t| !refused.contains(&t.pid));
  run.report.survivors = survivors.iter().map(|t| t.pid).collect();
  run.report.survivor_identities =
    survivors.iter().map(|t| Identity { pid: t.pid, start_time: t.start_time, boot_id: root.boot_id.clone() }).collect();
  Ok(run.report)
}
