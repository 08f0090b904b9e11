//! One signal to a job's process group, with no escalation: what Ctrl-C (SIGINT), a reload
//! (SIGHUP) or SIGUSR1 in a terminal does to its foreground job.
//!
//! The signal goes to the group the job's leader leads (`kill(-pgid, sig)`), as a terminal's
//! line discipline sends Ctrl-C to the foreground group: a dev server's children get it too.
//! A root that does not lead its own session (a durable job's shell, in its supervisor's
//! group) gets the signal alone, as the kill path signals such a root: the group signal is
//! only ever sent to a session leader's group.
//! Descendants that left the group (`setsid`, a daemon) are not reached; a tree kill is the
//! operation that hunts those down. No SIGCONT follows (a stopped job keeps the signal
//! pending until it is continued, as in a shell) and nothing is waited for.
//!
//! The kill path's rules hold: the leader's identity must be `current` right before the
//! signal (never a reused PID), never PID <= 1, and the guard must pass the group (the
//! leader leads its own session; the group spares the host, its group, session and
//! ancestors). With a mark ([`signal_job_proven`]) the leader must carry it (see
//! [`crate::membership`]). The signal goes through the leader's pidfd, opened before the
//! check (see [`crate::pidfd`]); a kernel without the pidfd group flag gets the group's
//! members one by one, each through its own pidfd, checked after the open.

use super::KillReport;
use crate::error::{Error, Result};
use crate::guard::{session_of, Host, Refusal};
use crate::identity::{judge, Identity, Verdict};
use crate::pidfd::{OpenError, PidFd};
use crate::probe::{probe_one, Probe};
use crate::sys;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Sends `signal` to the job led by `root` (see the module docs). Returns what it did in the
/// shape of a [`KillReport`]: the root's PID in `signalled` (its group, or the root alone,
/// got the signal), `already_gone`, `refused_reused`, `survivors` (the verdict was
/// `unknown`: nothing was sent) or `refused` (the guard's reason). `escalated` is always
/// false. Errors: `Io` when the boot id cannot be read or the signal fails otherwise than
/// with ESRCH.
pub fn signal_job(root: &Identity, signal: Signal) -> Result<KillReport> {
  signal_job_proven(root, signal, None, None, false)
}

/// [`signal_job`], for a job known by its session's `mark` and `cgroup` (see
/// [`crate::membership`]): with `require_proof`, a root that neither carries the mark nor
/// is in the job's cgroup (judged as a kill judges it) is refused (`no_proof`) and nothing
/// is sent.
pub fn signal_job_proven(
  root: &Identity,
  signal: Signal,
  mark: Option<&str>,
  cgroup: Option<&super::CgroupClaim>,
  require_proof: bool,
) -> Result<KillReport> {
  let mut report = KillReport::default();
  let pid = root.pid;
  if pid <= 1 {
    report.refused.push(super::Refused { pid: Some(pid), cgroup: None, reason: Refusal::PidLe1 });
    return Ok(report);
  }
  let boot_id = sys::boot_id().map_err(|e| Error::io("reading the boot id", e))?;
  let host = Host::current();
  let judged = || {
    let probe = probe_one(pid);
    let verdict = judge(root, &boot_id, &probe);
    match probe {
      Probe::Found(info) if verdict == Verdict::Current => (verdict, Some(info)),
      _ => (verdict, None),
    }
  };
  match judged() {
    (Verdict::Current, Some(info)) => {
      let sid = session_of(pid);
      if let Err(reason) = host.check_process(&info, sid) {
        report.refused.push(super::Refused { pid: Some(pid), cgroup: None, reason });
        return Ok(report);
      }
      let needed = crate::membership::MARK_READABLE && require_proof;
      let proven = || mark.is_some_and(|m| crate::membership::carries_mark(pid, m)) || in_own_cgroup(pid, cgroup);
      if needed && !proven() {
        report.refused.push(super::Refused { pid: Some(pid), cgroup: None, reason: Refusal::NoProof });
        return Ok(report);
      }
      // The group only when the guard passes it (the root leads its own session); else the root alone.
      let group = host.check_group(&info, sid).is_ok();
      // Opened before the last check, so the process checked is the process signalled.
      let fd = match PidFd::open(pid) {
        Ok(fd) => Some(fd),
        Err(OpenError::Unsupported) => None,
        Err(OpenError::Gone) => {
          report.already_gone.push(pid);
          return Ok(report);
        }
        Err(OpenError::Failed(_)) => {
          report.refused.push(super::Refused { pid: Some(pid), cgroup: None, reason: Refusal::NoPidfd });
          return Ok(report);
        }
      };
      // Checked again right before the signal: the guard's reads took time. A session
      // leader stays one for life, so the guard's verdict holds while the identity does.
      match judged().0 {
        Verdict::Current => match send(fd.as_ref(), pid, group, signal) {
          Ok(()) => report.signalled.push(pid),
          Err(e) if e.raw_os_error() == Some(libc::ESRCH) => report.already_gone.push(pid),
          Err(e) => return Err(Error::io(format!("sending {signal} to {pid}"), e)),
        },
        Verdict::Gone => report.already_gone.push(pid),
        Verdict::Replaced => report.refused_reused.push(pid),
        Verdict::Unknown => report.survivors.push(pid),
      }
    }
    (Verdict::Current | Verdict::Gone, _) => report.already_gone.push(pid),
    (Verdict::Replaced, _) => report.refused_reused.push(pid),
    (Verdict::Unknown, _) => report.survivors.push(pid),
  }
  Ok(report)
}

/// [`signal_job_proven`], to the foreground process group `pgid` of a PTY job's terminal
/// (`tcgetpgrp` on its master, see [`crate::pty::JobInput::foreground_group`]) when that is
/// not the root's own group: a shell's job control puts the command it runs (`sleep` under
/// `bash -i`) in a group of its own, which Ctrl-C in a terminal reaches and the root's group
/// does not. The root is judged as [`signal_job_proven`] judges it (current, its own
/// session's leader, proven when asked); the group is the job's only as a group of the
/// root's session (the live root holds the session's number), never by its number alone:
/// the signal goes through the pidfd of one of its members found in that session, checked
/// after the open (`PIDFD_SIGNAL_PROCESS_GROUP`; without that flag, each member through its
/// own pidfd). `signalled` holds the members signalled (the one whose pidfd carried the
/// group signal). Nothing is sent when no member of `pgid` is in the root's session.
pub fn signal_foreground(
  root: &Identity,
  pgid: i32,
  signal: Signal,
  mark: Option<&str>,
  cgroup: Option<&super::CgroupClaim>,
  require_proof: bool,
) -> Result<KillReport> {
  if pgid == root.pid || pgid <= 1 {
    return signal_job_proven(root, signal, mark, cgroup, require_proof);
  }
  let mut report = KillReport::default();
  let boot_id = sys::boot_id().map_err(|e| Error::io("reading the boot id", e))?;
  let host = Host::current();
  let root_ok = || {
    let probe = probe_one(root.pid);
    matches!((judge(root, &boot_id, &probe), &probe), (Verdict::Current, Probe::Found(info)) if info.pgid == root.pid && session_of(root.pid) == Some(root.pid) && host.check_process(info, Some(root.pid)).is_ok())
  };
  if !root_ok() {
    report.already_gone.push(root.pid);
    return Ok(report);
  }
  if crate::membership::MARK_READABLE
    && require_proof
    && !(mark.is_some_and(|m| crate::membership::carries_mark(root.pid, m)) || in_own_cgroup(root.pid, cgroup))
  {
    report.refused.push(super::Refused { pid: Some(root.pid), cgroup: None, reason: Refusal::NoProof });
    return Ok(report);
  }
  let members: Vec<_> = sys::process_table()
    .map_err(|e| Error::io("reading the process table", e))?
    .into_iter()
    .filter(|p| p.pgid == pgid && !p.is_dead() && p.start_time >= root.start_time && session_of(p.pid) == Some(root.pid))
    .collect();
  for p in &members {
    let Ok(fd) = PidFd::open(p.pid) else { continue };
    // After the open: the same process, still in the group and the root's session, the
    // root still its live leader, and no process the guard refuses.
    let now = sys::read_stat(p.pid).ok().flatten();
    let ok = now
      .is_some_and(|n| n.start_time == p.start_time && n.pgid == pgid && !n.is_dead() && host.check_process(&n, Some(root.pid)).is_ok())
      && session_of(p.pid) == Some(root.pid)
      && root_ok();
    if !ok {
      continue;
    }
    // One group signal through the first member's pidfd reaches them all; without the
    // flag (Linux before 6.9), each member through its own.
    match fd.signal_group(signal as i32) {
      Ok(true) => {
        report.signalled.push(p.pid);
        break;
      }
      Ok(false) => {
        if fd.signal(signal as i32).is_ok() {
          report.signalled.push(p.pid);
        }
      }
      Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
      Err(e) => return Err(Error::io(format!("sending {signal} to the group {pgid}"), e)),
    }
  }
  Ok(report)
}

/// Whether `pid` is in the job's cgroup, when procward created it for the session.
fn in_own_cgroup(pid: i32, cgroup: Option<&super::CgroupClaim>) -> bool {
  #[cfg(target_os = "linux")]
  if let Some(claim) = cgroup {
    if let crate::cgroup::Owned::Ours(dir) = crate::cgroup::owned(&claim.recorded, &claim.session) {
      return crate::membership::in_cgroup(pid, &dir);
    }
  }
  let _ = (pid, cgroup);
  false
}

/// Sends `signal` to the root's group (`group`) or the root alone: through `fd` where there
/// are pidfds, else by number right after the caller's check.
fn send(fd: Option<&PidFd>, pid: i32, group: bool, signal: Signal) -> std::io::Result<()> {
  let Some(fd) = fd else {
    return kill(Pid::from_raw(if group { -pid } else { pid }), signal).map_err(Into::into);
  };
  if !group {
    return fd.signal(signal as i32);
  }
  if fd.signal_group(signal as i32)? {
    return Ok(());
  }
  // No group flag (Linux before 6.9): the leader, then each member of its group (in its
  // session, started no earlier than it), each through a pidfd checked after its open. The
  // live leader holds the group's number, so these are the group it made.
  fd.signal(signal as i32)?;
  let leader = sys::read_stat(pid).ok().flatten();
  let Some(leader) = leader.filter(|l| !l.is_dead()) else { return Ok(()) };
  for p in sys::process_table()?.into_iter().filter(|p| p.pgid == pid && p.pid != pid && p.start_time >= leader.start_time) {
    let Ok(member) = PidFd::open(p.pid) else { continue };
    if sys::read_stat(p.pid).ok().flatten().is_some_and(|now| now.start_time == p.start_time && now.pgid == pid && !now.is_dead()) {
      let _ = member.signal(signal as i32);
    }
  }
  Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
  use super::*;
  use crate::identity::identity;
  use std::os::unix::process::CommandExt;

  #[test]
  fn the_host_and_pid_1_are_refused() {
    let me = identity(std::process::id() as i32).unwrap().unwrap();
    let report = signal_job(&me, Signal::SIGCONT).unwrap();
    assert!(report.signalled.is_empty(), "{report:?}");
    assert_eq!(report.refused.len(), 1, "{report:?}");
    let one = Identity { pid: 1, ..me.clone() };
    let report = signal_job(&one, Signal::SIGCONT).unwrap();
    assert_eq!(report.refused[0].reason, Refusal::PidLe1);
  }

  #[test]
  fn a_leader_gets_its_group_signalled_and_a_member_is_signalled_alone() {
    let (mut child, leader) = super::super::tests::spawn_session("sleep 30 & while :; do sleep 5; done");
    let member = super::super::tests::wait_for_descendants(leader.pid, 1)[0].pid;
    let member_id = identity(member).unwrap().unwrap();
    // The member does not lead its session: SIGKILL reaches it alone, and the leader lives.
    let report = signal_job(&member_id, Signal::SIGKILL).unwrap();
    assert_eq!(report.signalled, vec![member], "{report:?}");
    crate::testwait::until("the member to die", || crate::identity::verdict(&member_id) != Verdict::Current);
    assert_eq!(crate::identity::verdict(&leader), Verdict::Current);
    // The leader leads its session: its group gets the signal.
    let report = signal_job(&leader, Signal::SIGKILL).unwrap();
    assert_eq!(report.signalled, vec![leader.pid], "{report:?}");
    assert!(!report.escalated);
    child.wait().unwrap();
  }

  #[test]
  fn a_leader_without_the_sessions_mark_is_refused() {
    let mark = super::super::tests::MARK;
    let (mut child, leader) = super::super::tests::spawn_marked("sleep 30", Some(&mark.replace(":0", ":e")));
    let report = signal_job_proven(&leader, Signal::SIGKILL, Some(mark), None, true).unwrap();
    let unmarked = signal_job_proven(&leader, Signal::SIGKILL, None, None, true).unwrap();
    let alive = crate::identity::verdict(&leader) == Verdict::Current;
    let (mut own, own_id) = super::super::tests::spawn_marked("sleep 30", Some(mark));
    crate::testwait::until("its exec", || crate::membership::carries_mark(own_id.pid, mark));
    let proven = signal_job_proven(&own_id, Signal::SIGKILL, Some(mark), None, true).unwrap();
    own.wait().unwrap();
    unsafe { libc::kill(-leader.pid, libc::SIGKILL) };
    child.wait().unwrap();
    assert!(alive, "{report:?}");
    for r in [&report, &unmarked] {
      assert_eq!(r.refused, vec![super::super::Refused { pid: Some(leader.pid), cgroup: None, reason: Refusal::NoProof }]);
    }
    assert_eq!(proven.signalled, vec![own_id.pid]);
  }

  #[test]
  fn a_foreground_group_is_signalled_only_inside_the_roots_session() {
    // The job's session: its leader, and a member in a group of its own (as job control
    // makes one: setpgid(0, 0)).
    let (mut child, leader) =
      super::super::tests::spawn_session("python3 -c 'import os, time; os.setpgid(0, 0); time.sleep(30)' & wait; sleep 30");
    let member = super::super::tests::wait_for_descendants(leader.pid, 1)[0].pid;
    crate::testwait::until("the member's own group", || sys::read_stat(member).ok().flatten().is_some_and(|p| p.pgid == member));
    // A stranger's group, outside the job's session (the test's own session).
    let mut stranger = std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
    let stranger_id = crate::identity::identity_of_child(stranger.id() as i32).unwrap();
    let refused = signal_foreground(&leader, stranger_id.pid, Signal::SIGKILL, None, None, false).unwrap();
    let stranger_alive = crate::identity::verdict(&stranger_id) == Verdict::Current;
    let report = signal_foreground(&leader, member, Signal::SIGKILL, None, None, false).unwrap();
    crate::testwait::until("the member to die", || sys::read_stat(member).ok().flatten().is_none_or(|p| p.is_dead()));
    let leader_alive = crate::identity::verdict(&leader) == Verdict::Current;
    stranger.kill().unwrap();
    stranger.wait().unwrap();
    unsafe { libc::kill(-leader.pid, libc::SIGKILL) };
    child.wait().unwrap();
    assert!(refused.signalled.is_empty() && stranger_alive, "{refused:?}");
    assert_eq!(report.signalled, vec![member], "{report:?}");
    assert!(leader_alive, "the root's own group was signalled");
  }

  #[test]
  fn a_recorded_start_time_one_tick_off_is_never_signalled() {
    let mut child = std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
    let mut id = crate::identity::identity_of_child(child.id() as i32).unwrap();
    id.start_time -= 1;
    let report = signal_job(&id, Signal::SIGKILL).unwrap();
    assert_eq!(report.refused_reused, vec![id.pid], "{report:?}");
    assert!(child.try_wait().unwrap().is_none(), "the process was signalled");
    child.kill().unwrap();
    child.wait().unwrap();
  }
}
