//! Windows (compiled here, untested until a Windows CI runner exists).
//!
//! - start time: the process creation time from `GetProcessTimes`, in 100 ns units since
//!   1601-01-01 (absolute, so it already differs across boots);
//! - boot id: a constant, because creation times are absolute;
//! - ppid: from a ToolHelp snapshot in `process_table`; a single `read_stat` reports 0;
//! - pgid: Windows has no process groups; the PID itself is reported.

use super::ProcessInfo;
use std::io;
use std::mem::{size_of, zeroed};
use windows_sys::Win32::Foundation::{CloseHandle, ERROR_INVALID_PARAMETER, FILETIME, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
  CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, GetProcessTimes, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};

const STILL_ACTIVE: u32 = 259;

fn creation(pid: i32) -> io::Result<Option<(u64, bool)>> {
  let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid as u32) };
  if handle.is_null() {
    let err = io::Error::last_os_error();
    return if err.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) { Ok(None) } else { Err(err) };
  }
  let mut created: FILETIME = unsafe { zeroed() };
  let mut other: [FILETIME; 3] = unsafe { zeroed() };
  let mut code = 0u32;
  let ok = unsafe { GetProcessTimes(handle, &mut created, &mut other[0], &mut other[1], &mut other[2]) } != 0
    && unsafe { GetExitCodeProcess(handle, &mut code) } != 0;
  let err = io::Error::last_os_error();
  unsafe { CloseHandle(handle) };
  if !ok {
    return Err(err);
  }
  let start = ((created.dwHighDateTime as u64) << 32) | created.dwLowDateTime as u64;
  Ok(Some((start, code == STILL_ACTIVE)))
}

pub(crate) fn read_stat(pid: i32) -> io::Result<Option<ProcessInfo>> {
  if pid <= 0 {
    return Ok(None);
  }
  Ok(creation(pid)?.map(|(start_time, running)| ProcessInfo {
    pid,
    ppid: 0,
    pgid: pid,
    state: if running { 'R' } else { 'Z' },
    start_time,
  }))
}

pub(crate) fn boot_id() -> io::Result<String> {
  Ok("windows-filetime".to_string())
}

pub(crate) fn process_table() -> io::Result<Vec<ProcessInfo>> {
  let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
  if snap == INVALID_HANDLE_VALUE {
    return Err(io::Error::last_os_error());
  }
  let mut out = Vec::new();
  let mut entry: PROCESSENTRY32W = unsafe { zeroed() };
  entry.dwSize = size_of::<PROCESSENTRY32W>() as u32;
  let mut more = unsafe { Process32FirstW(snap, &mut entry) } != 0;
  while more {
    let pid = entry.th32ProcessID as i32;
    if let Ok(Some((start_time, running))) = creation(pid) {
      out.push(ProcessInfo { pid, ppid: entry.th32ParentProcessID as i32, pgid: pid, state: if running { 'R' } else { 'Z' }, start_time });
    }
    more = unsafe { Process32NextW(snap, &mut entry) } != 0;
  }
  unsafe { CloseHandle(snap) };
  Ok(out)
}
