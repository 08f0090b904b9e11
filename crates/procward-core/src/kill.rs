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
//!    a process it did not see die.

use crate::error::{Error, Result};
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
  /// The job's cgroup v2 directory, when it has one: its members are part of the tree, and
  /// escalation uses `cgroup.kill`.
  pub cgroup: Option<std::path::PathBuf>,
}

impl Default for KillOptions {
  fn default() -> Self {
    KillOptions { signal: Signal::SIGTERM, grace: Duration::from_secs(2), settle: Duration::from_millis(500), cgroup: None }
  }
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
  cgroup: Option<&'a std::path::Path>,
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

  /// Signals the whole group (if its leader is still ours), then each target that is not a
  /// member of that group, each right after a fresh identity check.
  fn signal_all(&mut self, sig: Signal) {
    let root = Target { pid: self.root.pid, start_time: self.root.start_time, pgid: self.root.pid };
    let group_sent = self.verdict(root) == Verdict::Current && kill(Pid::from_raw(-root.pid), sig).is_ok();
    if group_sent {
      Self::note(&mut self.report.signalled, root.pid);
    }
    for t in self.targets.clone() {
      match self.check(t) {
        (Verdict::Current, info) => {
          let in_group = group_sent && info.is_some_and(|p| p.pgid == root.pid);
          if in_group || kill(Pid::from_raw(t.pid), sig).is_ok() {
            Self::note(&mut self.report.signalled, t.pid);
          }
        }
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
    found.extend(group_members_in(&table, self.root.pid, self.root.start_time).iter().map(Target::from));
    found.extend(cgroup_members(self.cgroup, &table));
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

/// Kills the tree rooted at `root` (see the module docs for the steps). Blocks for up to
/// `grace + settle` (plus the time the kernel takes to read the process table).
///
/// Errors: `Unsupported` where the platform has no identity source yet; the verdict
/// `unknown` for the root gives `InvalidInput`-free success with nothing signalled and the
/// root listed as a survivor (unknown is never signalled, and never reported dead).
pub fn kill_tree(root: &Identity, opts: &KillOptions) -> Result<KillReport> {
  let boot_id = sys::boot_id().map_err(|e| Error::io("reading the boot id", e))?;
  let same_boot = boot_id == root.boot_id;
  let mut run = Run { root, cgroup: opts.cgroup.as_deref(), boot_id, targets: Vec::new(), report: KillReport::default() };
  let root_target = Target { pid: root.pid, start_time: root.start_time, pgid: root.pid };
  let root_verdict = run.verdict(root_target);
  match root_verdict {
    Verdict::Current => {}
    Verdict::Gone if same_boot => run.report.already_gone.push(root.pid),
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
  // reused while a process group of that id exists, so a member of group `root.pid` that
  // started after the leader belongs to the group the leader created.
  let table = process_table()?;
  if root_verdict == Verdict::Current {
    run.targets.push(root_target);
    for p in descendants_in(&table, root.pid, root.start_time) {
      if !p.is_dead() {
        run.add(Target::from(&p));
      }
    }
  }
  for p in group_members_in(&table, root.pid, root.start_time) {
    if !p.is_dead() {
      run.add(Target::from(&p));
    }
  }
  for t in cgroup_members(run.cgroup, &table) {
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

  if escalate && !survivors.is_empty() {
    run.rewalk(&survivors);
    run.report.escalated = true;
    #[cfg(target_os = "linux")]
    if let Some(dir) = run.cgroup {
      crate::cgroup::kill_all(dir);
    }
    run.signal_all(Signal::SIGKILL);
    survivors = run.wait_until(Instant::now() + opts.settle, true);
  }
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
  fn sigstopped_member_is_killed_by_escalation_not_reported_dead_early() {
    let (mut child, id) = spawn_session("kill -STOP $$");
    std::thread::sleep(Duration::from_millis(100));
    let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(100), ..Default::default() }).unwrap();
    assert!(report.escalated);
    assert!(report.survivors.is_empty());
    child.wait().unwrap();
  }
}
