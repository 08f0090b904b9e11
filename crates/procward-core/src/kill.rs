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

use crate::error::{Error, Result};
use crate::guard::{session_of, Host, Refusal};
use crate::identity::{judge, Identity, Verdict};
use crate::probe::{probe_one, process_table, Probe, ProcessInfo};
use crate::sys;
use crate::tree::{descendants_in, group_members_in};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
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

#[derive(Debug, Clone, Copy)]
struct Target {
  pid: i32,
  start_time: u64,
  /// Process group at snapshot time: members of the root's group are reached by the
  /// group signal even if they die before their own turn comes.
  pgid: i32,
}

impl From<&ProcessInfo> for Target {
  fn from(p: &ProcessInfo) -> Self {
    Target { pid: p.pid, start_time: p.start_time, pgid: p.pgid }
  }
}

struct Run<'a> {
  root: &'a Identity,
  host: Host,
  cgroup: Option<std::path::PathBuf>,
  boot_id: String,
  targets: Vec<Target>,
  report: KillReport,
}

impl Run<'_> {
  /// One fresh read of the kernel: the verdict, and the live process when it is current.
  fn check(&self, t: Target) -> (Verdict, Option<ProcessInfo>) {
    let id = Identity { pid: t.pid, start_time: t.start_time, boot_id: self.root.boot_id.clone() };
    let probe = probe_one(t.pid);
    let v = judge(&id, &self.boot_id, &probe);
    match probe {
      Probe::Found(info) if v == Verdict::Current => (v, Some(info)),
      _ => (v, None),
    }
  }

  fn verdict(&self, t: Target) -> Verdict {
    self.check(t).0
  }

  fn add(&mut self, t: Target) {
    if !self.targets.iter().any(|x| x.pid == t.pid) {
      self.targets.push(t);
    }
  }

  fn note(list: &mut Vec<i32>, pid: i32) {
    if !list.contains(&pid) {
      list.push(pid);
    }
  }

  /// Lists a refusal; the PID leaves the targets, so nothing waits for it to die.
  fn refuse(&mut self, pid: i32, reason: Refusal) {
    self.targets.retain(|t| t.pid != pid);
    if !self.report.signalled.contains(&pid) && !self.report.refused.iter().any(|r| r.pid == Some(pid)) {
      self.report.refused.push(Refused { pid: Some(pid), cgroup: None, reason });
    }
  }

  /// Sends the group signal when the guard allows it at this instant: the leader is ours
  /// (identity `current`), leads its own session, and the group spares the host. A session
  /// leader stays one for life, so the check between two identity reads holds for the signal.
  fn signal_group(&mut self, root: Target, sig: Signal) -> bool {
    let (Verdict::Current, Some(info)) = self.check(root) else { return false };
    if self.host.check_group(&info, session_of(root.pid)).is_err() || self.verdict(root) != Verdict::Current {
      return false;
    }
    kill(Pid::from_raw(-root.pid), sig).is_ok()
  }

  /// Signals the whole group (if the guard allows it), then each target that is not a
  /// member of that group, each right after a fresh identity check and the guard's.
  fn signal_all(&mut self, sig: Signal) {
    let root = Target { pid: self.root.pid, start_time: self.root.start_time, pgid: self.root.pid };
    let group_sent = self.signal_group(root, sig);
    if group_sent {
      Self::note(&mut self.report.signalled, root.pid);
    }
    for t in self.targets.clone() {
      match self.check(t) {
        (Verdict::Current, Some(info)) => {
          if let Err(reason) = self.host.check_process(&info, session_of(t.pid)) {
            self.refuse(t.pid, reason);
            continue;
          }
          let in_group = group_sent && info.pgid == root.pid;
          if in_group || kill(Pid::from_raw(t.pid), sig).is_ok() {
            Self::note(&mut self.report.signalled, t.pid);
          }
        }
        (Verdict::Current, None) => {}
        (Verdict::Gone, _) if group_sent && t.pgid == root.pid => Self::note(&mut self.report.signalled, t.pid),
        (Verdict::Gone, _) => {
          if !self.report.signalled.contains(&t.pid) {
            Self::note(&mut self.report.already_gone, t.pid);
          }
        }
        (Verdict::Replaced, _) => Self::note(&mut self.report.refused_reused, t.pid),
        (Verdict::Unknown, _) => {}
      }
    }
  }

  fn is_alive(&self, t: Target) -> bool {
    matches!(self.verdict(t), Verdict::Current | Verdict::Unknown)
  }

  /// After the settle window: waits on while the survivors are still dying (see
  /// [`dying`]) or still disappearing, until `deadline`. Returns who is still alive.
  fn settle_longer(&self, mut left: Vec<Target>, deadline: Instant) -> Vec<Target> {
    // Survivors none of which is dying get this long to show progress before they count.
    const PROGRESS: Duration = Duration::from_millis(250);
    let mut last_progress = Instant::now();
    while !left.is_empty() && Instant::now() < deadline {
      if last_progress.elapsed() >= PROGRESS && !left.iter().any(|t| dying(t.pid)) {
        break;
      }
      std::thread::sleep(Duration::from_millis(10).min(deadline.saturating_duration_since(Instant::now())));
      let before = left.len();
      left.retain(|&t| self.is_alive(t));
      if left.len() < before {
        last_progress = Instant::now();
      }
    }
    left
  }

  /// Members of the root's own process group that started no earlier than the root, only
  /// when that group is the root's session (`sid == pgid == root`): a job's group lives in
  /// the session `setsid` made for it, and any other group is not the job's.
  fn own_group(&self, table: &[ProcessInfo]) -> Vec<Target> {
    group_members_in(table, self.root.pid, self.root.start_time)
      .iter()
      .filter(|p| !p.is_dead() && session_of(p.pid) == Some(self.root.pid))
      .map(Target::from)
      .collect()
  }

  /// Whether `cgroup.kill` may be written: every member must pass the guard (a member the
  /// guard refuses, say the host moved into it, would be SIGKILLed with the rest).
  fn cgroup_kill_allowed(&mut self, dir: &std::path::Path) -> bool {
    let mut allowed = true;
    for pid in crate::cgroup::members(dir) {
      let Ok(Some(info)) = sys::read_stat(pid) else { continue };
      if let Err(reason) = self.host.check_process(&info, session_of(pid)) {
        self.refuse(pid, reason);
        allowed = false;
      }
    }
    allowed
  }

  /// Polls until no target is alive or the deadline passes; returns the ones still alive.
  /// A target seen dead stays dead (a reused PID is not ours), so each pass only rechecks
  /// from the first target still alive and stops there.
  /// With `exact`, the returned list is re-checked; without, it may still hold members that
  /// died at the last moment (the caller re-checks each before signalling anyway).
  fn wait_until(&self, deadline: Instant, exact: bool) -> Vec<Target> {
    let mut pending: Vec<Target> = self.targets.clone();
    let mut step = Duration::from_micros(500);
    loop {
      while let Some(&t) = pending.last() {
        if self.is_alive(t) {
          break;
        }
        pending.pop();
      }
      if pending.is_empty() {
        return pending;
      }
      if Instant::now() >= deadline {
        return if exact { pending.into_iter().filter(|&t| self.is_alive(t)).collect() } else { pending };
      }
      std::thread::sleep(step.min(deadline.saturating_duration_since(Instant::now())));
      step = (step * 2).min(Duration::from_millis(2));
    }
  }

  /// Adds processes that appeared under the survivors (or in the group) since the snapshot.
  fn rewalk(&mut self, survivors: &[Target]) {
    let Ok(table) = process_table() else { return };
    let mut found = Vec::new();
    for s in survivors {
      found.extend(descendants_in(&table, s.pid, s.start_time).iter().map(Target::from));
    }
    found.extend(self.own_group(&table));
    found.extend(cgroup_members(self.cgroup.as_deref(), &table));
    for t in found {
      self.add(t);
    }
  }
}

/// Live members of the job's cgroup, as targets (a process in the job's cgroup is the job's).
fn cgroup_members(dir: Option<&std::path::Path>, table: &[ProcessInfo]) -> Vec<Target> {
  #[cfg(target_os = "linux")]
  if let Some(dir) = dir {
    let pids = crate::cgroup::members(dir);
    return table.iter().filter(|p| pids.contains(&p.pid) && !p.is_dead()).map(Target::from).collect();
  }
  let _ = (dir, table);
  Vec::new()
}

/// Whether `pid` is on its way out: SIGKILL pending (thread or shared), or the kernel's exit
/// path under way (`PF_EXITING`, 0x4, in field 9 of `/proc/<pid>/stat`). Such a process
/// never runs user code again; it only waits for a CPU to finish dying.
fn dying(pid: i32) -> bool {
  #[cfg(target_os = "linux")]
  {
    const PF_EXITING: u64 = 0x4;
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    let exiting = std::fs::read(format!("/proc/{pid}/stat")).ok().and_then(|b| {
      let close = b.iter().rposition(|&c| c == b')')?;
      // After ')': index 0 is field 3, so field 9 (flags) is index 6.
      std::str::from_utf8(&b[close + 1..]).ok()?.split_ascii_whitespace().nth(6)?.parse::<u64>().ok()
    });
    if exiting.is_some_and(|f| f & PF_EXITING != 0) {
      return true;
    }
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    status.lines().any(|l| {
      let pending = l.strip_prefix("SigPnd:").or_else(|| l.strip_prefix("ShdPnd:"));
      pending.and_then(|v| u64::from_str_radix(v.trim(), 16).ok()).is_some_and(|m| m & SIGKILL_BIT != 0)
    })
  }
  #[cfg(not(target_os = "linux"))]
  {
    let _ = pid;
    false
  }
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
  use super::*;
  use crate::identity::{identity, verdict};
  use std::os::unix::process::CommandExt;
  use std::process::{Child, Command};

  fn spawn_session(script: &str) -> (Child, Identity) {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]);
    unsafe {
      cmd.pre_exec(|| {
        libc::setsid();
        Ok(())
      });
    }
    let child = cmd.spawn().unwrap();
    let id = crate::identity::identity_of_child(child.id() as i32).unwrap();
    (child, id)
  }

  fn wait_for_descendants(pid: i32, n: usize) -> Vec<ProcessInfo> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
      let d: Vec<_> = crate::tree::descendants(pid).unwrap().into_iter().filter(|p| !p.is_dead()).collect();
      if d.len() >= n || Instant::now() > deadline {
        return d;
      }
      std::thread::sleep(Duration::from_millis(10));
    }
  }

  #[test]
  fn kills_a_tree_including_an_escaped_setsid_member() {
    let (mut child, id) = spawn_session("setsid sleep 45 & sleep 30 & wait");
    let before = wait_for_descendants(id.pid, 2);
    assert_eq!(before.len(), 2);
    let ids: Vec<_> = before.iter().map(|p| identity(p.pid).unwrap().unwrap()).collect();
    let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(500), ..Default::default() }).unwrap();
    child.wait().unwrap();
    assert!(report.survivors.is_empty(), "{report:?}");
    for i in &ids {
      assert_eq!(verdict(i), Verdict::Gone, "{i:?} survived");
    }
  }

  #[test]
  fn escalates_to_sigkill_when_sigterm_is_ignored() {
    let (mut child, id) = spawn_session("trap '' TERM; while :; do sleep 1; done");
    std::thread::sleep(Duration::from_millis(100));
    let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(200), ..Default::default() }).unwrap();
    assert!(report.escalated);
    assert!(report.survivors.is_empty());
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
  }

  #[test]
  fn refuses_a_reused_pid_and_signals_nothing() {
    let (mut child, id) = spawn_session("sleep 30");
    let wrong = Identity { start_time: id.start_time + 1, ..id.clone() };
    let report = kill_tree(&wrong, &KillOptions::default()).unwrap();
    assert_eq!(report.refused_reused, vec![id.pid]);
    assert!(report.signalled.is_empty());
    assert_eq!(verdict(&id), Verdict::Current);
    unsafe { libc::kill(-id.pid, libc::SIGKILL) };
    child.wait().unwrap();
  }

  #[test]
  fn a_gone_root_is_reported_already_gone() {
    let (mut child, id) = spawn_session("exit 0");
    child.wait().unwrap();
    let report = kill_tree(&id, &KillOptions::default()).unwrap();
    assert_eq!(report.already_gone, vec![id.pid]);
    assert!(report.signalled.is_empty());
  }

  #[test]
  fn a_gone_leader_leaves_its_group_members_to_be_cleaned_up() {
    let (mut child, id) = spawn_session("sleep 30 & echo $! ; exit 0");
    child.wait().unwrap();
    let leftovers = crate::tree::group_members_in(&process_table().unwrap(), id.pid, id.start_time);
    assert_eq!(leftovers.iter().filter(|p| !p.is_dead()).count(), 1);
    let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(300), ..Default::default() }).unwrap();
    assert_eq!(report.already_gone, vec![id.pid]);
    assert_eq!(report.signalled, vec![leftovers[0].pid]);
    assert!(report.survivors.is_empty());
  }

  #[test]
  fn the_host_itself_is_refused_and_never_signalled() {
    let me = identity(std::process::id() as i32).unwrap().unwrap();
    // SIGCONT with no escalation: harmless should the guard fail, and still reported.
    let report = kill_tree(&me, &KillOptions { signal: Signal::SIGCONT, grace: Duration::ZERO, ..Default::default() }).unwrap();
    assert!(report.signalled.is_empty(), "{report:?}");
    assert_eq!(report.refused, vec![Refused { pid: Some(me.pid), cgroup: None, reason: Refusal::Host }]);
  }

  #[test]
  fn a_child_in_the_hosts_process_group_is_refused() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let id = crate::identity::identity_of_child(child.id() as i32).unwrap();
    let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(100), ..Default::default() }).unwrap();
    assert_eq!(report.refused.iter().map(|r| (r.pid, r.reason)).collect::<Vec<_>>(), vec![(Some(id.pid), Refusal::HostGroup)]);
    assert!(report.signalled.is_empty() && report.survivors.is_empty(), "{report:?}");
    assert_eq!(verdict(&id), Verdict::Current);
    child.kill().unwrap();
    child.wait().unwrap();
  }

  #[test]
  fn a_root_that_does_not_lead_its_session_is_refused_when_a_job_is_required() {
    // A member of the leader's session: a live process with its true start time, not a job.
    let (mut child, leader) = spawn_session("(sleep 30; true) & sleep 30");
    // The subshell: the leader's child that has a child of its own (whether or not the shell
    // exec'd its last command).
    let deadline = Instant::now() + Duration::from_secs(5);
    let sub = loop {
      let tree = wait_for_descendants(leader.pid, 2);
      if let Some(p) = tree.iter().find(|p| p.ppid == leader.pid && tree.iter().any(|c| c.ppid == p.pid)) {
        break *p;
      }
      assert!(Instant::now() < deadline, "no subshell in {tree:?}");
      std::thread::sleep(Duration::from_millis(10));
    };
    let id = identity(sub.pid).unwrap().unwrap();
    let opts = KillOptions { grace: Duration::from_millis(100), require_session_leader: true, ..Default::default() };
    let report = kill_tree(&id, &opts).unwrap();
    assert_eq!(report.refused.iter().map(|r| (r.pid, r.reason)).collect::<Vec<_>>(), vec![(Some(id.pid), Refusal::NotSessionLeader)]);
    assert!(report.signalled.is_empty(), "{report:?}");
    assert_eq!(verdict(&id), Verdict::Current);
    // Without the requirement it is signalled on its own, and the session's leader is spared.
    let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(300), ..Default::default() }).unwrap();
    assert!(report.signalled.contains(&id.pid) && report.refused.is_empty(), "{report:?}");
    assert_eq!(verdict(&leader), Verdict::Current);
    unsafe { libc::kill(-leader.pid, libc::SIGKILL) };
    child.wait().unwrap();
  }

  #[test]
  fn a_foreign_cgroup_is_refused_and_its_kill_file_stays_unwritten() {
    let (mut child, id) = spawn_session("sleep 30");
    let dir = std::env::temp_dir().join(format!("procward-foreign-cg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let me = std::process::id().to_string();
    std::fs::write(dir.join("cgroup.procs"), format!("{me}\n")).unwrap();
    std::fs::write(dir.join("cgroup.kill"), "").unwrap();
    let recorded = dir.to_str().unwrap().to_string();
    let claim = CgroupClaim { recorded: recorded.clone(), session: "proc_0123456789ab".into() };
    let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(100), cgroup: Some(claim), ..Default::default() }).unwrap();
    assert!(report.refused.contains(&Refused { pid: None, cgroup: Some(recorded), reason: Refusal::CgroupNotOurs }), "{report:?}");
    assert_eq!(std::fs::read_to_string(dir.join("cgroup.kill")).unwrap(), "");
    assert!(report.signalled.contains(&id.pid) && report.survivors.is_empty(), "{report:?}");
    child.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
  }

  #[test]
  fn a_survivor_that_is_not_dying_is_reported_without_the_long_wait() {
    let (mut child, id) = spawn_session("sleep 30");
    assert!(!dying(id.pid));
    let target = Target { pid: id.pid, start_time: id.start_time, pgid: id.pid };
    let run = Run {
      root: &id,
      host: Host::current(),
      cgroup: None,
      boot_id: id.boot_id.clone(),
      targets: vec![target],
      report: KillReport::default(),
    };
    let started = Instant::now();
    let left = run.settle_longer(vec![target], Instant::now() + Duration::from_secs(5));
    assert_eq!(left.len(), 1);
    assert!(started.elapsed() < Duration::from_secs(4), "waited {:?}", started.elapsed());
    unsafe { libc::kill(-id.pid, libc::SIGKILL) };
    child.wait().unwrap();
  }

  #[test]
  fn sigstopped_member_is_killed_by_escalation_not_reported_dead_early() {
    let (mut child, id) = spawn_session("kill -STOP $$");
    std::thread::sleep(Duration::from_millis(100));
    let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(100), ..Default::default() }).unwrap();
    assert!(report.escalated);
    assert!(report.survivors.is_empty());
    child.wait().unwrap();
  }
}
