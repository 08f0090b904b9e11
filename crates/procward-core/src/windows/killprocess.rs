//! One process of a tree kill, held by a handle from the moment it is snapshotted.
//!
//! A handle is the strongest identity Windows has: while it is open the process object
//! lives on (as a dead one once it exits), so its PID is never handed to another process
//! and `TerminateProcess` on it can only reach the process that was snapshotted. Its
//! creation time is read once through the handle and compared with the recorded one.

use std::io;
use std::mem::zeroed;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::time::Instant;
use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, ERROR_INVALID_PARAMETER, FILETIME, HANDLE, WAIT_OBJECT_0, WAIT_TIMEOUT};
use windows_sys::Win32::System::Threading::{
  GetProcessId, GetProcessTimes, OpenProcess, TerminateProcess, WaitForMultipleObjects, WaitForSingleObject, PROCESS_QUERY_INFORMATION,
  PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE, PROCESS_TERMINATE,
};

/// The exit code a terminated process gets (`TerminateProcess`, `TerminateJobObject`), as
/// libuv's `uv_kill(pid, SIGKILL)` gives it.
pub const TERMINATED_EXIT_CODE: u32 = 1;

/// `WaitForMultipleObjects` takes at most this many handles (`MAXIMUM_WAIT_OBJECTS`).
const MAX_WAIT: usize = 64;

/// A process opened for a kill: its PID, its creation time (100 ns units since 1601) and
/// the handle that pins both.
#[derive(Debug)]
pub(crate) struct Process {
  pub(crate) pid: i32,
  pub(crate) start_time: u64,
  handle: OwnedHandle,
}

/// What opening a PID found.
#[derive(Debug)]
pub(crate) enum Opened {
  Process(Process),
  /// No process has this PID (a PID the handle table maps to another is no match either).
  Missing,
  /// It exists but cannot be opened even to read its creation time.
  Unreadable,
}

/// Opens `pid` to wait for it, read its creation time and, where allowed, terminate it and
/// ask which job holds it. Each right is dropped in turn when refused: full query rights
/// (Wine's `IsProcessInJob` wants them), then terminate (a process of another user or
/// integrity level refuses it: only its Job Object can end it).
pub(crate) fn open(pid: i32) -> Opened {
  if pid <= 0 {
    return Opened::Missing;
  }
  let wanted = [
    PROCESS_QUERY_INFORMATION | PROCESS_SYNCHRONIZE | PROCESS_TERMINATE,
    PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE | PROCESS_TERMINATE,
    PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE,
  ];
  let mut raw = std::ptr::null_mut();
  for access in wanted {
    raw = unsafe { OpenProcess(access, 0, pid as u32) };
    if !raw.is_null() || io::Error::last_os_error().raw_os_error() != Some(ERROR_ACCESS_DENIED as i32) {
      break;
    }
  }
  if raw.is_null() {
    let missing = io::Error::last_os_error().raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32);
    return if missing { Opened::Missing } else { Opened::Unreadable };
  }
  let handle = unsafe { OwnedHandle::from_raw_handle(raw) };
  if unsafe { GetProcessId(raw) } as i32 != pid {
    return Opened::Missing;
  }
  match creation_time(raw) {
    Ok(start_time) => Opened::Process(Process { pid, start_time, handle }),
    Err(_) => Opened::Unreadable,
  }
}

fn creation_time(handle: HANDLE) -> io::Result<u64> {
  let mut times: [FILETIME; 4] = unsafe { zeroed() };
  let [created, exited, kernel, user] = &mut times;
  if unsafe { GetProcessTimes(handle, created, exited, kernel, user) } == 0 {
    return Err(io::Error::last_os_error());
  }
  Ok(((times[0].dwHighDateTime as u64) << 32) | times[0].dwLowDateTime as u64)
}

impl Process {
  /// Whether it is still running (its handle is not signalled yet).
  pub(crate) fn running(&self) -> bool {
    let state = unsafe { WaitForSingleObject(self.raw(), 0) };
    state == WAIT_TIMEOUT
  }

  /// `TerminateProcess` with [`TERMINATED_EXIT_CODE`]. Err: the OS error (access denied
  /// without `PROCESS_TERMINATE`; an exiting process may refuse with access denied too).
  pub(crate) fn terminate(&self) -> io::Result<()> {
    if unsafe { TerminateProcess(self.raw(), TERMINATED_EXIT_CODE) } == 0 {
      return Err(io::Error::last_os_error());
    }
    Ok(())
  }

  pub(crate) fn raw(&self) -> HANDLE {
    self.handle.as_raw_handle()
  }
}

/// Waits until every process in `procs` has exited or `deadline` passes, 64 handles at a
/// time (`WaitForMultipleObjects` with `bWaitAll`). Returns whether all have exited.
pub(crate) fn wait_all<'a>(procs: impl IntoIterator<Item = &'a Process>, deadline: Instant) -> bool {
  let handles: Vec<HANDLE> = procs.into_iter().map(Process::raw).collect();
  for chunk in handles.chunks(MAX_WAIT) {
    let left = deadline.saturating_duration_since(Instant::now());
    let ms = left.as_millis().min(u32::MAX as u128 - 1) as u32;
    let r = unsafe { WaitForMultipleObjects(chunk.len() as u32, chunk.as_ptr(), 1, ms) };
    if !(WAIT_OBJECT_0..WAIT_OBJECT_0 + chunk.len() as u32).contains(&r) {
      return false;
    }
  }
  true
}
