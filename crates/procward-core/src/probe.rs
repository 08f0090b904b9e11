//! Batched state probes: what the kernel says about a set of PIDs right now.
//!
//! A probe costs one read of `/proc/<pid>/stat` per PID on Linux: no `ps`, no full
//! process-table refresh.

use crate::error::{Error, Result};
use crate::sys;

// Defined beside the platform reads that fill it, so that `sys` needs nothing from here.
pub use crate::sys::ProcessInfo;

/// The result of probing one PID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
  /// The process exists (possibly as a zombie; see [`ProcessInfo::is_dead`]).
  Found(ProcessInfo),
  /// No process has this PID.
  Missing,
  /// The process table could not be read for this PID (permissions, unsupported platform).
  Unreadable(String),
}

impl Probe {
  /// Alive means present and not a zombie.
  pub fn is_alive(&self) -> bool {
    matches!(self, Probe::Found(info) if !info.is_dead())
  }
}

/// Probes one PID.
pub fn probe_one(pid: i32) -> Probe {
  match sys::read_stat(pid) {
    Ok(Some(info)) => Probe::Found(info),
    Ok(None) => Probe::Missing,
    Err(e) => Probe::Unreadable(e.to_string()),
  }
}

/// Probes many PIDs, in order, one stat read each.
pub fn probe(pids: &[i32]) -> Vec<Probe> {
  pids.iter().map(|&pid| probe_one(pid)).collect()
}

/// Every process on the system, read in one pass (`/proc` on Linux).
pub fn process_table() -> Result<Vec<ProcessInfo>> {
  sys::process_table().map_err(|e| Error::io("reading the process table", e))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
  use super::*;

  #[test]
  fn probes_self_as_alive_and_a_missing_pid_as_missing() {
    let me = std::process::id() as i32;
    let out = probe(&[me, i32::MAX]);
    assert!(out[0].is_alive());
    assert_eq!(out[1], Probe::Missing);
  }

  #[test]
  fn a_zombie_is_found_but_not_alive() {
    let child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id() as i32;
    // Not reaped yet: it stays a zombie until we wait.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
      match probe_one(pid) {
        Probe::Found(info) if info.is_dead() => break,
        _ if std::time::Instant::now() > deadline => panic!("child never became a zombie"),
        _ => std::thread::sleep(std::time::Duration::from_millis(5)),
      }
    }
    assert!(!probe_one(pid).is_alive());
    let mut child = child;
    child.wait().unwrap();
  }

  #[test]
  fn the_table_contains_this_process() {
    let me = std::process::id() as i32;
    assert!(process_table().unwrap().iter().any(|p| p.pid == me));
  }
}
