//! Platform choice, made once at compile time. Each platform module offers the same three
//! reads: one process's stat, the boot id, and the whole process table. They return
//! [`ProcessInfo`], defined here and published as `probe::ProcessInfo`.
//!
//! | platform | start time | unit | tested |
//! |---|---|---|---|
//! | Linux | `/proc/<pid>/stat` field 22 | clock ticks since boot | yes |
//! | macOS | `proc_pidinfo` `pbi_start_tv{sec,usec}` | µs since the epoch | compiled only |
//! | Windows | `GetProcessTimes` creation time | 100 ns since 1601 | compiled only |
//! | others | `sysinfo` (coarse) | seconds since the epoch | no |

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod platform;

#[cfg(target_os = "macos")]
#[path = "macos.rs"]
mod platform;

#[cfg(windows)]
#[path = "windows.rs"]
mod platform;

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
#[path = "coarse.rs"]
mod platform;

pub(crate) use platform::{boot_id, process_table, read_stat};
#[cfg(target_os = "linux")]
pub(crate) use platform::{open_proc_dir, parse_stat, read_in, read_proc_file};

/// One process as the kernel reports it.
///
/// On Linux every field comes from `/proc/<pid>/stat`: `state` is field 3, `ppid` field 4,
/// `pgid` field 5 and `start_time` field 22 (clock ticks since boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessInfo {
  pub pid: i32,
  pub ppid: i32,
  pub pgid: i32,
  /// Kernel state letter: `R`, `S`, `D`, `T`, `t`, `Z` (zombie), `X` (dead), ...
  pub state: char,
  /// Start time in the platform's unit (Linux: clock ticks since boot).
  pub start_time: u64,
}

impl ProcessInfo {
  /// A zombie (or a dead task) has exited: it only waits to be reaped, and it is dead
  /// for every purpose of procward even though `kill(pid, 0)` still succeeds on it.
  pub fn is_dead(&self) -> bool {
    matches!(self.state, 'Z' | 'X' | 'x')
  }
}

/// Whether start times on this platform are coarse (one second), so identities can collide.
pub const COARSE_START_TIME: bool = cfg!(not(any(target_os = "linux", target_os = "macos", windows)));
