//! Kill safety: the processes and groups a kill refuses to signal, whatever a record says.
//!
//! Records in the state directory are written by whoever can write it, so a kill checks
//! every PID it is about to signal against the host itself, at signal time:
//!
//! - never PID <= 1 (`kill(-1)` reaches every process; PID 1 is init or the namespace's
//!   reaper, and `0` is the caller's own group);
//! - never the host process, any member of its process group or of its session, nor any
//!   ancestor of the host (walked through the ppid chain from our own PID);
//! - a process group (`kill(-pgid)`) only when its leader leads its own session
//!   (`pid == pgid == sid`): every job starts with `setsid`, so anything else is not a
//!   job's group. A session leader stays one for life (`setsid` and `setpgid` both fail for
//!   it), so checking it between two identity checks proves it for the signal that follows.

use crate::probe::ProcessInfo;
use crate::sys;

/// Why a kill refused to signal a PID, a process group or a cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
  /// PID 1 (init or the namespace's reaper), 0 or negative.
  PidLe1,
  /// The host process itself.
  Host,
  /// A member of the host's process group (or the host's group itself).
  HostGroup,
  /// A member of the host's session.
  HostSession,
  /// An ancestor of the host, or a group holding one.
  HostAncestor,
  /// A group signal to a process that does not lead its own session.
  NotSessionLeader,
  /// A cgroup procward did not create: not directly below its own cgroup root, or not
  /// named for the session.
  CgroupNotOurs,
  /// A root that nothing proves to be the job's (see [`crate::membership`]): it carries
  /// neither the session's mark nor is in the job's cgroup, whatever its record says.
  NoProof,
  /// No pidfd could be opened for the process (descriptors exhausted, ...) on a kernel that
  /// has pidfds: it is never signalled by number instead.
  NoPidfd,
}

impl Refusal {
  /// The stable name used in reports (`pid_le_1`, `host`, `host_group`, ...).
  pub fn as_str(self) -> &'static str {
    match self {
      Refusal::PidLe1 => "pid_le_1",
      Refusal::Host => "host",
      Refusal::HostGroup => "host_group",
      Refusal::HostSession => "host_session",
      Refusal::HostAncestor => "host_ancestor",
      Refusal::NotSessionLeader => "not_session_leader",
      Refusal::CgroupNotOurs => "cgroup_not_ours",
      Refusal::NoProof => "no_proof",
      Refusal::NoPidfd => "no_pidfd",
    }
  }
}

/// The host as a kill must spare it: its PID, group, session and ancestors, read once at
/// the start of each kill (a parent can change when an ancestor dies).
#[derive(Debug, Clone)]
pub struct Host {
  pub pid: i32,
  pub pgid: i32,
  pub sid: i32,
  /// The ppid chain from the host's parent up to (not including) PID 1, with each
  /// ancestor's group.
  pub ancestors: Vec<ProcessInfo>,
}

/// Longest ppid chain walked: a cycle (impossible in a sane /proc) must not hang a kill.
const MAX_ANCESTORS: usize = 4096;

impl Host {
  /// Reads the calling process's PID, group, session and ancestors.
  pub fn current() -> Host {
    let pid = std::process::id() as i32;
    // SAFETY: getpgrp and getsid(0) only read the caller's own ids.
    let (pgid, sid) = unsafe { (libc::getpgrp(), libc::getsid(0)) };
    let mut ancestors = Vec::new();
    let mut ppid = sys::read_stat(pid).ok().flatten().map_or(0, |p| p.ppid);
    while ppid > 1 && ancestors.len() < MAX_ANCESTORS {
      let Ok(Some(info)) = sys::read_stat(ppid) else { break };
      ppid = info.ppid;
      ancestors.push(info);
    }
    Host { pid, pgid, sid, ancestors }
  }

  /// Whether `p` (a live process, just judged `current`) may receive a signal of its own.
  /// `sid` is its session id (`getsid`), when known.
  pub fn check_process(&self, p: &ProcessInfo, sid: Option<i32>) -> Result<(), Refusal> {
    if p.pid <= 1 {
      Err(Refusal::PidLe1)
    } else if p.pid == self.pid {
      Err(Refusal::Host)
    } else if self.ancestors.iter().any(|a| a.pid == p.pid) {
      Err(Refusal::HostAncestor)
    } else if p.pgid == self.pgid {
      Err(Refusal::HostGroup)
    } else if sid == Some(self.sid) {
      Err(Refusal::HostSession)
    } else {
      Ok(())
    }
  }

  /// Whether a group signal `kill(-pgid)` may be sent, before anything is known of the
  /// leader: never to a group or session of the host's, nor to one holding an ancestor.
  pub fn check_group_id(&self, pgid: i32) -> Result<(), Refusal> {
    if pgid <= 1 {
      Err(Refusal::PidLe1)
    } else if pgid == self.pid {
      Err(Refusal::Host)
    } else if pgid == self.pgid {
      Err(Refusal::HostGroup)
    } else if pgid == self.sid {
      Err(Refusal::HostSession)
    } else if self.ancestors.iter().any(|a| a.pid == pgid || a.pgid == pgid) {
      Err(Refusal::HostAncestor)
    } else {
      Ok(())
    }
  }

  /// Whether `leader` (just judged `current`, with session id `sid`) may have its group
  /// signalled: it must lead its own session, and the group must spare the host.
  pub fn check_group(&self, leader: &ProcessInfo, sid: Option<i32>) -> Result<(), Refusal> {
    self.check_group_id(leader.pid)?;
    self.check_process(leader, sid)?;
    if leader.pgid == leader.pid && sid == Some(leader.pid) {
      Ok(())
    } else {
      Err(Refusal::NotSessionLeader)
    }
  }
}

/// The session id of `pid` (`getsid`); `None` when it is gone or cannot be read.
pub fn session_of(pid: i32) -> Option<i32> {
  if pid <= 0 {
    return None;
  }
  // SAFETY: getsid only reads the kernel's record of `pid`.
  let sid = unsafe { libc::getsid(pid) };
  (sid >= 0).then_some(sid)
}

#[cfg(test)]
mod tests {
  use super::*;

  fn info(pid: i32, pgid: i32) -> ProcessInfo {
    ProcessInfo { pid, ppid: 1, pgid, state: 'S', start_time: 100 }
  }

  fn host() -> Host {
    Host { pid: 500, pgid: 400, sid: 300, ancestors: vec![info(450, 400), info(300, 300), ProcessInfo { pgid: 250, ..info(260, 250) }] }
  }

  #[test]
  fn pid_1_and_below_are_refused() {
    let h = host();
    assert_eq!(h.check_process(&info(1, 1), Some(1)), Err(Refusal::PidLe1));
    assert_eq!(h.check_process(&info(0, 0), None), Err(Refusal::PidLe1));
    assert_eq!(h.check_process(&info(-1, -1), None), Err(Refusal::PidLe1));
    assert_eq!(h.check_group_id(1), Err(Refusal::PidLe1));
    assert_eq!(h.check_group_id(-1), Err(Refusal::PidLe1));
  }

  #[test]
  fn the_host_its_group_session_and_ancestors_are_refused() {
    let h = host();
    assert_eq!(h.check_process(&info(500, 400), Some(300)), Err(Refusal::Host));
    assert_eq!(h.check_process(&info(450, 400), Some(300)), Err(Refusal::HostAncestor));
    assert_eq!(h.check_process(&info(260, 250), Some(300)), Err(Refusal::HostAncestor));
    assert_eq!(h.check_process(&info(600, 400), Some(300)), Err(Refusal::HostGroup));
    assert_eq!(h.check_process(&info(601, 601), Some(300)), Err(Refusal::HostSession));
    assert_eq!(h.check_group_id(400), Err(Refusal::HostGroup));
    assert_eq!(h.check_group_id(300), Err(Refusal::HostSession));
    // A group holding an ancestor, though the ancestor does not lead it.
    assert_eq!(h.check_group_id(250), Err(Refusal::HostAncestor));
  }

  #[test]
  fn a_stranger_in_its_own_session_may_be_signalled_and_its_group_too() {
    let h = host();
    assert_eq!(h.check_process(&info(700, 700), Some(700)), Ok(()));
    assert_eq!(h.check_group(&info(700, 700), Some(700)), Ok(()));
  }

  #[test]
  fn a_root_that_does_not_lead_its_session_gets_no_group_signal() {
    let h = host();
    // Leads its group but not a session (a shell's job-control group).
    assert_eq!(h.check_group(&info(700, 700), Some(650)), Err(Refusal::NotSessionLeader));
    // Member of another group.
    assert_eq!(h.check_group(&info(701, 700), Some(701)), Err(Refusal::NotSessionLeader));
    // Session unknown: not proven.
    assert_eq!(h.check_group(&info(700, 700), None), Err(Refusal::NotSessionLeader));
    // It may still receive a signal of its own.
    assert_eq!(h.check_process(&info(701, 700), Some(650)), Ok(()));
  }

  #[cfg(target_os = "linux")]
  #[test]
  fn the_live_host_refuses_itself_its_parent_and_its_group() {
    let h = Host::current();
    let me = sys::read_stat(h.pid).unwrap().unwrap();
    assert_eq!(h.check_process(&me, session_of(h.pid)), Err(Refusal::Host));
    let parent = std::os::unix::process::parent_id() as i32;
    if parent > 1 {
      let p = sys::read_stat(parent).unwrap().unwrap();
      assert_eq!(h.check_process(&p, session_of(parent)), Err(Refusal::HostAncestor));
    }
    assert!(h.check_group_id(h.pgid).is_err());
    assert_eq!(session_of(h.pid), Some(h.sid));
  }
}
