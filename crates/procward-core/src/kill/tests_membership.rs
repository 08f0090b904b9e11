//! Tree kill and membership by proof (issue 25): the session's mark, a stranger holding an
//! ended job's PID or group number, and a contained job's cgroup (Linux).

use super::tests::{spawn_marked, MARK};

/// A mark of each test's own: tests run side by side, and a kill by mark reaches every
/// process that carries it.
fn own_mark(n: u8) -> String {
  MARK.replacen("aa:", &format!("{n:02x}:"), 1)
}
use super::*;
use crate::identity::{identity, verdict};
use crate::probe::process_table;

#[test]
fn a_gone_leader_leaves_its_marked_group_members_to_be_cleaned_up() {
  let (mut child, id) = spawn_marked("sleep 30 & echo $! ; exit 0", Some(&own_mark(0)));
  child.wait().unwrap();
  let leftovers = crate::tree::group_members_in(&process_table().unwrap(), id.pid, id.start_time);
  assert_eq!(leftovers.iter().filter(|p| !p.is_dead()).count(), 1);
  // Without the mark, the group's number proves nothing: nothing is signalled.
  let unproven = kill_tree(&id, &KillOptions { grace: Duration::from_millis(300), ..Default::default() }).unwrap();
  assert_eq!((unproven.already_gone.clone(), unproven.signalled.clone()), (vec![id.pid], vec![]), "{unproven:?}");
  let opts = KillOptions { grace: Duration::from_millis(300), mark: Some(own_mark(0)), require_proof: true, ..Default::default() };
  let report = kill_tree(&id, &opts).unwrap();
  assert_eq!(report.already_gone, vec![id.pid]);
  assert_eq!(report.signalled, vec![leftovers[0].pid]);
  assert!(report.survivors.is_empty());
}

#[test]
fn a_stranger_group_that_holds_an_ended_jobs_pid_is_never_signalled() {
  // A stranger's daemon: a session leader that forks a worker and exits, so the worker lives
  // in a group whose number is the leader's PID. The ended job's record names that PID, with
  // an earlier start time (the job had it first) and the job's mark.
  let (mut stranger, leader) = spawn_marked("sleep 30 & exit 0", Some(&own_mark(1).replace(":0", ":e")));
  stranger.wait().unwrap();
  let worker = wait_for_group(leader.pid, 1).remove(0);
  let job = Identity { start_time: leader.start_time - 1, ..leader.clone() };
  let opts = KillOptions { grace: Duration::from_millis(200), mark: Some(own_mark(1)), require_proof: true, ..Default::default() };
  let report = kill_tree(&job, &opts).unwrap();
  let alive = verdict(&worker);
  unsafe { libc::kill(-leader.pid, libc::SIGKILL) };
  assert_eq!(report.signalled, Vec::<i32>::new(), "{report:?}");
  assert_eq!(alive, Verdict::Current, "the stranger's worker was killed");
}

#[test]
fn a_live_root_without_the_mark_is_refused_as_no_proof() {
  // A record naming a live session leader with its true start time (finding 3 of issue 25):
  // the record is the only witness, so nothing is signalled.
  let (mut child, id) = spawn_marked("sleep 30", Some(&own_mark(2).replace(":0", ":e")));
  let opts = KillOptions { grace: Duration::ZERO, mark: Some(own_mark(2)), require_proof: true, ..Default::default() };
  let report = kill_tree(&id, &opts).unwrap();
  let unmarked = kill_tree(&id, &KillOptions { mark: None, ..opts.clone() }).unwrap();
  assert_eq!(verdict(&id), Verdict::Current);
  unsafe { libc::kill(-id.pid, libc::SIGKILL) };
  child.wait().unwrap();
  for r in [&report, &unmarked] {
    assert!(r.signalled.is_empty(), "{r:?}");
    assert_eq!(r.refused, vec![Refused { pid: Some(id.pid), cgroup: None, reason: Refusal::NoProof }]);
  }
}

#[test]
fn a_marked_escapee_of_an_ended_job_is_killed_outside_its_group() {
  // The job started a daemon in a session of its own and ended; the daemon's parent is gone.
  let (id, daemon) = job_with_daemon(&own_mark(3));
  let opts = KillOptions { grace: Duration::from_millis(300), mark: Some(own_mark(3)), require_proof: true, ..Default::default() };
  let report = kill_tree(&id, &opts).unwrap();
  assert_eq!(report.signalled, vec![daemon.pid], "{report:?}");
  assert_ne!(verdict(&daemon), Verdict::Current);
}

#[test]
fn a_stranger_with_the_ended_jobs_pid_and_start_time_is_refused_and_the_jobs_escapee_still_ends() {
  // Seen in the PID-reuse harness: the stranger took the PID in the job's own clock tick, so
  // the record's identity names it exactly. It carries no mark: refused, never signalled;
  // the job's marked daemon (in a session of its own) is still the job's and is killed. The
  // stranger starts first here, so that the record's start time is no later than the daemon's.
  let (mut stranger, stranger_id) = spawn_marked("sleep 30", Some(&own_mark(5).replace(":0", ":e")));
  let (_job, daemon) = job_with_daemon(&own_mark(5));
  let opts = KillOptions { grace: Duration::from_millis(300), mark: Some(own_mark(5)), require_proof: true, ..Default::default() };
  let report = kill_tree(&stranger_id, &opts).unwrap();
  let stranger_alive = verdict(&stranger_id);
  unsafe { libc::kill(-stranger_id.pid, libc::SIGKILL) };
  stranger.wait().unwrap();
  assert_eq!(stranger_alive, Verdict::Current, "the stranger was signalled: {report:?}");
  assert_eq!(report.refused, vec![Refused { pid: Some(stranger_id.pid), cgroup: None, reason: Refusal::NoProof }]);
  assert_eq!(report.signalled, vec![daemon.pid], "{report:?}");
  assert_ne!(verdict(&daemon), Verdict::Current);
}

#[test]
fn a_stranger_in_the_hosts_group_with_the_jobs_pid_and_start_time_is_refused_and_the_escapee_still_ends() {
  // As above, with a stranger the guard refuses on its own (a plain child of the host, in its
  // process group): refused `host_group`, and the job's marked daemon still ends.
  let mut stranger = std::process::Command::new("sleep").arg("30").spawn().unwrap();
  let stranger_id = crate::identity::identity_of_child(stranger.id() as i32).unwrap();
  let (_job, daemon) = job_with_daemon(&own_mark(6));
  let opts = KillOptions { grace: Duration::from_millis(300), mark: Some(own_mark(6)), require_proof: true, ..Default::default() };
  let report = kill_tree(&stranger_id, &opts).unwrap();
  let stranger_alive = verdict(&stranger_id);
  stranger.kill().unwrap();
  stranger.wait().unwrap();
  assert_eq!(stranger_alive, Verdict::Current, "the stranger was signalled: {report:?}");
  assert_eq!(report.refused, vec![Refused { pid: Some(stranger_id.pid), cgroup: None, reason: Refusal::HostGroup }]);
  assert_eq!(report.signalled, vec![daemon.pid], "{report:?}");
  assert_ne!(verdict(&daemon), Verdict::Current);
}

/// A job that started a daemon in a session of its own (`setsid`) and ended, both carrying
/// `mark`: the job's identity and the daemon's, once the daemon runs.
fn job_with_daemon(mark: &str) -> (Identity, Identity) {
  let (mut job, id) = spawn_marked("(setsid sleep 30 >/dev/null 2>&1 &) ; exit 0", Some(mark));
  job.wait().unwrap();
  let mut daemon = None;
  crate::testwait::until("the daemon", || {
    daemon = crate::membership::marked_processes(&[mark]).into_iter().map(|(_, p)| p).find(|p| p.start_time >= id.start_time);
    daemon.is_some()
  });
  (id, identity(daemon.unwrap().pid).unwrap().unwrap())
}

/// The live members of process group `pgid`, once there are `n` of them.
fn wait_for_group(pgid: i32, n: usize) -> Vec<Identity> {
  let mut found = Vec::new();
  crate::testwait::until("the group's members", || {
    found = process_table()
      .unwrap()
      .into_iter()
      .filter(|p| p.pgid == pgid && !p.is_dead())
      .filter_map(|p| identity(p.pid).ok().flatten())
      .collect();
    found.len() >= n
  });
  found
}

#[test]
fn a_contained_jobs_kill_ends_with_its_cgroup_empty_when_every_snapshotted_process_exited() {
  let Some(_) = crate::cgroup::base() else {
    eprintln!("skipped: this host may not create cgroups");
    return;
  };
  let session = format!("proc_{:012x}", 0xc7_0000_0000u64 + u64::from(std::process::id()));
  let dir = crate::cgroup::create(&session).expect("a cgroup for the session");
  // The job's TERM trap starts a daemon in a session of its own and exits at once (finding 2
  // of issue 25): every snapshotted process ends within the grace period.
  let (mut child, id) = spawn_marked(
    "trap '( setsid sleep 3000 >/dev/null 2>&1 & ); sleep 0.1; exit 0' TERM; echo ready; while :; do sleep 1; done",
    Some(&own_mark(4)),
  );
  std::fs::write(dir.join("cgroup.procs"), id.pid.to_string()).unwrap();
  crate::testwait::until("the trap", || {
    std::fs::read_to_string(format!("/proc/{}/status", id.pid))
      .unwrap_or_default()
      .lines()
      .any(|l| l.starts_with("SigCgt:") && u64::from_str_radix(l[7..].trim(), 16).is_ok_and(|m| m & (1 << (libc::SIGTERM - 1)) != 0))
  });
  let opts = KillOptions {
    grace: Duration::from_millis(1500),
    cgroup: Some(CgroupClaim::new(session.clone(), None)),
    mark: Some(own_mark(4)),
    require_proof: true,
    ..Default::default()
  };
  let report = kill_tree(&id, &opts).unwrap();
  child.wait().unwrap();
  let left: Vec<i32> =
    crate::cgroup::members(&dir).into_iter().filter(|&p| crate::sys::read_stat(p).ok().flatten().is_some_and(|i| !i.is_dead())).collect();
  for &p in &left {
    unsafe { libc::kill(p, libc::SIGKILL) };
  }
  crate::cgroup::remove(&session, &session);
  assert!(left.is_empty(), "{left:?} live in the job's cgroup after its kill: {report:?}");
  // The daemon is reported: SIGTERMed when the mark scan after the first signal found it,
  // or ended by the cgroup's kill (escalated) when it was forked after that scan.
  assert!(report.survivors.is_empty() && (report.escalated || report.signalled.len() >= 3), "{report:?}");
}
