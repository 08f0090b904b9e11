//! What a tree kill reports, and what a batch asks for: the same types on every platform
//! (re-exported by [`kill`](crate::kill), whose Unix and Windows steps fill them).

use crate::guard::Refusal;
use crate::identity::Identity;

/// A cgroup as a record names it, and the session it must be named for (Linux; ignored
/// elsewhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupClaim {
  /// The recorded value: the session id, or the directory an earlier version stored.
  pub recorded: String,
  /// The session id (`proc_` + 12 hex digits) the cgroup must be named for.
  pub session: String,
}

impl CgroupClaim {
  /// The claim of a record that names `recorded`, for `session` (default: `recorded`
  /// itself, as records that name the session id do).
  pub fn new(recorded: String, session: Option<String>) -> Self {
    let session = session.unwrap_or_else(|| recorded.clone());
    CgroupClaim { recorded, session }
  }
}

/// Something a kill refused to touch: a PID (or the group it leads), or a cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
  /// The PID refused, or whose group was refused; `None` for a cgroup.
  pub pid: Option<i32>,
  /// The cgroup refused, as recorded; `None` for a PID (always on Windows).
  pub cgroup: Option<String>,
  pub reason: Refusal,
}

/// What a tree kill did. Each list holds PIDs; a PID appears in `signalled` if it received
/// at least one signal (on Windows: the graceful console event, or termination), and in
/// `survivors` if its identity was still `current` at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KillReport {
  /// Processes that were sent a signal (the group leader included when the group was).
  pub signalled: Vec<i32>,
  /// Processes that were already gone (or zombies) when their turn came.
  pub already_gone: Vec<i32>,
  /// PIDs that were alive but belonged to another process (another start time; on Windows
  /// also members of the root's Job Object created before the root): never touched.
  pub refused_reused: Vec<i32>,
  /// Processes still alive at the end. Non-empty means the kill failed.
  pub survivors: Vec<i32>,
  /// The survivors' identities, so a caller can keep finishing the kill safely. A member
  /// of a Windows Job Object this user may not open is a survivor without one.
  pub survivor_identities: Vec<Identity>,
  /// Whether the forced step ran (SIGKILL; on Windows termination after the graceful
  /// step, or at once where there is no graceful step: no console helper, or Wine 8's
  /// missing Ctrl-Break).
  pub escalated: bool,
  /// What the guard refused to touch, with why. A refused PID is never in `signalled`,
  /// `already_gone` or `survivors`; a refused root means the kill did nothing.
  pub refused: Vec<Refused>,
}

/// One tree of a batch kill (`kill::kill_trees`): its root, the cgroup its record names
/// (see `KillOptions::cgroup`; ignored on Windows) and the session's mark (see
/// `KillOptions::mark`).
#[derive(Debug, Clone)]
pub struct KillRequest {
  pub root: Identity,
  pub cgroup: Option<CgroupClaim>,
  pub mark: Option<String>,
}
