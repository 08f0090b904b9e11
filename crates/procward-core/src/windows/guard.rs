//! Kill safety on Windows: the processes a tree kill refuses to touch, whatever a record says.
//!
//! Records in the state directory are written by whoever can write it, so a kill checks
//! every process it is about to act on against the host itself, at that moment:
//!
//! - never PID 0 (the System Idle Process) or PID 4 (System, the kernel's threads). Windows
//!   hands out PIDs in multiples of 4 and its handle tables may ignore a PID's two low bits,
//!   so 1-3 are refused as the idle process and 5-7 as System; a negative PID as `pid_le_1`;
//! - never the host process, nor any of its ancestors (the ppid chain from a Toolhelp32
//!   snapshot, each parent created before its child: a parent whose PID was reused ends the
//!   chain);
//! - never a process attached to the host's console (`GetConsoleProcessList`): the host's
//!   own shell and its siblings. Every job gets a console of its own (`CREATE_NO_WINDOW`),
//!   and a console control event to a process on the host's console would reach the host.
//!
//! Windows has no sessions or process groups to read back, so the Unix rules about the
//! host's group and session become the console rule; with `require_session_leader`, the
//! kill asks instead that the root be in the Job Object procward created for it (see
//! [`crate::kill`]).

use std::collections::HashMap;
use std::mem::{size_of, zeroed};
use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Console::GetConsoleProcessList;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
  CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Threading::{GetProcessTimes, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};

/// Why a kill refused to act on a PID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
  /// A negative PID: no process has one.
  PidLe1,
  /// PID 0-3: the System Idle Process.
  SystemIdle,
  /// PID 4-7: the System process.
  System,
  /// The host process itself.
  Host,
  /// An ancestor of the host.
  HostAncestor,
  /// A process attached to the host's console.
  HostConsole,
  /// With `require_session_leader`: the root is not in the Job Object named after it
  /// (`Local\procward-job-<pid>-<start_time>`), so procward did not start it.
  NotSessionLeader,
}

impl Refusal {
  /// The stable name used in reports (`pid_le_1`, `system_idle`, `system`, `host`,
  /// `host_ancestor`, `host_console`, `not_session_leader`).
  pub fn as_str(self) -> &'static str {
    match self {
      Refusal::PidLe1 => "pid_le_1",
      Refusal::SystemIdle => "system_idle",
      Refusal::System => "system",
      Refusal::Host => "host",
      Refusal::HostAncestor => "host_ancestor",
      Refusal::HostConsole => "host_console",
      Refusal::NotSessionLeader => "not_session_leader",
    }
  }
}

/// The host as a kill must spare it, read once at the start of each kill.
#[derive(Debug, Clone)]
pub struct Host {
  pub pid: i32,
  /// The ppid chain from the host's parent upwards: `(pid, creation time)`, the time
  /// `None` where it could not be read (then the PID alone is refused).
  pub ancestors: Vec<(i32, Option<u64>)>,
  /// The processes attached to the host's console, the host included; empty without one.
  pub console: Vec<i32>,
}

/// Longest ppid chain walked: a cycle of reused PIDs must not hang a kill.
const MAX_ANCESTORS: usize = 4096;

impl Host {
  /// Reads the calling process's PID, ancestors and console.
  pub fn current() -> Host {
    let pid = std::process::id() as i32;
    let parents = parent_map().unwrap_or_default();
    let mut ancestors = Vec::new();
    let mut child = (pid, creation_time(pid));
    while let Some(&ppid) = parents.get(&child.0) {
      if ppid <= 4 || ppid == child.0 || ancestors.len() >= MAX_ANCESTORS {
        break;
      }
      let start = creation_time(ppid);
      // A "parent" created after its child holds a reused PID: the real parent is gone.
      if let (Some(parent), Some(kid)) = (start, child.1) {
        if parent > kid {
          break;
        }
      }
      ancestors.push((ppid, start));
      child = (ppid, start);
    }
    Host { pid, ancestors, console: console_processes() }
  }

  /// Whether the process `pid`, created at `start_time` (just read from a handle to it), may
  /// be signalled or terminated.
  pub fn check_process(&self, pid: i32, start_time: u64) -> Result<(), Refusal> {
    check_pid(pid)?;
    if pid == self.pid {
      Err(Refusal::Host)
    } else if self.ancestors.iter().any(|&(a, start)| a == pid && start.is_none_or(|s| s == start_time)) {
      Err(Refusal::HostAncestor)
    } else if self.console.contains(&pid) {
      Err(Refusal::HostConsole)
    } else {
      Ok(())
    }
  }
}

/// Refuses the PIDs no kill may name at all: negative, the idle process, System.
pub fn check_pid(pid: i32) -> Result<(), Refusal> {
  match pid {
    ..0 => Err(Refusal::PidLe1),
    0..=3 => Err(Refusal::SystemIdle),
    4..=7 => Err(Refusal::System),
    _ => Ok(()),
  }
}

/// The creation time of `pid` (100 ns units since 1601, as `identity` reports it), when it
/// can be opened.
fn creation_time(pid: i32) -> Option<u64> {
  let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid as u32) };
  if handle.is_null() {
    return None;
  }
  let mut times: [FILETIME; 4] = unsafe { zeroed() };
  let [created, exited, kernel, user] = &mut times;
  let ok = unsafe { GetProcessTimes(handle, created, exited, kernel, user) } != 0;
  unsafe { CloseHandle(handle) };
  ok.then(|| ((times[0].dwHighDateTime as u64) << 32) | times[0].dwLowDateTime as u64)
}

/// Every process's parent PID, from one Toolhelp32 snapshot. Errors: the snapshot's.
pub(crate) fn parent_map() -> std::io::Result<HashMap<i32, i32>> {
  let mut out = HashMap::new();
  let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0) };
  if snap == INVALID_HANDLE_VALUE {
    return Err(std::io::Error::last_os_error());
  }
  let mut entry: PROCESSENTRY32W = unsafe { zeroed() };
  entry.dwSize = size_of::<PROCESSENTRY32W>() as u32;
  let mut more = unsafe { Process32FirstW(snap, &mut entry) } != 0;
  while more {
    out.insert(entry.th32ProcessID as i32, entry.th32ParentProcessID as i32);
    more = unsafe { Process32NextW(snap, &mut entry) } != 0;
  }
  unsafe { CloseHandle(snap) };
  Ok(out)
}

/// The PIDs attached to the calling process's console (`GetConsoleProcessList`), itself
/// included; empty when it has none.
pub fn console_processes() -> Vec<i32> {
  let mut buf = vec![0u32; 64];
  loop {
    let n = unsafe { GetConsoleProcessList(buf.as_mut_ptr(), buf.len() as u32) } as usize;
    if n <= buf.len() {
      return buf[..n].iter().map(|&p| p as i32).collect();
    }
    buf.resize(n + 16, 0);
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_idle_process_and_system_are_refused_by_name() {
    assert_eq!(check_pid(0), Err(Refusal::SystemIdle));
    assert_eq!(check_pid(3), Err(Refusal::SystemIdle));
    assert_eq!(check_pid(4), Err(Refusal::System));
    assert_eq!(check_pid(7), Err(Refusal::System));
    assert_eq!(check_pid(-4), Err(Refusal::PidLe1));
    assert_eq!(check_pid(8), Ok(()));
  }

  #[test]
  fn the_live_host_refuses_itself_and_its_parent() {
    let h = Host::current();
    assert_eq!(h.check_process(h.pid, 0), Err(Refusal::Host));
    if let Some(&(parent, start)) = h.ancestors.first() {
      assert_eq!(h.check_process(parent, start.unwrap_or(0)), Err(Refusal::HostAncestor));
      // The same PID created at another time is a reused PID, not the ancestor.
      if let Some(s) = start {
        assert_ne!(h.check_process(parent, s + 1), Err(Refusal::HostAncestor));
      }
    }
  }
}
