//! The tree a kill is about, taken before the first event and again before termination:
//! the root's descendants from one Toolhelp32 snapshot (a ppid map), each created no earlier
//! than its parent (an older "child" names a reused PID and is skipped with its subtree),
//! plus every member of the root's Job Object and their descendants.
//!
//! Each process found is opened at once and held by its handle until the kill ends (see
//! `killprocess`), and passes the guard before it becomes a target; a refused member of the
//! Job Object makes the kill end the job's processes one by one instead of all at once. So
//! does a member created before the root: procward creates the job for its root, so such a
//! member was put there by someone else (`refused_reused`, never touched).

use super::killprocess::{open, Opened, Process};
use super::killrun::{Run, Target};
use crate::guard::Host;
use std::collections::HashMap;

/// Children by parent PID, from one Toolhelp32 snapshot (`guard::parent_map`).
pub(super) fn children_of(parents: &HashMap<i32, i32>) -> HashMap<i32, Vec<i32>> {
  let mut children: HashMap<i32, Vec<i32>> = HashMap::with_capacity(parents.len());
  for (&pid, &ppid) in parents {
    if pid != ppid {
      children.entry(ppid).or_default().push(pid);
    }
  }
  children
}

impl Run<'_> {
  /// Adds the Job Object's members, then the descendants of every target, opening and
  /// judging each new process. Called at the snapshot and again before termination (new
  /// children of live members, new members of the job).
  pub(super) fn walk(&mut self, children: &HashMap<i32, Vec<i32>>, host: &Host) {
    let members = self.job.as_ref().and_then(|j| j.members().ok()).unwrap_or_default();
    for pid in members {
      if self.knows(pid) {
        continue;
      }
      match open(pid) {
        // The job was created for the root, empty: a member older than the root was put in
        // it by someone else (a squatted name). Never touched, and the job never terminated
        // whole.
        Opened::Process(p) if p.start_time < self.root.start_time => {
          self.job_trusted = false;
          Self::note(&mut self.report.refused_reused, p.pid);
        }
        Opened::Process(p) => {
          self.admit(p, host);
        }
        // Held by the job: the job's own termination reaches it, and the report counts it
        // a survivor while the job still lists it.
        Opened::Unreadable => Self::note(&mut self.unopened, pid),
        Opened::Missing => {}
      }
    }
    let mut queue: Vec<(i32, u64)> = self.targets.iter().filter(|t| t.process.running()).map(|t| (t.pid(), t.start_time())).collect();
    while let Some((parent, parent_start)) = queue.pop() {
      for &kid in children.get(&parent).map(Vec::as_slice).unwrap_or_default() {
        if self.knows(kid) {
          continue;
        }
        // A child created before its parent is the child of an earlier holder of the PID.
        if let Opened::Process(p) = open(kid) {
          if p.start_time >= parent_start {
            let (pid, start) = (p.pid, p.start_time);
            if self.admit(p, host) {
              queue.push((pid, start));
            }
          }
        }
      }
    }
  }

  /// Makes `p` a target (true), or lists the guard's refusal (and stops trusting the job
  /// with the whole tree if `p` is in it).
  pub(super) fn admit(&mut self, p: Process, host: &Host) -> bool {
    let in_job = self.job.as_ref().is_some_and(|j| j.holds(&p));
    if let Err(reason) = host.check_process(p.pid, p.start_time) {
      if in_job {
        self.job_trusted = false;
      }
      self.refuse(p.pid, reason);
      return false;
    }
    self.targets.push(Target { process: p, in_job });
    true
  }

  pub(super) fn knows(&self, pid: i32) -> bool {
    self.targets.iter().any(|t| t.pid() == pid)
      || self.is_refused(pid)
      || self.unopened.contains(&pid)
      || self.report.refused_reused.contains(&pid)
  }

  fn is_refused(&self, pid: i32) -> bool {
    self.report.refused.iter().any(|r| r.pid == Some(pid))
  }
}
