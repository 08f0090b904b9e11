//! A bulk kill holds a bounded number of pidfds (issue 25): one per signal, closed after it,
//! and at most the exit waits' 64 while it waits. Its own test binary, because it lowers the
//! process's descriptor limit.
#![cfg(target_os = "linux")]

use procward_core::identity::{identity, verdict, Verdict};
use procward_core::kill::{kill_trees, KillOptions, KillRequest};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Descriptors open in this process now.
fn open_fds() -> u64 {
  std::fs::read_dir("/proc/self/fd").map(|d| d.count() as u64).unwrap_or(0)
}

#[test]
fn a_batch_of_300_trees_is_killed_with_fewer_descriptors_free_than_trees() {
  const TREES: usize = 300;
  let mut children = Vec::new();
  let mut requests = Vec::new();
  for _ in 0..TREES {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "sleep 60 & exec sleep 60"]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // A session of its own, as every job starts.
    unsafe {
      cmd.pre_exec(|| {
        libc::setsid();
        Ok(())
      });
    }
    let child = cmd.spawn().unwrap();
    let id = identity(child.id() as i32).unwrap().unwrap();
    requests.push(KillRequest { root: id, cgroup: None, mark: None });
    children.push(child);
  }
  // Far fewer descriptors left than trees (a kill that held a pidfd per tree, or per member,
  // would run out): what is open now plus 100.
  let limit = open_fds() + 100;
  let old = unsafe {
    let mut old = std::mem::zeroed::<libc::rlimit>();
    libc::getrlimit(libc::RLIMIT_NOFILE, &mut old);
    let lowered = libc::rlimit { rlim_cur: limit, rlim_max: old.rlim_max };
    assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lowered), 0);
    old
  };
  let reports = kill_trees(&requests, &KillOptions { grace: Duration::from_millis(500), ..Default::default() });
  unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) };
  for c in &mut children {
    let _ = c.wait();
  }
  for (report, request) in reports.iter().zip(&requests) {
    let report = report.as_ref().unwrap();
    assert!(report.refused.is_empty(), "{report:?}");
    assert!(report.signalled.contains(&request.root.pid), "{report:?}");
    assert!(report.survivors.is_empty(), "{report:?}");
    assert_ne!(verdict(&request.root), Verdict::Current);
  }
}
