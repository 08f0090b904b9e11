//! One tree kill in progress: the processes it is about (its targets, snapshotted before the
//! first signal) and its report, and the identity check every step makes before it counts
//! or signals a process.

use super::{KillReport, Refused};
use crate::guard::{Host, Refusal};
use crate::identity::{judge, Identity, Verdict};
use crate::probe::{probe_one, Probe, ProcessInfo};

/// A process the kill is about, as snapshotted (or found by a later walk).
#[derive(Debug, Clone, Copy)]
pub(super) struct Target {
  pub(super) pid: i32,
  pub(super) start_time: u64,
  /// Process group at snapshot time: members of the root's group are reached by the
  /// group signal even if they die before their own turn comes.
  pub(super) pgid: i32,
}

impl From<&ProcessInfo> for Target {
  fn from(p: &ProcessInfo) -> Self {
    Target { pid: p.pid, start_time: p.start_time, pgid: p.pgid }
  }
}

/// The state of one kill.
pub(super) struct Run<'a> {
  pub(super) root: &'a Identity,
  pub(super) host: Host,
  pub(super) cgroup: Option<std::path::PathBuf>,
  /// Whether the root's process group may be the job's. False when the kill reaches the
  /// job's cgroup alone: its leader's PID now names another process (so any group of that
  /// id is the newcomer's) or cannot be read.
  pub(super) group_is_jobs: bool,
  pub(super) boot_id: String,
  pub(super) targets: Vec<Target>,
  pub(super) report: KillReport,
}

impl Run<'_> {
  /// One fresh read of the kernel: the verdict, and the live process when it is current.
  pub(super) fn check(&self, t: Target) -> (Verdict, Option<ProcessInfo>) {
    let id = Identity { pid: t.pid, start_time: t.start_time, boot_id: self.root.boot_id.clone() };
    let probe = probe_one(t.pid);
    let v = judge(&id, &self.boot_id, &probe);
    match probe {
      Probe::Found(info) if v == Verdict::Current => (v, Some(info)),
      _ => (v, None),
    }
  }

  pub(super) fn verdict(&self, t: Target) -> Verdict {
    self.check(t).0
  }

  pub(super) fn is_alive(&self, t: Target) -> bool {
    matches!(self.verdict(t), Verdict::Current | Verdict::Unknown)
  }

  pub(super) fn add(&mut self, t: Target) {
    if !self.knows(t.pid) {
      self.targets.push(t);
    }
  }

  pub(super) fn knows(&self, pid: i32) -> bool {
    self.targets.iter().any(|x| x.pid == pid)
  }

  pub(super) fn note(list: &mut Vec<i32>, pid: i32) {
    if !list.contains(&pid) {
      list.push(pid);
    }
  }

  /// Lists a refusal; the PID leaves the targets, so nothing waits for it to die.
  pub(super) fn refuse(&mut self, pid: i32, reason: Refusal) {
    self.targets.retain(|t| t.pid != pid);
    if !self.report.signalled.contains(&pid) && !self.report.refused.iter().any(|r| r.pid == Some(pid)) {
      self.report.refused.push(Refused { pid: Some(pid), cgroup: None, reason });
    }
  }
}
