//! Tree kill of stopped processes (Linux): SIGCONT right after SIGTERM, so that a stopped
//! job's TERM trap runs; never after SIGKILL or a stop signal. Grace 0 escalates at once.

use super::tests::{spawn_session, wait_for_descendants};
use super::*;

/// Waits until `pid` is stopped (state `T`); panics after 10 s.
fn wait_stopped(pid: i32) {
  let deadline = Instant::now() + Duration::from_secs(10);
  while !matches!(crate::probe::probe_one(pid), crate::probe::Probe::Found(p) if p.state == 'T') {
    assert!(Instant::now() < deadline, "{pid} never stopped");
    std::thread::sleep(Duration::from_millis(10));
  }
}

/// Waits until `path` holds text; panics after 10 s.
fn wait_file(path: &std::path::Path) -> String {
  let deadline = Instant::now() + Duration::from_secs(10);
  loop {
    match std::fs::read_to_string(path) {
      Ok(s) if !s.is_empty() => return s,
      _ => assert!(Instant::now() < deadline, "{} never written", path.display()),
    }
    std::thread::sleep(Duration::from_millis(10));
  }
}

fn temp_file(name: &str) -> std::path::PathBuf {
  let p = std::env::temp_dir().join(format!("procward-kill-{name}-{}", std::process::id()));
  let _ = std::fs::remove_file(&p);
  p
}

#[test]
fn a_stopped_job_runs_its_term_trap_and_is_not_escalated() {
  let file = temp_file("stopped-root");
  let (mut child, id) = spawn_session(&format!("trap 'echo cleaned > {}; exit 0' TERM; kill -STOP $$; sleep 30", file.display()));
  wait_stopped(id.pid);
  let report = kill_tree(&id, &KillOptions { grace: Duration::from_secs(30), ..Default::default() }).unwrap();
  assert!(!report.escalated, "{report:?}");
  assert!(report.survivors.is_empty(), "{report:?}");
  assert_eq!(wait_file(&file), "cleaned\n");
  assert_eq!(child.wait().unwrap().code(), Some(0));
  let _ = std::fs::remove_file(&file);
}

#[test]
fn a_stopped_grandchild_outside_the_group_runs_its_term_trap() {
  // The grandchild leaves the job's group (setsid): it gets SIGTERM on its own, so SIGCONT
  // must follow that signal too, not only the group's.
  let file = temp_file("stopped-grandchild");
  let script = format!("setsid sh -c 'trap \"echo gc-cleaned > {}; exit 0\" TERM; kill -STOP $$; sleep 30' & wait", file.display());
  let (mut child, id) = spawn_session(&script);
  let grandchild = wait_for_descendants(id.pid, 1)[0].pid;
  wait_stopped(grandchild);
  let report = kill_tree(&id, &KillOptions { grace: Duration::from_secs(30), ..Default::default() }).unwrap();
  assert!(!report.escalated, "{report:?}");
  assert!(report.signalled.contains(&grandchild), "{report:?}");
  assert_eq!(wait_file(&file), "gc-cleaned\n");
  child.wait().unwrap();
  let _ = std::fs::remove_file(&file);
}

#[test]
fn a_stopped_grandchild_in_the_group_runs_its_trap_when_the_leader_dies_of_sigterm_first() {
  // The leader (a shell in `wait`) dies of SIGTERM at once; if it is gone before the group's
  // SIGCONT, the members get theirs one by one.
  let file = temp_file("stopped-in-group");
  let script = format!("sh -c 'trap \"echo in-group > {}; exit 0\" TERM; kill -STOP $$; sleep 30' & wait", file.display());
  let (mut child, id) = spawn_session(&script);
  let grandchild = wait_for_descendants(id.pid, 1)[0].pid;
  wait_stopped(grandchild);
  let report = kill_tree(&id, &KillOptions { grace: Duration::from_secs(30), ..Default::default() }).unwrap();
  assert!(!report.escalated, "{report:?}");
  assert_eq!(wait_file(&file), "in-group\n");
  child.wait().unwrap();
  let _ = std::fs::remove_file(&file);
}

#[test]
fn a_stop_signal_is_not_followed_by_sigcont() {
  // `exec`: a shell that forks first (dash vforks) leaves its parent waiting for the child's
  // exec, where a stop signal stays pending.
  let (mut child, id) = spawn_session("exec sleep 30");
  // Grace 0 would SIGKILL at once: the job is watched while the kill waits out its grace.
  let root = id.clone();
  let kill = std::thread::spawn(move || {
    kill_tree(
      &root,
      &KillOptions { signal: Signal::SIGSTOP, grace: Duration::from_secs(3), settle: Duration::from_millis(50), ..Default::default() },
    )
    .unwrap()
  });
  let stopped = std::panic::catch_unwind(|| wait_stopped(id.pid));
  let report = kill.join().unwrap();
  child.wait().unwrap();
  assert!(report.signalled.contains(&id.pid), "{report:?}");
  assert!(report.escalated, "{report:?}");
  assert!(stopped.is_ok(), "the job did not stay stopped");
}

#[test]
fn grace_zero_sigkills_a_job_deaf_to_sigterm_at_once() {
  let (mut child, id) = spawn_session("trap '' TERM; while :; do sleep 1; done");
  super::tests::wait_until_ignored(id.pid, libc::SIGTERM);
  let report = kill_tree(&id, &KillOptions { grace: Duration::ZERO, ..Default::default() }).unwrap();
  assert!(report.escalated, "{report:?}");
  assert!(report.survivors.is_empty(), "{report:?}");
  use std::os::unix::process::ExitStatusExt;
  assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
}

#[test]
fn sigstopped_member_is_killed_by_escalation_not_reported_dead_early() {
  // Stopped and deaf to SIGTERM: SIGCONT lets it run, and only SIGKILL ends it.
  let (mut child, id) = spawn_session("trap '' TERM; kill -STOP $$; sleep 30");
  wait_stopped(id.pid);
  let report = kill_tree(&id, &KillOptions { grace: Duration::from_millis(100), ..Default::default() }).unwrap();
  assert!(report.escalated);
  assert!(report.survivors.is_empty());
  child.wait().unwrap();
}
