//! Tree kill against real process trees (Linux).

use super::settle::dying;
use super::*;
use crate::guard::Host;
use crate::identity::{identity, verdict};
use crate::probe::{process_table, ProcessInfo};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

pub(super) fn spawn_session(script: &str) -> (Child, Identity) {
  spawn_marked(script, None)
}

/// A mark of the shape the registry draws (see `crate::membership`).
pub(super) const MARK: &str = "proc_0000000000aa:0123456789abcdef0123456789abcdef";

/// `sh -c script` in a session of its own, carrying `mark` when given.
pub(super) fn spawn_marked(script: &str, mark: Option<&str>) -> (Child, Identity) {
  let mut cmd = Command::new("sh");
  cmd.args(["-c", script]);
  if let Some(mark) = mark {
    cmd.env(crate::membership::MARK_VAR, mark);
  }
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

/// Whether `pid` ignores `sig` now (`/proc/<pid>/status`, `SigIgn`): a shell that was told
/// to `trap '' TERM` has not necessarily run that line yet when the test sees its process.
pub(super) fn ignores(pid: i32, sig: i32) -> bool {
  let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
  let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:")).and_then(|m| u64::from_str_radix(m.trim(), 16).ok());
  mask.is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

pub(super) fn wait_until_ignored(pid: i32, sig: i32) {
  crate::testwait::until(&format!("{pid} to ignore signal {sig}"), || ignores(pid, sig));
}

pub(super) fn wait_for_descendants(pid: i32, n: usize) -> Vec<ProcessInfo> {
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
  wait_until_ignored(id.pid, libc::SIGTERM);
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
fn the_host_itself_is_refused_and_never_signalled() {
  let me = identity(std::process::id() as i32).unwrap().unwrap();
  // Should the guard fail, SIGCONT and then (grace 0) SIGKILL reach this test process: a loud failure, never a pass.
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
  // A deadline an hour away: only seeing the survivor neither dying nor disappearing ends
  // the wait (the channel's bound only turns a hang into a failure).
  let (done, returned) = std::sync::mpsc::channel();
  let root = id.clone();
  std::thread::spawn(move || {
    let target = Target { pid: root.pid, start_time: root.start_time, pgid: root.pid };
    let run = Run {
      root: &root,
      host: Host::current(),
      cgroup: None,
      group_is_jobs: true,
      members_need_proof: false,
      mark: None,
      marked: Vec::new(),
      boot_id: root.boot_id.clone(),
      targets: vec![target],
      report: KillReport::default(),
    };
    let left = super::settle::settle_longer(&[run], &[0], vec![vec![target]], Instant::now() + Duration::from_secs(3600));
    done.send(left[0].len()).unwrap();
  });
  let left = returned.recv_timeout(Duration::from_secs(600));
  unsafe { libc::kill(-id.pid, libc::SIGKILL) };
  child.wait().unwrap();
  assert_eq!(left, Ok(1), "settle_longer waited for its deadline");
}

#[test]
fn a_batch_kills_every_tree_with_its_own_report_in_one_grace_period() {
  // Each tree records, when its SIGTERM arrives, the state of every tree's root
  // (`/proc/<pid>/stat` field 3, read by shell builtins alone): a tree SIGKILLed already
  // shows as a zombie (the test reaps the roots only at the end).
  let dir = std::env::temp_dir().join(format!("procward-batch-{}", std::process::id()));
  std::fs::create_dir_all(&dir).unwrap();
  let d = dir.display();
  let script = format!(
    "trap '' TERM; sleep 30 & sleep 30 & \
     rec() {{ read -r roots < {d}/roots; out=; for p in $roots; do l=; read -r l < /proc/$p/stat; set -- $l; out=\"$out$p ${{3:-gone}} \"; done; echo \"$out\" > {d}/term.$$; }}; \
     trap rec TERM; : > {d}/ready.$$; while :; do wait; done"
  );
  let trees: Vec<_> = (0..6).map(|_| spawn_session(&script)).collect();
  let roots: Vec<String> = trees.iter().map(|(_, id)| id.pid.to_string()).collect();
  std::fs::write(dir.join("roots"), roots.join(" ")).unwrap();
  for (_, id) in &trees {
    assert_eq!(wait_for_descendants(id.pid, 2).len(), 2);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !dir.join(format!("ready.{}", id.pid)).exists() {
      assert!(Instant::now() < deadline, "tree {} never set its trap", id.pid);
      std::thread::sleep(Duration::from_millis(10));
    }
  }
  let (mut gone_child, gone) = spawn_session("exit 0");
  gone_child.wait().unwrap();
  let reused = Identity { start_time: trees[0].1.start_time + 1, ..trees[0].1.clone() };
  let mut requests: Vec<KillRequest> = trees.iter().map(|(_, id)| KillRequest { root: id.clone(), cgroup: None, mark: None }).collect();
  requests.push(KillRequest { root: gone.clone(), cgroup: None, mark: None });
  requests.push(KillRequest { root: reused, cgroup: None, mark: None });
  let grace = Duration::from_millis(300);
  let reports: Vec<KillReport> =
    kill_trees(&requests, &KillOptions { grace, ..Default::default() }).into_iter().map(Result::unwrap).collect();
  // One shared grace period: every tree got its SIGTERM while no tree had been SIGKILLed
  // (kills one after another would show the earlier roots as zombies).
  for (_, id) in &trees {
    let seen = std::fs::read_to_string(dir.join(format!("term.{}", id.pid))).expect("every tree trapped its SIGTERM");
    let states: Vec<&str> = seen.split_whitespace().collect();
    assert_eq!(states.len(), 2 * trees.len(), "{seen}");
    assert!(states.chunks(2).all(|s| s[1] != "Z" && s[1] != "gone"), "tree {} saw a tree already dead: {seen}", id.pid);
  }
  std::fs::remove_dir_all(&dir).unwrap();
  for (report, (child, id)) in reports.iter().zip(trees) {
    assert!(report.escalated && report.survivors.is_empty(), "{report:?}");
    // The root, its two sleeps (the shell's subshell forks, if any, are members too).
    assert!(report.signalled.contains(&id.pid) && report.signalled.len() >= 3, "{report:?}");
    let mut child = child;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
  }
  assert_eq!(reports[6].already_gone, vec![gone.pid]);
  assert!(reports[6].signalled.is_empty());
  assert_eq!(reports[7].refused_reused, vec![requests[7].root.pid]);
  assert!(reports[7].signalled.is_empty());
}

#[test]
fn the_walked_tree_is_the_tree_one_read_of_the_table_shows() {
  let (mut child, id) = spawn_session("for i in 1 2 3; do (sleep 30 & sleep 30 & wait) & done; setsid sleep 30 & wait");
  // Three subshells with two sleeps each, and the escaped sleep (more if sh forks for `setsid`).
  wait_for_descendants(id.pid, 10);
  let root = crate::sys::read_stat(id.pid).unwrap().unwrap();
  let mut walked: Vec<i32> = super::children::tree_of(&root, &[]).expect("children lists").iter().map(|p| p.pid).collect();
  let mut listed: Vec<i32> =
    crate::tree::descendants_in(&process_table().unwrap(), id.pid, id.start_time).iter().filter(|p| !p.is_dead()).map(|p| p.pid).collect();
  walked.sort_unstable();
  listed.sort_unstable();
  assert_eq!(walked, listed);
  assert!(walked.len() >= 10, "{walked:?}");
  unsafe { libc::kill(-id.pid, libc::SIGKILL) };
  for p in walked {
    unsafe { libc::kill(p, libc::SIGKILL) };
  }
  child.wait().unwrap();
}

#[test]
fn the_walk_reads_the_children_of_every_thread() {
  let me = crate::sys::read_stat(std::process::id() as i32).unwrap().unwrap();
  let (started, finish) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
  // The child's parent is the thread that forked it, which lives on until it is found.
  let thread = std::thread::spawn(move || {
    let mut c = Command::new("sleep").arg("30").spawn().unwrap();
    started.0.send(c.id() as i32).unwrap();
    finish.1.recv().unwrap();
    c.kill().unwrap();
    c.wait().unwrap();
  });
  let pid = started.1.recv().unwrap();
  let tree = super::children::tree_of(&me, &[]).expect("children lists");
  finish.0.send(()).unwrap();
  thread.join().unwrap();
  assert!(tree.iter().any(|p| p.pid == pid), "{pid} not in {tree:?}");
}

#[test]
fn an_orphan_of_the_job_adopted_elsewhere_is_killed_with_the_tree() {
  // The subshell exits at once, so its sleep (still in the job's group and session, and
  // deaf to SIGTERM) is adopted by a reaper above the job: never the root's descendant.
  let (mut child, id) = spawn_session("(trap '' TERM; sleep 30 &); sleep 30");
  let deadline = Instant::now() + Duration::from_secs(5);
  let orphan = loop {
    let table = process_table().unwrap();
    let members = crate::tree::group_members_in(&table, id.pid, id.start_time);
    if let Some(p) = members.iter().find(|p| p.pid != id.pid && p.ppid != id.pid && !p.is_dead()) {
      break identity(p.pid).unwrap().unwrap();
    }
    assert!(Instant::now() < deadline, "no orphan in {members:?}");
    std::thread::sleep(Duration::from_millis(10));
  };
  let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(200), ..Default::default() }).unwrap();
  child.wait().unwrap();
  assert!(report.escalated && report.survivors.is_empty(), "{report:?}");
  assert!(report.signalled.contains(&orphan.pid), "{report:?}");
  assert_eq!(verdict(&orphan), Verdict::Gone);
}

#[test]
fn signals_are_named_as_kill_options_take_them_and_a_claim_defaults_to_its_own_name() {
  assert_eq!(signal_named("TERM").unwrap(), Signal::SIGTERM);
  assert_eq!(signal_named("sigkill").unwrap(), Signal::SIGKILL);
  assert!(matches!(signal_named("SIGNOPE"), Err(Error::InvalidInput(_))));
  let own = CgroupClaim::new("proc_0123456789ab".into(), None);
  assert_eq!(own.session, "proc_0123456789ab");
  assert_eq!(CgroupClaim::new("/old/dir".into(), Some("proc_0123456789ab".into())).session, "proc_0123456789ab");
}

#[test]
fn a_process_that_escapes_during_the_grace_period_is_found_before_sigkill() {
  // The root survives SIGTERM (its trap is set before its sleep starts), and the SIGTERM
  // itself (so after the snapshot, whatever the load) makes it start a sleep in a session
  // of its own, which no group signal reaches.
  let (mut child, id) = spawn_session("trap 'setsid sleep 30 &' TERM; sleep 30 & while :; do wait; done");
  assert_eq!(wait_for_descendants(id.pid, 1).len(), 1);
  let report = kill_tree(&id, &KillOptions { grace: Duration::from_secs(1), ..Default::default() }).unwrap();
  child.wait().unwrap();
  assert!(report.escalated && report.survivors.is_empty(), "{report:?}");
  // The root, its first sleep (by the group signal) and the escaped one (SIGKILL of its own).
  assert_eq!(report.signalled.len(), 3, "{report:?}");
  for &pid in &report.signalled {
    assert!(!crate::probe::probe_one(pid).is_alive(), "{pid} survived");
  }
}

#[test]
fn a_group_member_the_walk_cannot_reach_is_escalated_when_the_root_dies() {
  // A member of the job's group whose parent left the session (`setsid`) after forking it,
  // under a parent that exited: neither the root's descendant nor an orphan of the session.
  // The member ignores SIGTERM; the root dies of it, leaving no known member alive.
  let (mut child, id) = spawn_session("(sh -c '(trap \"\" TERM; exec sleep 30) & exec setsid sleep 30' &); exec sleep 30");
  let deadline = Instant::now() + Duration::from_secs(5);
  let (member, parent) = loop {
    let table = process_table().unwrap();
    let left_session = |pid: i32| crate::guard::session_of(pid).is_some_and(|sid| sid != id.pid);
    let members = crate::tree::group_members_in(&table, id.pid, id.start_time);
    // Until the subshell between the root and the member's parent has exited, the walk
    // still reaches the member through it: wait for that too (a loaded machine runs the
    // subshell's exit late).
    let root = crate::sys::read_stat(id.pid).unwrap().unwrap();
    let walked = super::children::tree_of(&root, &[]).expect("children lists");
    let unreachable = |p: &&crate::probe::ProcessInfo| !walked.iter().any(|w| w.pid == p.pid);
    if let Some(p) =
      members.iter().filter(unreachable).find(|p| p.pid != id.pid && !p.is_dead() && left_session(p.ppid) && ignores(p.pid, libc::SIGTERM))
    {
      break (identity(p.pid).unwrap().unwrap(), identity(p.ppid).unwrap().unwrap());
    }
    assert!(Instant::now() < deadline, "no member out of the walk's reach under a parent of another session in {members:?}");
    std::thread::sleep(Duration::from_millis(10));
  };
  let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(300), ..Default::default() }).unwrap();
  child.wait().unwrap();
  let alive = verdict(&member) == Verdict::Current;
  for p in [&member, &parent] {
    if verdict(p) == Verdict::Current {
      unsafe { libc::kill(p.pid, libc::SIGKILL) };
    }
  }
  assert!(!alive, "{member:?} survived: {report:?}");
  assert!(report.escalated && report.survivors.is_empty() && report.signalled.contains(&member.pid), "{report:?}");
}

#[test]
fn a_replaced_leader_leaves_the_jobs_cgroup_to_be_cleaned_up_and_its_pids_group_alone() {
  let Some(_) = crate::cgroup::base() else {
    eprintln!("skipped: this host may not create cgroups");
    return;
  };
  // The newcomer holding the leader's recorded PID leads a group of its own, whose member
  // started after the recorded leader (as a PID's next owner does).
  let (mut stranger, now_at_pid) = spawn_session("sleep 30 & wait");
  let member = wait_for_descendants(now_at_pid.pid, 1)[0];
  let session = format!("proc_{:012x}", 0xc8_0000_0000u64 + u64::from(std::process::id()));
  let dir = crate::cgroup::create(&session).expect("a cgroup for the session");
  // A daemon the job left: in the job's cgroup, in no tree or group the record names.
  let (mut daemon, daemon_id) = spawn_session("sleep 30");
  std::fs::write(dir.join("cgroup.procs"), daemon_id.pid.to_string()).unwrap();
  let recorded = Identity { start_time: now_at_pid.start_time - 1, ..now_at_pid.clone() };
  let opts = KillOptions { grace: Duration::from_millis(300), cgroup: Some(CgroupClaim::new(session.clone(), None)), ..Default::default() };
  let report = kill_tree(&recorded, &opts).unwrap();
  let daemon_gone = daemon.try_wait().unwrap().is_some() || verdict(&daemon_id) != Verdict::Current;
  let stranger_left = verdict(&now_at_pid) == Verdict::Current;
  let member_left = identity(member.pid).unwrap().is_some_and(|i| i.start_time == member.start_time);
  unsafe { libc::kill(-now_at_pid.pid, libc::SIGKILL) };
  stranger.wait().unwrap();
  let _ = daemon.kill();
  daemon.wait().unwrap();
  crate::cgroup::remove(&session, &session);
  assert_eq!(report.refused_reused, vec![now_at_pid.pid], "{report:?}");
  assert!(report.signalled.contains(&daemon_id.pid) && report.survivors.is_empty(), "{report:?}");
  assert!(daemon_gone, "the cgroup's daemon survived: {report:?}");
  assert!(stranger_left && member_left, "the PID's new owner or its group was signalled: {report:?}");
  assert!(!report.signalled.contains(&now_at_pid.pid) && !report.signalled.contains(&member.pid), "{report:?}");
}
