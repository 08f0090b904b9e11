//! Process trees: descendants found in one pass over the process table.

use crate::error::Result;
use crate::probe::{process_table, ProcessInfo};
use std::collections::{HashMap, HashSet};

/// All descendants of `root_pid` in `table` (not including the root), parents before
/// children. A "child" whose start time is earlier than its parent's cannot be its child:
/// its ppid points at a PID that was reused, so it is skipped with its own subtree.
/// Zombies are included (callers decide what a dead member means to them).
pub fn descendants_in(table: &[ProcessInfo], root_pid: i32, root_start: u64) -> Vec<ProcessInfo> {
  let mut children: HashMap<i32, Vec<&ProcessInfo>> = HashMap::with_capacity(table.len());
  for p in table {
    if p.pid != p.ppid {
      children.entry(p.ppid).or_default().push(p);
    }
  }
  let mut out = Vec::new();
  let mut seen = HashSet::new();
  let mut queue = vec![(root_pid, root_start)];
  while let Some((pid, start)) = queue.pop() {
    let Some(kids) = children.get(&pid) else { continue };
    for kid in kids {
      if kid.start_time < start || !seen.insert(kid.pid) {
        continue;
      }
      out.push(**kid);
      queue.push((kid.pid, kid.start_time));
    }
  }
  out
}

/// Members of process group `pgid` that started no earlier than `min_start` (the group
/// leader's start time): a process group cannot outlive all its members, so such a
/// process belongs to the group the leader created.
pub fn group_members_in(table: &[ProcessInfo], pgid: i32, min_start: u64) -> Vec<ProcessInfo> {
  table.iter().filter(|p| p.pgid == pgid && p.start_time >= min_start).copied().collect()
}

/// Descendants of a live process, read in one pass over the process table. Returns an
/// empty list when the root is not in the table.
pub fn descendants(root_pid: i32) -> Result<Vec<ProcessInfo>> {
  let table = process_table()?;
  let Some(root) = table.iter().find(|p| p.pid == root_pid) else { return Ok(Vec::new()) };
  Ok(descendants_in(&table, root.pid, root.start_time))
}

#[cfg(test)]
mod tests {
  use super::*;

  fn p(pid: i32, ppid: i32, start: u64) -> ProcessInfo {
    ProcessInfo { pid, ppid, pgid: pid, state: 'S', start_time: start }
  }

  #[test]
  fn finds_children_and_grandchildren() {
    let table = [p(1, 0, 0), p(10, 1, 100), p(11, 10, 110), p(12, 11, 120), p(20, 1, 90)];
    let mut pids: Vec<_> = descendants_in(&table, 10, 100).iter().map(|p| p.pid).collect();
    pids.sort();
    assert_eq!(pids, vec![11, 12]);
  }

  #[test]
  fn a_child_older_than_its_parent_is_not_a_child() {
    // PID 10 was reused at tick 200; 11 was the child of the old PID 10.
    let table = [p(10, 1, 200), p(11, 10, 150), p(12, 11, 160), p(13, 10, 210)];
    let pids: Vec<_> = descendants_in(&table, 10, 200).iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![13]);
  }

  #[test]
  fn group_members_exclude_older_processes() {
    let mut a = p(30, 1, 50);
    a.pgid = 10;
    let mut b = p(31, 1, 150);
    b.pgid = 10;
    let pids: Vec<_> = group_members_in(&[a, b], 10, 100).iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![31]);
  }

  #[cfg(target_os = "linux")]
  #[test]
  fn live_tree_of_a_real_shell() {
    let mut child = std::process::Command::new("sh").args(["-c", "sleep 5 & sleep 5 & wait"]).spawn().unwrap();
    let pid = child.id() as i32;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let found = loop {
      let d = descendants(pid).unwrap();
      if d.len() >= 2 || std::time::Instant::now() > deadline {
        break d;
      }
      std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(found.len(), 2);
    for d in &found {
      unsafe { libc::kill(d.pid, libc::SIGKILL) };
    }
    child.wait().unwrap();
  }
}
