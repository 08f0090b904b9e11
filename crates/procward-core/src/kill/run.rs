//! One tree kill in progress: the processes it is about (its targets, snapshotted before the
//! first signal) and its report, and the identity check every step makes before it counts
//! or signals a process.

use super::{KillReport, Refused};
use crate::guard::{Host, Refusal};
use crate::identity::{judge, Identity, Verdict};
use crate::pidfd::{OpenError, PidFd};
use crate::probe::{probe_one, Probe, ProcessInfo};

/// How a process may be signalled after its check: through its pidfd, by number where this
/// system has no pidfds (the check-to-signal window stays), or not at all.
pub(super) enum Handle {
  Fd(PidFd),
  ByNumber,
  /// Gone at the open (`ESRCH`), or no pidfd could be opened (listed as `no_pidfd`).
  Never,
}

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
  /// Whether a member of the root's group (by its number) is the job's only with a proof of
  /// its own (the mark or the cgroup): the root was gone before the first signal, so
  /// nothing held the group's number for the job and a stranger's group may carry it.
  pub(super) members_need_proof: bool,
  /// The session's mark, when the request names a well-formed one.
  pub(super) mark: Option<&'a str>,
  /// The processes carrying the mark, from the batch's one scan of `/proc` before the first
  /// signal (see `snapshot::scan_marked`).
  pub(super) marked: Vec<Target>,
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

  /// Whether something a stranger cannot have says `pid` is the job's: it is in the job's
  /// cgroup, or carries the session's mark (see [`crate::membership`]).
  pub(super) fn proven(&self, pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    if self.cgroup.as_deref().is_some_and(|dir| crate::membership::in_cgroup(pid, dir)) {
      return true;
    }
    self.mark.is_some_and(|m| crate::membership::carries_mark(pid, m))
  }

  /// A pidfd for `pid`, to be checked before its signal (see [`Handle`]). A pidfd that
  /// cannot be opened on a system that has them refuses the PID (`no_pidfd`).
  pub(super) fn handle(&mut self, pid: i32) -> Handle {
    match PidFd::open(pid) {
      Ok(fd) => Handle::Fd(fd),
      Err(OpenError::Unsupported) => Handle::ByNumber,
      Err(OpenError::Gone) => Handle::Never,
      Err(OpenError::Failed(_)) => {
        self.refuse(pid, Refusal::NoPidfd);
        Handle::Never
      }
    }
  }

  /// Sends `sig` through `handle` (just checked `current` by the caller). Whether it went.
  pub(super) fn send(handle: &Handle, pid: i32, sig: nix::sys::signal::Signal) -> bool {
    match handle {
      Handle::Fd(fd) => fd.signal(sig as i32).is_ok(),
      Handle::ByNumber => nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).is_ok(),
      Handle::Never => false,
    }
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
