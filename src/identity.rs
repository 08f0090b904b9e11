//! Process identity: who a process is (PID, start time, boot id) and how a recorded identity
//! compares with the live system.

use crate::{invalid, map_error};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use procward_core as core;

/// Who a process is: PID plus start time plus boot id. A PID alone is never enough.
#[napi(object)]
#[derive(Clone)]
pub struct Identity {
  /// Process id.
  pub pid: i32,
  /// Start time as a decimal string (Linux: clock ticks since boot, `/proc/<pid>/stat` field 22).
  pub start_time: String,
  /// Boot id (Linux: `/proc/sys/kernel/random/boot_id`).
  pub boot_id: String,
}

impl From<core::Identity> for Identity {
  fn from(id: core::Identity) -> Self {
    Identity { pid: id.pid, start_time: id.start_time.to_string(), boot_id: id.boot_id }
  }
}

impl TryFrom<Identity> for core::Identity {
  type Error = Error;
  fn try_from(id: Identity) -> Result<Self> {
    let start_time = id.start_time.parse().map_err(|_| invalid(format!("startTime {:?} is not a decimal integer", id.start_time)))?;
    Ok(core::Identity { pid: id.pid, start_time, boot_id: id.boot_id })
  }
}

/// Comparison of a recorded identity with the live system.
#[napi(string_enum = "lowercase")]
pub enum Verdict {
  /// The same process is alive.
  Current,
  /// The PID is alive but is another process (reused PID, or another boot).
  Replaced,
  /// No such PID, or a zombie.
  Gone,
  /// Cannot be read now: treat as alive, never signal.
  Unknown,
}

impl From<core::Verdict> for Verdict {
  fn from(v: core::Verdict) -> Self {
    match v {
      core::Verdict::Current => Verdict::Current,
      core::Verdict::Replaced => Verdict::Replaced,
      core::Verdict::Gone => Verdict::Gone,
      core::Verdict::Unknown => Verdict::Unknown,
    }
  }
}

/// Reads the identity of a live process; `null` when there is no such process or it is a zombie.
#[napi]
pub fn identity(pid: i32) -> Result<Option<Identity>> {
  core::identity::identity(pid)
    .map(|o| o.map(Identity::from))
    .map_err(|e| map_error(core::Error::Io { context: format!("reading identity of {pid}"), source: e }))
}

/// Compares a recorded identity with the live system, reading the kernel now.
#[napi]
pub fn verdict(identity: Identity) -> Result<Verdict> {
  Ok(core::identity::verdict(&identity.try_into()?).into())
}
