//! Platform choice, made once at compile time. Each platform module offers the same three
//! reads: one process's stat, the boot id, and the whole process table.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::{boot_id, process_table, read_stat};

#[cfg(not(target_os = "linux"))]
mod unsupported;
#[cfg(not(target_os = "linux"))]
pub(crate) use unsupported::{boot_id, process_table, read_stat};
