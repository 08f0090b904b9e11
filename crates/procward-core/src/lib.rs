//! procward-core: the kernel-facing half of procward.
//!
//! Everything here is plain Rust with no Node dependency, so it is tested with `cargo test`:
//!
//! - [`identity`]: a process identity is `(pid, start time, boot id)`, never a bare PID, and
//!   comparing one with the live system gives a [`identity::Verdict`].
//! - [`probe`]: batched state reads (state, ppid, pgid, start time) and the process table.
//! - [`tree`]: descendants from one pass over the process table.
//! - [`kill`]: tree kill — snapshot, SIGTERM, grace period, SIGKILL after a fresh identity check.
//! - [`guard`]: what a kill refuses to signal (PID <= 1, the host, its group, session and
//!   ancestors, a group whose leader does not lead its session), whatever a record says.
//! - [`jobstate`]: whether a running job is stopped (its own process, a durable job's too).
//! - [`membership`]: whether a process is a job's, by proof (its cgroup, the session's mark
//!   in its environment), never by a number or a record.
//! - [`pidfd`]: the one place pidfds are opened and signalled through.
//! - [`leftovers`]: what an ended job left running, proved by its cgroup or the session's mark.
//! - [`job`]: what a job is — its options, its events, its launched child — shared by
//!   `spawn`, `launch` and `reader`, so that none of the three imports another in a circle.
//! - [`spawn`]: `<shell> -c <command>` in a new session, with pipe or durable file capture.
//! - [`reader`]: orphan-safe output capture (pipe drain and log-file tail).
//! - `reactor` (crate-private): one thread, on epoll (kqueue on macOS) through `mio`,
//!   follows every live job's output and exit; no thread per job.
//! - [`script`]: long commands handed to the shell through an inherited descriptor.
//! - [`launch`]: starting a job's first process (`clone(CLONE_VM | CLONE_VFORK)` on Linux).
//! - [`pty`]: pseudo-terminals and the job's input side (stdin pipe or PTY master).
//! - [`terminal`]: the emulator a PTY job's output goes through: its screen, and the
//!   answers to its terminal queries (cursor position, device attributes).
//! - `writer` (crate-private): one thread finishes the writes to jobs' inputs that a job
//!   could not take at once, in order, with a timeout.
//! - [`utf8`]: incremental UTF-8 decoding of output chunks.
//! - [`tail`]: the native rolling tail of a job's output.
//! - `cgroup` (Linux): optional per-job cgroup v2 containment.
//! - [`logfile`]: a durable job's log, capped by rotation, and a follower for it.
//! - [`patterns`]: watch patterns, compiled into one linear-time `regex` set per session.
//! - [`lockfile`]: file locks that die with their holder (for the checkpoint; `flock`, or
//!   `LockFileEx` on Windows).
//! - [`status`]: how a job ended (exit code or terminating signal).
//!
//! On Windows, `spawn`, `pty`, `kill` and `guard` are `windows/spawn.rs`, `windows/input.rs`,
//! `windows/kill.rs` and `windows/guard.rs` (the same public API: a Job Object per job,
//! ConPTY for PTY jobs, Ctrl-Break then `TerminateJobObject` for a kill), built on
//! [`windows`]; `reader`
//! is Unix-only (Windows has its own capture thread per job). Identity, probe and tree
//! compile on Linux, macOS and Windows (see `sys`).

#[cfg(target_os = "linux")]
pub mod cgroup;
pub mod error;
#[cfg(unix)]
pub mod guard;
#[cfg(windows)]
#[path = "windows/guard.rs"]
pub mod guard;
pub mod identity;
pub mod job;
pub mod jobstate;
#[cfg(unix)]
pub mod kill;
#[cfg(windows)]
#[path = "windows/kill.rs"]
pub mod kill;
#[cfg(any(unix, windows))]
pub mod killreport;
#[cfg(unix)]
pub mod launch;
pub mod leftovers;
pub mod lockfile;
pub mod logfile;
pub mod membership;
pub mod patterns;
pub mod pidfd;
pub mod probe;
#[cfg(unix)]
pub mod pty;
#[cfg(windows)]
#[path = "windows/input.rs"]
pub mod pty;
#[cfg(unix)]
mod reactor;
#[cfg(unix)]
pub mod reader;
pub mod redact;
#[cfg(unix)]
pub mod script;
#[cfg(unix)]
pub mod spawn;
#[cfg(windows)]
#[path = "windows/spawn.rs"]
pub mod spawn;
pub mod started;
pub mod status;
pub mod tail;
pub mod terminal;
#[cfg(test)]
mod testwait;
pub mod tree;
#[cfg(unix)]
mod unixpipe;
pub mod utf8;
#[cfg(windows)]
pub mod windows;
#[cfg(unix)]
mod writer;

mod sys;
pub use sys::COARSE_START_TIME;

pub use error::{Error, Result};
pub use identity::{Identity, Verdict};
