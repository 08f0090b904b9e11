//! What an ended job left running (see `procward_core::leftovers`).

use crate::identity::Identity;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use procward_core as core;

/// An ended job to ask `jobLeftovers` about.
#[napi(object)]
pub struct LeftoverQuery {
  /// The identity the job's leader was recorded with (a durable job's: its supervisor's).
  pub leader: Identity,
  /// The job's cgroup as recorded (its name or directory); used only when procward created
  /// it for `sessionId`. Linux only; ignored elsewhere.
  pub cgroup: Option<String>,
  /// The session the cgroup must be named for. Default: `cgroup` itself.
  pub session_id: Option<String>,
  /// The session's mark (`<session id>:<nonce>`, `PROCWARD_SESSION_ID` in its jobs'
  /// environment). Without a well-formed one, only the cgroup proves a leftover.
  pub mark: Option<String>,
}

/// The live processes each ended job left, in order, with their identities: members of its
/// own cgroup, and processes in its own session and process group (both equal to the
/// leader's PID, `/proc/<pid>/stat` fields 6 and 5) that started no earlier than the leader
/// (field 22) on this boot and carry the session's mark in `/proc/<pid>/environ`. Never the leader
/// itself, a zombie, nor anything the kill guard refuses. One pass over the process table
/// for all the queries. Empty on Windows. Errors: `EINVAL` for a malformed start time.
///
/// With `deep`, also every process that carries a query's mark outside the job's group and
/// cgroup (one pass over `/proc` reading each process's environment, for all the queries).
#[napi]
pub fn job_leftovers(queries: Vec<LeftoverQuery>, deep: Option<bool>) -> Result<Vec<Vec<Identity>>> {
  let queries = queries
    .into_iter()
    .map(|q| {
      Ok(core::leftovers::LeftoverQuery {
        leader: q.leader.try_into()?,
        cgroup: q.cgroup.map(|c| core::kill::CgroupClaim::new(c, q.session_id)),
        mark: q.mark,
      })
    })
    .collect::<Result<Vec<_>>>()?;
  let found = if deep.unwrap_or(false) { core::leftovers::leftovers_deep(&queries) } else { core::leftovers::leftovers(&queries) };
  Ok(found.into_iter().map(|found| found.into_iter().map(Identity::from).collect()).collect())
}
