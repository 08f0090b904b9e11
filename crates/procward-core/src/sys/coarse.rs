//! Other platforms (untested): `sysinfo`, whose start time has one-second resolution, so
//! two processes started within the same second under the same PID cannot be told apart.
//! The boot id is the boot time in seconds.

use super::ProcessInfo;
use std::io;
use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};

fn info(pid: Pid, p: &sysinfo::Process) -> ProcessInfo {
  let state = match p.status() {
    ProcessStatus::Zombie | ProcessStatus::Dead => 'Z',
    ProcessStatus::Stop => 'T',
    ProcessStatus::Run => 'R',
    _ => 'S',
  };
  ProcessInfo {
    pid: pid.as_u32() as i32,
    ppid: p.parent().map_or(0, |pp| pp.as_u32() as i32),
    pgid: pid.as_u32() as i32,
    state,
    start_time: p.start_time(),
  }
}

pub(crate) fn read_stat(pid: i32) -> io::Result<Option<ProcessInfo>> {
  if pid <= 0 {
    return Ok(None);
  }
  let mut sys = System::new();
  let p = Pid::from_u32(pid as u32);
  sys.refresh_processes_specifics(ProcessesToUpdate::Some(&[p]), true, ProcessRefreshKind::nothing());
  Ok(sys.process(p).map(|proc_| info(p, proc_)))
}

pub(crate) fn boot_id() -> io::Result<String> {
  Ok(format!("boot-{}", System::boot_time()))
}

pub(crate) fn process_table() -> io::Result<Vec<ProcessInfo>> {
  let mut sys = System::new();
  sys.refresh_processes_specifics(ProcessesToUpdate::All, true, ProcessRefreshKind::nothing());
  Ok(sys.processes().iter().map(|(pid, p)| info(*pid, p)).collect())
}
