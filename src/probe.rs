//! Probes of many PIDs at once, and the descendants of one, as JS objects.

use crate::identity::Identity;
use crate::map_error;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use procward_core as core;

/// One PID's state as the kernel reports it (Linux: one read of `/proc/<pid>/stat`).
#[napi(object)]
pub struct ProbeResult {
  pub pid: i32,
  /// Present and not a zombie.
  pub alive: bool,
  /// Whether a process with this PID exists at all (zombies included).
  pub exists: bool,
  /// Kernel state letter (`R`, `S`, `D`, `T`, `Z`, ...), field 3.
  pub state: Option<String>,
  /// Parent PID, field 4.
  pub ppid: Option<i32>,
  /// Process group id, field 5.
  pub pgid: Option<i32>,
  /// Start time (decimal string, clock ticks since boot), field 22.
  pub start_time: Option<String>,
  /// Why the PID could not be read (then `alive` is false and `exists` unknown-false).
  pub error: Option<String>,
}

/// A process found in a tree, with the identity that makes it safe to signal later.
#[napi(object)]
pub struct ProcessEntry {
  pub pid: i32,
  pub ppid: i32,
  pub pgid: i32,
  /// Kernel state letter.
  pub state: String,
  /// Not a zombie.
  pub alive: bool,
  pub identity: Identity,
}

fn entry(p: &core::probe::ProcessInfo, boot_id: &str) -> ProcessEntry {
  ProcessEntry {
    pid: p.pid,
    ppid: p.ppid,
    pgid: p.pgid,
    state: p.state.to_string(),
    alive: !p.is_dead(),
    identity: Identity { pid: p.pid, start_time: p.start_time.to_string(), boot_id: boot_id.to_string() },
  }
}

/// Probes many PIDs at once (one stat read each). Never throws for a missing PID.
#[napi]
pub fn probe(pids: Vec<i32>) -> Vec<ProbeResult> {
  core::probe::probe(&pids)
    .into_iter()
    .zip(pids)
    .map(|(p, pid)| match p {
      core::probe::Probe::Found(i) => ProbeResult {
        pid,
        alive: !i.is_dead(),
        exists: true,
        state: Some(i.state.to_string()),
        ppid: Some(i.ppid),
        pgid: Some(i.pgid),
        start_time: Some(i.start_time.to_string()),
        error: None,
      },
      core::probe::Probe::Missing => {
        ProbeResult { pid, alive: false, exists: false, state: None, ppid: None, pgid: None, start_time: None, error: None }
      }
      core::probe::Probe::Unreadable(e) => {
        ProbeResult { pid, alive: false, exists: false, state: None, ppid: None, pgid: None, start_time: None, error: Some(e) }
      }
    })
    .collect()
}

/// Descendants of `pid` (not including it), from one pass over the process table.
/// Empty when `pid` does not exist.
#[napi]
pub fn descendants(pid: i32) -> Result<Vec<ProcessEntry>> {
  let boot_id = core::identity::boot_id().unwrap_or_default();
  Ok(core::tree::descendants(pid).map_err(map_error)?.iter().map(|p| entry(p, &boot_id)).collect())
}
