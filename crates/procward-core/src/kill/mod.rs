//! Tree kill: stop a process, its process group and every descendant, and never signal a
//! process that merely reuses a PID.
//!
//! 1. Snapshot the tree (descendants and group members, with start times) **before** the
//!    first signal, so members that escaped the group (`setsid`, `set -m`, double fork) are
//!    still known. Below a live root the tree is walked through the kernel's children
//!    lists (reads in proportion to the tree, see `children`); otherwise, or when the walk
//!    gives up, from one read of the whole process table.
//! 2. Send the signal (default SIGTERM) to the group and to every member whose identity is
//!    `current` at that instant, each followed at once by SIGCONT, so that a stopped member
//!    (SIGSTOP, Ctrl-Z) runs its handler instead of waiting for SIGKILL (see `signal`).
//! 3. Wait until every member is gone (a zombie counts as gone) or the grace period ends,
//!    woken by each member's exit through a pidfd where there is one (see `exits`). If the
//!    root's group still exists then (`kill(-root, 0)`), it may hold members no walk found
//!    (one whose parent left the session and died): the table is read for them.
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
//! [`kill_tree`] runs the steps in order, and [`kill_trees`] runs them for many trees in
//! lockstep (one grace period, at most one process-table read per step); the parts live in
//! submodules: `run` (one kill's targets and report, and the identity check), `snapshot`
//! (the tree, the group, the cgroup, the walk before SIGKILL), `children` (the tree from
//! the children lists), `signal` (who gets a signal), `settle` (waiting for the targets to
//! die) and `exits` (waking at an exit). One signal with no escalation (SIGINT, SIGHUP, ...)
//! is `jobsignal`'s [`signal_job`].

#[cfg(target_os = "linux")]
mod children;
mod exits;
mod jobsignal;
mod run;
mod settle;
mod signal;
mod snapshot;
#[cfg(all(test, target_os = "linux"))]
mod tests;
#[cfg(all(test, target_os = "linux"))]
mod tests_membership;
#[cfg(all(test, target_os = "linux"))]
mod tests_stopped;

use crate::error::{Error, Result};
use crate::guard::{session_of, Host, Refusal};
use crate::identity::{Identity, Verdict};
pub use crate::killreport::{CgroupClaim, KillReport, KillRequest, Refused};
use crate::probe::ProcessInfo;
use crate::sys;
pub use jobsignal::{signal_foreground, signal_job, signal_job_proven};
use nix::sys::signal::Signal;
use run::{Run, Target};
use settle::{settle_longer, wait_all};
use snapshot::{add_cgroup_left, add_unfound, scan_marked, signal_marked};
use std::time::{Duration, Instant};

/// How to kill a tree.
#[derive(Debug, Clone)]
pub struct KillOptions {
  /// First signal. Default SIGTERM.
  pub signal: Signal,
  /// How long members get to exit after the first signal before SIGKILL. Default 2 s.
  /// Zero means SIGKILL right after the first signal (as `docker stop -t 0`): survivors of
  /// the first signal are SIGKILLed at once. Sending one signal with no escalation is
  /// [`signal_job`], not a kill with grace 0.
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
  /// The session's mark (`<session id>:<nonce>`, see [`crate::membership`]) its jobs carry
  /// in their environment: the processes of an ended job's group, and those outside its
  /// tree and group, are the job's when they carry it (one pass over `/proc` per batch), and
  /// with `require_proof` it proves the root. Each request of a batch names its own.
  /// Default none.
  pub mark: Option<String>,
  /// Signal a live root only when a proof says it is the job's (the mark or the cgroup),
  /// never on its recorded identity alone: a root without one is refused (`no_proof`), and
  /// neither it nor its group is signalled; the job's proven processes (its cgroup's
  /// members, those carrying its mark) are still killed, as behind a replaced root. The registry sets it for every session it knows from a record
  /// (recovered, or another host's); a caller that vouches for the process it names (the
  /// host that started it and holds it as its child) need not. Default off.
  pub require_proof: bool,
}

/// The signal of a name (`SIGTERM`, `TERM`, case-insensitive), as [`KillOptions::signal`]
/// takes it. Errors: `InvalidInput` for a name this platform has no signal for.
pub fn signal_named(name: &str) -> Result<Signal> {
  crate::status::signal_number(name)
    .and_then(|n| Signal::try_from(n).ok())
    .ok_or_else(|| Error::InvalidInput(format!("unknown signal {name:?}")))
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
      mark: None,
      require_proof: false,
    }
  }
}

/// Kills the tree rooted at `root` (see the module docs for the steps). Blocks for up to
/// `grace + settle` (plus the time the kernel takes to read the process table), and up to
/// `grace + settle_max` while survivors are still dying.
///
/// Nothing the guard refuses is signalled (see [`crate::guard`]): a root that is PID <= 1,
/// the host, in its group or session, one of its ancestors, or (with
/// `require_session_leader`) not a session leader, or (with `require_proof`) not proven the
/// job's is listed in `refused`, and neither it nor any group of its number is signalled.
/// The job's proven processes (the members of its cgroup, those carrying its mark) are still
/// killed, each after the guard's check of its own: a refused root is no process of the job
/// (say a stranger that took an ended job's PID within the job's own clock tick, and so
/// carries its recorded start time).
///
/// A root whose PID now names another process (`refused_reused`) or cannot be read (the
/// verdict `unknown`: listed as a survivor, never reported dead) is never signalled, nor is
/// any group of its id; the members of the job's own cgroup (`opts.cgroup`, when the guard
/// judges it procward's) are still killed as the tree's, so a daemon the job left is cleaned
/// up whatever became of its leader.
///
/// Errors: `Unsupported` where the platform has no identity source yet.
pub fn kill_tree(root: &Identity, opts: &KillOptions) -> Result<KillReport> {
  let request = KillRequest { root: root.clone(), cgroup: opts.cgroup.clone(), mark: opts.mark.clone() };
  kill_trees(std::slice::from_ref(&request), opts).pop().expect("one report per request")
}

/// Kills many trees at once, each as [`kill_tree`] would (the same steps, checks and
/// report; `opts.cgroup` is ignored, each request names its own), sharing one grace period
/// and one read of the process table per step: a bulk kill of N jobs costs about one tree
/// kill plus N identity checks per step, not N reads of the whole process table, and runs
/// on the caller's thread alone. Blocks as long as the slowest tree's kill (at most
/// `grace + settle_max` after the first signal). One result per request, in order; an
/// error (the boot id or the process table unreadable) is that request's.
pub fn kill_trees(requests: &[KillRequest], opts: &KillOptions) -> Vec<Result<KillReport>> {
  let boot_id = match sys::boot_id() {
    Ok(b) => b,
    Err(e) => return requests.iter().map(|_| Err(io_error("reading the boot id", &e))).collect(),
  };
  let host = Host::current();
  let mut runs: Vec<Run> = requests
    .iter()
    .map(|r| Run {
      root: &r.root,
      host: host.clone(),
      cgroup: None,
      group_is_jobs: true,
      members_need_proof: false,
      mark: r.mark.as_deref().filter(|m| crate::membership::valid_mark(m)),
      marked: Vec::new(),
      boot_id: boot_id.clone(),
      targets: Vec::new(),
      report: KillReport::default(),
    })
    .collect();
  let mut errors: Vec<Option<Error>> = requests.iter().map(|_| None).collect();
  // The runs that go on to the snapshot: each with its root's live process when the root is
  // current, `None` when only what is left of its group is to be cleaned up.
  let mut going: Vec<(usize, Option<ProcessInfo>)> = Vec::new();
  for (i, (run, request)) in runs.iter_mut().zip(requests).enumerate() {
    if let Some(root) = run.begin(request.cgroup.as_ref(), opts.require_session_leader, opts.require_proof) {
      going.push((i, root));
    }
  }

  // The processes carrying the marks of jobs whose root is gone: one pass over /proc for the
  // batch, before the snapshot (they may be all that is left of those jobs). For live roots
  // the scan comes after the first signal (see `signal_marked`).
  let (with_root, without): (Vec<_>, Vec<_>) = going.iter().partition(|(_, root)| root.is_some());
  let (walked, unwalked): (Vec<usize>, Vec<usize>) =
    (with_root.iter().map(|(i, _)| *i).collect(), without.iter().map(|(i, _)| *i).collect());
  scan_marked(&mut runs, &unwalked);
  // Snapshot before the first signal, and the signal right after it, tree by tree: a walk
  // below each live root; for the others (or where the walk gave up) one read of the process
  // table for every tree. Snapshotting every tree before signalling any would leave each
  // tree the others' snapshot time to start processes the snapshot misses (`setsid`
  // children of a forking loop), so a batch would let more escape than kills one by one.
  let mut from_table = Vec::new();
  for (i, root) in going {
    if root.as_ref().is_some_and(|r| runs[i].snapshot_walk(r)) {
      runs[i].signal_all(opts.signal);
    } else {
      from_table.push((i, root));
    }
  }
  if !from_table.is_empty() {
    match sys::process_table() {
      Ok(table) => {
        for (i, root) in from_table {
          runs[i].snapshot(&table, root.is_some());
          if !runs[i].targets.is_empty() {
            runs[i].signal_all(opts.signal);
          }
        }
      }
      Err(e) => {
        for (i, _) in from_table {
          errors[i] = Some(io_error("reading the process table", &e));
        }
      }
    }
  }
  let live_roots: Vec<usize> = walked.into_iter().filter(|&i| errors[i].is_none() && !runs[i].targets.is_empty()).collect();
  signal_marked(&mut runs, &live_roots, opts.signal);
  let live: Vec<usize> = (0..runs.len()).filter(|&i| errors[i].is_none() && !runs[i].targets.is_empty()).collect();
  // The grace period runs from the last tree's first signal, so every tree gets all of it.
  let first_signal = Instant::now();
  // Grace 0 escalates at once (DESIGN section 3: one grace rule on every surface).
  let escalate = opts.signal != Signal::SIGKILL;
  let wait_for = if escalate { opts.grace } else { opts.settle };
  let mut survivors = wait_all(&runs, &live, first_signal + wait_for, !escalate);
  // Members of a group that no walk found got the group signal: they survive it too.
  add_unfound(&mut runs, &live, &mut survivors);
  // What is left in a contained job's cgroup is ended with it (a first SIGKILL included).
  let cgroup_left = add_cgroup_left(&mut runs, &live, &mut survivors);
  let mut last_signal = first_signal;

  if (escalate || cgroup_left) && survivors.iter().any(|s| !s.is_empty()) {
    let escalating: Vec<usize> = live.iter().zip(&survivors).filter(|(_, s)| !s.is_empty()).map(|(&i, _)| i).collect();
    // Processes born since the snapshot: walked again below the survivors, or else found in
    // one read of the table shared by the runs that need it (left out if it cannot be read).
    let mut table: Option<Option<Vec<ProcessInfo>>> = None;
    for (&i, s) in live.iter().zip(&survivors) {
      if !s.is_empty() {
        if !runs[i].rewalk_children(s) {
          if let Some(table) = table.get_or_insert_with(|| sys::process_table().ok()) {
            runs[i].rewalk(table, s);
          }
        }
        runs[i].prepare_escalation();
      }
    }
    last_signal = Instant::now();
    for &i in &escalating {
      runs[i].signal_all(Signal::SIGKILL);
    }
    let mut after = wait_all(&runs, &escalating, last_signal + opts.settle, true);
    // A group that outlived every target SIGKILLed holds members found only now.
    if add_unfound(&mut runs, &escalating, &mut after) {
      last_signal = Instant::now();
      for (&i, left) in escalating.iter().zip(&after) {
        if !left.is_empty() {
          runs[i].signal_all(Signal::SIGKILL);
        }
      }
      after = wait_all(&runs, &escalating, last_signal + opts.settle, true);
    }
    for (i, s) in escalating.iter().zip(after) {
      survivors[live.iter().position(|x| x == i).expect("an escalating run is live")] = s;
    }
  }
  if survivors.iter().any(|s| !s.is_empty()) {
    survivors = settle_longer(&runs, &live, survivors, last_signal + opts.settle_max.max(opts.settle));
  }
  for (&i, left) in live.iter().zip(survivors) {
    runs[i].finish(left);
  }
  runs.into_iter().zip(errors).map(|(run, err)| err.map_or(Ok(run.report), Err)).collect()
}

/// The same I/O error again for each request of a batch (`io::Error` is not `Clone`).
fn io_error(context: &str, e: &std::io::Error) -> Error {
  Error::io(context, std::io::Error::new(e.kind(), e.to_string()))
}

impl Run<'_> {
  /// Judges the cgroup claim and the root, before anything is signalled. `None`: this kill
  /// is over (refused, gone, replaced or unknown: the report says which); `Some(root)`: go
  /// on to the snapshot, with the root's live process when it is still current.
  fn begin(&mut self, cgroup: Option<&CgroupClaim>, require_session_leader: bool, require_proof: bool) -> Option<Option<ProcessInfo>> {
    let root = self.root;
    let same_boot = self.boot_id == root.boot_id;
    // cgroups are Linux's: elsewhere a claim is ignored, as `KillOptions::cgroup` says.
    #[cfg(target_os = "linux")]
    if let Some(claim) = cgroup {
      match crate::cgroup::owned(&claim.recorded, &claim.session) {
        crate::cgroup::Owned::Ours(dir) => self.cgroup = Some(dir),
        crate::cgroup::Owned::Absent => {}
        crate::cgroup::Owned::NotOurs => {
          self.report.refused.push(Refused { pid: None, cgroup: Some(claim.recorded.clone()), reason: Refusal::CgroupNotOurs });
        }
      }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cgroup;
    if root.pid <= 1 {
      return self.refuse_root(Refusal::PidLe1);
    }
    let target = self.root_target();
    // Opened before the check: the process judged below is the one the pidfd names.
    let handle = self.handle(root.pid);
    if matches!(handle, run::Handle::Never) && self.report.refused.iter().any(|r| r.pid == Some(root.pid)) {
      return self.proofs_alone();
    }
    let (root_verdict, root_info) = self.check(target);
    match root_verdict {
      Verdict::Current => {
        let info = root_info.expect("a current verdict carries the process");
        let sid = session_of(root.pid);
        let refusal = match self.host.check_process(&info, sid) {
          Err(r) => Some(r),
          Ok(()) if require_session_leader => self.host.check_group(&info, sid).err(),
          Ok(()) => None,
        }
        // A record is no proof: the root must carry the session's mark or be in its cgroup.
        .or_else(|| (crate::membership::MARK_READABLE && require_proof && !self.proven(root.pid)).then_some(Refusal::NoProof));
        if let Some(reason) = refusal {
          return self.refuse_root(reason);
        }
        drop(handle);
        Some(Some(info))
      }
      // What is left of a gone leader's group is cleaned up below, unless that group is the
      // host's (or holds an ancestor): such a record cannot name a job. Nothing holds the
      // group's number for the job any more, so each member needs a proof of its own.
      Verdict::Gone if same_boot => {
        if let Err(reason) = self.host.check_group_id(root.pid) {
          return self.refuse_root(reason);
        }
        self.report.already_gone.push(root.pid);
        self.members_need_proof = true;
        (self.mark.is_some() || self.cgroup.is_some()).then_some(None)
      }
      Verdict::Gone => {
        self.report.already_gone.push(root.pid);
        None
      }
      // The leader's PID names another process now (never signalled), or cannot be read
      // (never signalled either): the job's own cgroup still holds what is left of the job
      // (a daemon that left the tree), and it is cleaned up all the same.
      Verdict::Replaced => {
        self.report.refused_reused.push(root.pid);
        self.proofs_alone()
      }
      Verdict::Unknown => {
        self.report.survivors.push(root.pid);
        self.report.survivor_identities.push(root.clone());
        self.proofs_alone()
      }
    }
  }

  /// Refuses the root (never signalled, nor any group of its number) and goes on with the
  /// job's proofs alone: a refused root is no process of the job (a stranger that took an
  /// ended job's PID, even in the job's own clock tick, so with its start time; or a record
  /// naming a process procward never signals), and what the job left is still known by its
  /// cgroup and its mark, each member checked by the guard on its own.
  fn refuse_root(&mut self, reason: Refusal) -> Option<Option<ProcessInfo>> {
    self.refuse(self.root.pid, reason);
    self.proofs_alone()
  }

  /// Goes on with the job's proofs as its only source of targets (see `begin`): the
  /// members of its cgroup, and the processes that carry its mark. The root's process group
  /// is left out, since a group of the root's id may be another process's now.
  fn proofs_alone(&mut self) -> Option<Option<ProcessInfo>> {
    if self.cgroup.is_none() && self.mark.is_none() {
      return None;
    }
    self.group_is_jobs = false;
    self.members_need_proof = true;
    Some(None)
  }

  /// Before SIGKILL (the tree walked again): the cgroup's own kill when the guard allows it.
  fn prepare_escalation(&mut self) {
    self.report.escalated = true;
    #[cfg(target_os = "linux")]
    if let Some(dir) = self.cgroup.clone() {
      if self.cgroup_kill_allowed(&dir) {
        crate::cgroup::kill_all(&dir);
      }
    }
  }

  /// The report's survivors: those still alive, less any PID the guard refused (never
  /// signalled, so no survivor of this kill).
  fn finish(&mut self, mut survivors: Vec<Target>) {
    let refused: Vec<i32> = self.report.refused.iter().filter_map(|r| r.pid).collect();
    survivors.retain(|t| !refused.contains(&t.pid));
    // A root whose verdict was unknown is a survivor already (see `begin`), and stays one.
    let mut identities = std::mem::take(&mut self.report.survivor_identities);
    let boot_id = &self.root.boot_id;
    for t in &survivors {
      if identities.iter().any(|i| i.pid == t.pid) {
        continue;
      }
      identities.push(Identity { pid: t.pid, start_time: t.start_time, boot_id: boot_id.clone() });
    }
    self.report.survivors = identities.iter().map(|i| i.pid).collect();
    self.report.survivor_identities = identities;
  }
}
