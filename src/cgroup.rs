//! Cleaning up job cgroups (Linux cgroup v2; no-ops elsewhere).

use napi_derive::napi;
#[cfg(target_os = "linux")]
use procward_core as core;

/// Removes a job's cgroup if it is empty; returns whether it is gone. `cgroup` is as
/// recorded (the session id, or the directory an earlier version recorded), `sessionId` the
/// session it must be named for (default: `cgroup` itself). A cgroup procward did not
/// create (another place, another name, a link) is never removed: false. Best effort.
#[napi]
pub fn remove_cgroup(cgroup: String, session_id: Option<String>) -> bool {
  #[cfg(target_os = "linux")]
  return core::cgroup::remove(&cgroup, session_id.as_deref().unwrap_or(&cgroup));
  #[cfg(not(target_os = "linux"))]
  {
    let _ = (cgroup, session_id);
    true
  }
}

/// Removes every empty job cgroup (jobs that ended); running jobs' cgroups are never touched.
/// Returns how many were removed (0 where there is no containment).
#[napi]
pub fn sweep_cgroups() -> u32 {
  #[cfg(target_os = "linux")]
  return core::cgroup::sweep_empty() as u32;
  #[cfg(not(target_os = "linux"))]
  0
}
