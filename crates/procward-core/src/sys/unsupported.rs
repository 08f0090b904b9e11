//! Placeholder for platforms whose identity source is not written yet (macOS: proc_pidinfo
//! start time in microseconds; Windows: creation time in 100 ns units; see DESIGN section 2).
//! Every read reports `Unsupported`, which the identity layer turns into the verdict
//! `unknown`: alive for bookkeeping, never signalled.

use crate::probe::ProcessInfo;
use std::io;

fn unsupported() -> io::Error {
  io::Error::new(io::ErrorKind::Unsupported, "process identity is not implemented on this platform yet")
}

pub(crate) fn read_stat(_pid: i32) -> io::Result<Option<ProcessInfo>> {
  Err(unsupported())
}

pub(crate) fn boot_id() -> io::Result<String> {
  Err(unsupported())
}

pub(crate) fn process_table() -> io::Result<Vec<ProcessInfo>> {
  Err(unsupported())
}
