//! Platform choice, made once at compile time. Each platform module offers the same three
//! reads: one process's stat, the boot id, and the whole process table.
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

/// Whether start times on this platform are coarse (one second), so identities can collide.
pub const COARSE_START_TIME: bool = cfg!(not(any(target_os = "linux", target_os = "macos", windows)));
