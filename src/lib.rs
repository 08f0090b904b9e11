//! The napi binding of procward: converts between JS values and `procward-core` types and
//! maps core errors to JS errors. No logic lives here.
//!
//! One module per area of the API: `identity` and `probe` (who a process is, batched
//! probes, descendants), `kill` (tree kill), `spawn` (options, events, the call) and `job`
//! (the started job's handle), `terminal` (a PTY job's screen), `watch` (watch patterns),
//! `lockfile` (checkpoint locks), `cgroup` (cleaning up job cgroups), `leftovers` (what an
//! ended job left running).
//! Errors all pass through [`map_error`] here.

#![deny(clippy::all)]

pub mod cgroup;
pub mod identity;
pub mod job;
pub mod jobevent;
pub mod kill;
pub mod leftovers;
pub mod lockfile;
pub mod probe;
pub mod redact;
pub mod spawn;
pub mod terminal;
pub mod watch;

use napi::bindgen_prelude::*;
use procward_core as core;

/// The one place where core errors become JS errors. The message starts with a stable
/// code (`EMFILE: ...`, `EINVAL: ...`); the TypeScript facade lifts it into `error.code`.
fn map_error(e: core::Error) -> Error {
  Error::new(Status::GenericFailure, format!("{}: {}", e.code(), e))
}

/// An `EINVAL` error for a JS value the core cannot take.
fn invalid(msg: impl Into<String>) -> Error {
  map_error(core::Error::InvalidInput(msg.into()))
}
