//! Windows building blocks shared by the Windows modules of the core (`cfg(windows)`).
//!
//! The crate's public API is the same on every platform: on Windows, `spawn` is
//! `windows/spawn.rs` and `pty` is `windows/input.rs` (wired in `lib.rs` with `#[path]`).
//! What they build on lives here, so the durable supervisor and the tree kill reuse it:
//!
//! - [`process`]: [`launch`](process::launch) — `CreateProcessW` suspended, in a new process
//!   group with its own hidden console (or a pseudoconsole), assigned to a named Job Object,
//!   then resumed;
//! - [`cmdline`]: the command line (`cmd.exe`'s `/s` rule, the C runtime's quoting for other
//!   shells, the length limits), the environment block and the lookup of the shell;
//! - [`jobobject`]: the Job Object named after the job's identity
//!   (`Local\procward-job-<pid>-<start_time>`), created with `KILL_ON_JOB_CLOSE`;
//! - [`pipe`]: the pipes between the host and the job (an overlapped named pipe for output);
//! - `conpty` (crate-private): pseudoconsoles (ConPTY);
//! - [`durable`]: durable jobs, the host's side (starting `procward-supervise.exe`, following its files);
//! - `reader` (crate-private): the thread that captures a job's output and its exit.

pub mod cmdline;
pub(crate) mod conpty;
pub mod durable;
pub mod jobobject;
pub mod pipe;
pub mod process;
pub(crate) mod reader;
