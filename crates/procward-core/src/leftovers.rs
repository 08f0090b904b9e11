//! What an ended job left running: processes that are provably the job's although its leader
//! is gone (a server started with `&` by a script that then exited).
//!
//! A process is the job's leftover only when one of these proves it, never its name or its
//! parent alone:
//! - it is in the cgroup procward created for the job's session (judged as a kill judges it,
//!   see [`crate::cgroup::owned`]);
//! - it carries the session's mark in its environment (see [`crate::membership`]). The
//!   candidates are the members of the job's own session and process group by number
//!   (session id, `getsid`, and process group, field 5 of `/proc/<pid>/stat`, both the
//!   recorded leader's PID, started no earlier than the leader, field 22, on the same boot),
//!   but the number alone proves nothing: once the job's group emptied, a stranger that got
//!   the leader's PID and called `setsid` leads a group of the same number.
//!
//! A process of the job that left its group and session after its parent ended is found by
//! its mark only by a deep look ([`leftovers_deep`]: one pass over `/proc` reading every
//! process's environment), which the registry takes for liveness questions and bulk kills,
//! not on every end of a session.
//!
//! The leader itself is no leftover (a durable job's supervisor stays on while a leftover
//! holds the job's output). Whatever the kill guard refuses (PID <= 1, the host, its group,
//! session or ancestors) is never listed. Zombies are dead and never listed.

use crate::identity::Identity;
use crate::kill::CgroupClaim;
#[cfg(unix)]
use crate::sys;

/// An ended job to look for leftovers of.
#[derive(Debug, Clone)]
pub struct LeftoverQuery {
  /// The identity the job's leader was recorded with (a durable job's: its supervisor's).
  pub leader: Identity,
  /// The job's cgroup as its record names it (Linux; ignored elsewhere).
  pub cgroup: Option<CgroupClaim>,
  /// The session's mark (`<session id>:<nonce>`); without a well-formed one, only the
  /// cgroup proves a leftover.
  pub mark: Option<String>,
}

/// The live leftovers of each job, in order, with their identities. One pass over the
/// process table for all the queries (on Linux: a listing of `/proc` with one `getpgid` per
/// process, and a stat read only for members of the groups asked about), plus a read of each
/// owned cgroup's `cgroup.procs`. Nothing is listed on another boot, or where the platform
/// has no such notion (Windows: a job's processes live in its Job Object, which goes with
/// the job's end).
pub fn leftovers(queries: &[LeftoverQuery]) -> Vec<Vec<Identity>> {
  #[cfg(unix)]
  return unix_leftovers(queries, false);
  #[cfg(not(unix))]
  queries.iter().map(|_| Vec::new()).collect()
}

/// [`leftovers`], and also every process that carries a query's mark wherever it is (a
/// daemon that left the job's group and session after its parent ended), from one pass over
/// `/proc` for all the queries (see [`crate::membership::marked_processes`]).
pub fn leftovers_deep(queries: &[LeftoverQuery]) -> Vec<Vec<Identity>> {
  #[cfg(unix)]
  return unix_leftovers(queries, true);
  #[cfg(not(unix))]
  queries.iter().map(|_| Vec::new()).collect()
}

#[cfg(unix)]
fn unix_leftovers(queries: &[LeftoverQuery], deep: bool) -> Vec<Vec<Identity>> {
  let mut out: Vec<Vec<Identity>> = queries.iter().map(|_| Vec::new()).collect();
  let Ok(boot_id) = sys::boot_id() else { return out };
  // The groups that may hold the job's processes: one that still exists (a signal 0 to it,
  // the cheap test that rules out almost every ended job), of a job with a mark to prove
  // its members by.
  let marks: Vec<Option<&str>> = queries.iter().map(|q| q.mark.as_deref().filter(|m| crate::membership::valid_mark(m))).collect();
  let groups: Vec<Option<i32>> = queries
    .iter()
    .zip(&marks)
    .map(|(q, mark)| {
      let l = &q.leader;
      let candidate = mark.is_some() && l.boot_id == boot_id && l.pid > 1 && group_exists(l.pid);
      candidate.then_some(l.pid)
    })
    .collect();
  let wanted: Vec<i32> = groups.iter().flatten().copied().collect();
  let members = group_members(&wanted);
  // The deep look: every process carrying one of the marks, by query.
  let mut marked: Vec<Vec<sys::ProcessInfo>> = queries.iter().map(|_| Vec::new()).collect();
  if deep {
    let asking: Vec<usize> = (0..queries.len()).filter(|&i| marks[i].is_some() && queries[i].leader.boot_id == boot_id).collect();
    let asked: Vec<&str> = asking.iter().filter_map(|&i| marks[i]).collect();
    for (k, p) in crate::membership::marked_processes(&asked) {
      marked[asking[k]].push(p);
    }
  }
  let cgroups = CgroupNames::read(queries);
  let mut host = None;
  for (i, q) in queries.iter().enumerate() {
    let leader = &q.leader;
    if leader.boot_id != boot_id {
      continue;
    }
    let mut found: Vec<sys::ProcessInfo> = Vec::new();
    if let (Some(pgid), Some(mark)) = (groups[i], marks[i]) {
      found.extend(members.iter().filter(|p| {
        p.pgid == pgid
          && p.start_time >= leader.start_time
          && crate::guard::session_of(p.pid) == Some(pgid)
          && crate::membership::carries_mark(p.pid, mark)
      }));
    }
    found.extend(cgroups.members(q.cgroup.as_ref()));
    found.extend(marked[i].iter().filter(|p| p.start_time >= leader.start_time));
    found.retain(|p| (p.pid != leader.pid || p.start_time != leader.start_time) && !p.is_dead());
    if found.is_empty() {
      continue;
    }
    let host = host.get_or_insert_with(crate::guard::Host::current);
    found.retain(|p| host.check_process(p, crate::guard::session_of(p.pid)).is_ok());
    found.sort_by_key(|p| p.pid);
    found.dedup_by_key(|p| p.pid);
    out[i] = found.into_iter().map(|p| Identity { pid: p.pid, start_time: p.start_time, boot_id: boot_id.clone() }).collect();
  }
  out
}

/// Whether the process group `pgid` exists: `kill(-pgid, 0)` succeeds (or is refused with
/// `EPERM`) while any process is in it. Sends nothing.
#[cfg(unix)]
fn group_exists(pgid: i32) -> bool {
  // SAFETY: signal 0 only checks that the group exists; `pgid` is above 1.
  unsafe { libc::kill(-pgid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

/// The job cgroups that exist now, from one listing of procward's cgroup root (so a batch
/// of ended jobs costs one read, not one per job whose cgroup is long removed).
#[cfg(unix)]
struct CgroupNames(std::collections::HashSet<String>);

#[cfg(unix)]
impl CgroupNames {
  fn read(queries: &[LeftoverQuery]) -> Self {
    let mut names = std::collections::HashSet::new();
    #[cfg(target_os = "linux")]
    if queries.iter().any(|q| q.cgroup.is_some()) {
      if let Some(Ok(dir)) = crate::cgroup::base().map(std::fs::read_dir) {
        names.extend(dir.filter_map(|e| e.ok()?.file_name().into_string().ok()));
      }
    }
    let _ = queries;
    CgroupNames(names)
  }

  /// The live members of the job's cgroup when procward created it for the session.
  fn members(&self, claim: Option<&CgroupClaim>) -> Vec<sys::ProcessInfo> {
    #[cfg(target_os = "linux")]
    if let Some(claim) = claim.filter(|c| self.0.contains(&c.session)) {
      if let crate::cgroup::Owned::Ours(dir) = crate::cgroup::owned(&claim.recorded, &claim.session) {
        return crate::cgroup::members(&dir)
          .into_iter()
          .filter_map(|pid| sys::read_stat(pid).ok().flatten())
          .filter(|p| !p.is_dead())
          .collect();
      }
    }
    let _ = claim;
    Vec::new()
  }
}

/// The live processes of the process groups `pgids`. Linux: one listing of `/proc` with one
/// `getpgid` per PID and a stat read only for the groups' members. Elsewhere: the table.
#[cfg(unix)]
fn group_members(pgids: &[i32]) -> Vec<sys::ProcessInfo> {
  if pgids.is_empty() {
    return Vec::new();
  }
  let wanted: std::collections::HashSet<i32> = pgids.iter().copied().collect();
  #[cfg(target_os = "linux")]
  {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir
      .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
      // SAFETY: getpgid only reads the kernel's record of `pid`.
      .filter(|&pid| wanted.contains(&unsafe { libc::getpgid(pid) }))
      .filter_map(|pid| sys::read_stat(pid).ok().flatten())
      .filter(|p| wanted.contains(&p.pgid) && !p.is_dead())
      .collect()
  }
  #[cfg(not(target_os = "linux"))]
  {
    sys::process_table().map(|t| t.into_iter().filter(|p| wanted.contains(&p.pgid) && !p.is_dead()).collect()).unwrap_or_default()
  }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
  use super::*;
  use crate::identity::{identity, identity_of_child};
  use crate::testwait::until;
  use std::os::unix::process::CommandExt;
  use std::process::{Child, Command, Stdio};

  const MARK: &str = "proc_00000000c0de:0123456789abcdef0123456789abcdef";

  /// `program args` in a session of its own (as every job starts), carrying [`MARK`], with
  /// its identity.
  fn in_new_session(program: &str, args: &[&str], stdout: Stdio) -> (Child, Identity) {
    marked_session(program, args, stdout, MARK)
  }

  /// As [`in_new_session`], carrying `mark`.
  fn marked_session(program: &str, args: &[&str], stdout: Stdio, mark: &str) -> (Child, Identity) {
    let mut cmd = Command::new(program);
    cmd.args(args).stdout(stdout).env(crate::membership::MARK_VAR, mark);
    unsafe {
      cmd.pre_exec(|| {
        libc::setsid();
        Ok(())
      });
    }
    let child = cmd.spawn().unwrap();
    let id = identity_of_child(child.id() as i32).unwrap();
    (child, id)
  }

  #[test]
  fn a_background_process_of_an_ended_job_is_its_leftover_until_it_dies() {
    // The job: a shell in a session of its own that starts a server in the background and
    // exits; the server stays in the job's session and group.
    let (mut child, leader) = in_new_session("sh", &["-c", "sleep 30 >/dev/null & echo $! ; exit 0"], Stdio::piped());
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    child.wait().unwrap();
    let server: i32 = out.trim().parse().unwrap();
    let server_id = identity(server).unwrap().unwrap();
    let query = LeftoverQuery { leader: leader.clone(), cgroup: None, mark: Some(MARK.into()) };
    assert_eq!(leftovers(std::slice::from_ref(&query)), vec![vec![server_id.clone()]]);
    // A leader recorded one tick later than the server: the server started before the job,
    // so it is not the job's.
    let late =
      LeftoverQuery { leader: Identity { start_time: server_id.start_time + 1, ..leader.clone() }, cgroup: None, mark: Some(MARK.into()) };
    // Another boot: nothing can be left of a job of another boot.
    let other_boot =
      LeftoverQuery { leader: Identity { boot_id: "another-boot".into(), ..leader.clone() }, cgroup: None, mark: Some(MARK.into()) };
    assert_eq!(leftovers(&[late, other_boot]), vec![Vec::<Identity>::new(), Vec::new()]);
    unsafe { libc::kill(server, libc::SIGKILL) };
    until("the server to die", || identity(server).unwrap().is_none());
    assert_eq!(leftovers(&[query]), vec![Vec::<Identity>::new()]);
  }

  #[test]
  fn a_pid_reused_by_a_session_leader_does_not_lend_its_group_to_the_job() {
    // The leader's PID names a live session leader with a member (as a PID's next owner may),
    // started after the job and carrying another session's mark: neither is the job's.
    let (mut child, now_there) = marked_session("sh", &["-c", "sleep 30 & wait"], Stdio::null(), &MARK.replace(":0", ":f"));
    until("its member", || crate::tree::descendants(now_there.pid).unwrap().iter().any(|p| !p.is_dead()));
    let recorded = Identity { start_time: now_there.start_time - 1, ..now_there.clone() };
    let found = leftovers(&[LeftoverQuery { leader: recorded.clone(), cgroup: None, mark: Some(MARK.into()) }]);
    // A record without a mark: the group's number proves nothing either.
    let unmarked = leftovers(&[LeftoverQuery { leader: recorded, cgroup: None, mark: None }]);
    // Its own session's mark: its member is a leftover, the leader itself not.
    let own = leftovers(&[LeftoverQuery { leader: now_there.clone(), cgroup: None, mark: Some(MARK.replace(":0", ":f")) }]);
    unsafe { libc::kill(-now_there.pid, libc::SIGKILL) };
    child.wait().unwrap();
    assert_eq!(found, vec![Vec::<Identity>::new()]);
    assert_eq!(unmarked, vec![Vec::<Identity>::new()]);
    assert_eq!(own[0].len(), 1, "{own:?}");
    assert_ne!(own[0][0].pid, now_there.pid);
  }

  #[test]
  fn a_daemon_that_left_the_session_is_a_leftover_only_through_the_jobs_cgroup() {
    if crate::cgroup::base().is_none() {
      eprintln!("skipped: this host may not create cgroups");
      return;
    }
    let session = format!("proc_{:012x}", 0xc9_0000_0000u64 + u64::from(std::process::id()));
    let dir = crate::cgroup::create(&session).expect("a cgroup for the session");
    // A daemon in a session of its own, moved into the job's cgroup; the leader long gone.
    let (mut daemon, daemon_id) = in_new_session("sleep", &["30"], Stdio::null());
    std::fs::write(dir.join("cgroup.procs"), daemon_id.pid.to_string()).unwrap();
    let gone_leader = Identity { pid: i32::MAX - 7, start_time: 1, boot_id: daemon_id.boot_id.clone() };
    let with = LeftoverQuery { leader: gone_leader.clone(), cgroup: Some(CgroupClaim::new(session.clone(), None)), mark: None };
    // A cgroup named for another session is not this job's.
    let other = LeftoverQuery {
      leader: gone_leader.clone(),
      cgroup: Some(CgroupClaim::new(session.clone(), Some("proc_0000000000ff".into()))),
      mark: None,
    };
    let without = LeftoverQuery { leader: gone_leader, cgroup: None, mark: None };
    let found = leftovers(&[with, other, without]);
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    crate::cgroup::remove(&session, &session);
    assert_eq!(found, vec![vec![daemon_id], Vec::new(), Vec::new()]);
  }

  #[test]
  fn the_host_and_pid_1_are_never_leftovers() {
    let me = identity(std::process::id() as i32).unwrap().unwrap();
    let init = identity(1).unwrap().unwrap();
    let found = leftovers(&[
      LeftoverQuery { leader: me, cgroup: None, mark: Some(MARK.into()) },
      LeftoverQuery { leader: init, cgroup: None, mark: Some(MARK.into()) },
    ]);
    assert!(found.iter().all(|f| f.iter().all(|p| p.pid > 1 && p.pid != std::process::id() as i32)), "{found:?}");
  }
}
