//! Whether a running job is stopped: its own process is in state `T` (SIGSTOP, or a stop
//! signal it acted on: Ctrl-Z, SIGTTIN, SIGTTOU), field 3 of `/proc/<pid>/stat` on Linux
//! (`p_stat == SSTOP` through the same probe on macOS).
//!
//! A stopped job still counts as running: it holds its resources and resumes on SIGCONT.
//! Only the job's own process is looked at, never its descendants: a shell that waits for a
//! stopped child is not stopped itself.
//!
//! A durable job's recorded identity is its supervisor's (see `procward-supervise`), which
//! is never stopped by the job's signals; the job is the supervisor's oldest live child
//! that started no earlier than it (orphans the supervisor adopts as a child subreaper
//! start later than the job).

use crate::identity::{judge, Identity, Verdict};
use crate::probe::{probe_one, Probe, ProcessInfo};
use crate::sys;

/// A running job to look at.
#[derive(Debug, Clone)]
pub struct JobRef {
  /// The identity the job was recorded with (its own, or its supervisor's).
  pub identity: Identity,
  /// The identity is the supervisor's of a durable job: look at its job, its child.
  pub supervised: bool,
}

/// For each job, in order: `Some(true)` when its process is stopped, `Some(false)` when it
/// runs (or sleeps), `None` when that cannot be told: the recorded process is gone or its
/// PID reused, a supervisor has no job (yet, or any more), or `/proc` cannot be read. One
/// stat read per job (plus its children list for a supervised one).
pub fn stopped(jobs: &[JobRef]) -> Vec<Option<bool>> {
  let boot_id = sys::boot_id().unwrap_or_default();
  jobs.iter().map(|j| stopped_one(j, &boot_id)).collect()
}

fn stopped_one(job: &JobRef, boot_id: &str) -> Option<bool> {
  let probe = probe_one(job.identity.pid);
  if judge(&job.identity, boot_id, &probe) != Verdict::Current {
    return None;
  }
  let Probe::Found(root) = probe else { return None };
  let own = if job.supervised { job_of(&root)? } else { root };
  Some(own.state == 'T')
}

/// The job a supervisor runs: its oldest live child that started no earlier than it.
fn job_of(supervisor: &ProcessInfo) -> Option<ProcessInfo> {
  children(supervisor)
    .into_iter()
    .filter(|c| !c.is_dead() && c.ppid == supervisor.pid && c.start_time >= supervisor.start_time)
    .min_by_key(|c| (c.start_time, c.pid))
}

/// The live children of `parent`: from its main thread's children list on Linux (the
/// supervisor forks from its only thread), else from one read of the process table.
fn children(parent: &ProcessInfo) -> Vec<ProcessInfo> {
  #[cfg(target_os = "linux")]
  if let Ok(list) = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", parent.pid)) {
    return list
      .split_ascii_whitespace()
      .filter_map(|p| p.parse().ok())
      .filter_map(|pid| match probe_one(pid) {
        Probe::Found(info) => Some(info),
        _ => None,
      })
      .collect();
  }
  sys::process_table().map(|t| t.into_iter().filter(|p| p.ppid == parent.pid).collect()).unwrap_or_default()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
  use super::*;
  use crate::identity::identity_of_child;
  use crate::testwait::until;
  use std::process::Command;

  #[test]
  fn a_job_is_stopped_while_sigstop_holds_it_and_runs_again_after_sigcont() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let id = identity_of_child(child.id() as i32).unwrap();
    let job = [JobRef { identity: id.clone(), supervised: false }];
    assert_eq!(stopped(&job), vec![Some(false)]);
    unsafe { libc::kill(id.pid, libc::SIGSTOP) };
    until("stopped", || stopped(&job) == vec![Some(true)]);
    unsafe { libc::kill(id.pid, libc::SIGCONT) };
    until("running again", || stopped(&job) == vec![Some(false)]);
    // A reused PID tells nothing.
    let wrong = JobRef { identity: Identity { start_time: id.start_time + 1, ..id }, supervised: false };
    assert_eq!(stopped(&[wrong]), vec![None]);
    child.kill().unwrap();
    child.wait().unwrap();
  }

  #[test]
  fn a_supervised_job_is_the_supervisors_child_not_the_supervisor() {
    // A stand-in supervisor: a shell whose first child stops itself while the shell waits.
    let mut sup = Command::new("sh").args(["-c", "sh -c 'kill -STOP $$; exit 0' & wait"]).spawn().unwrap();
    let id = identity_of_child(sup.id() as i32).unwrap();
    let own = [JobRef { identity: id.clone(), supervised: false }];
    let job = [JobRef { identity: id.clone(), supervised: true }];
    until("the job stopped", || stopped(&job) == vec![Some(true)]);
    assert_eq!(stopped(&own), vec![Some(false)], "the supervisor itself runs");
    let child = job_of(&match probe_one(id.pid) {
      Probe::Found(p) => p,
      other => panic!("{other:?}"),
    })
    .unwrap();
    unsafe { libc::kill(child.pid, libc::SIGCONT) };
    sup.wait().unwrap();
  }
}
