//! macOS (compiled here, untested until a macOS CI runner exists): the kernel's process
//! info through `proc_pidinfo(PROC_PIDTBSDINFO)`.
//!
//! - start time: `pbi_start_tvsec * 1_000_000 + pbi_start_tvusec`, microseconds since the
//!   epoch (not `ps -o lstart`, which has one-second resolution);
//! - boot id: `kern.boottime` (seconds and microseconds of this boot).

use super::ProcessInfo;
use std::io;
use std::mem::{size_of, zeroed};
use std::sync::OnceLock;

// pbi_status values from <sys/proc.h>.
const SIDL: u32 = 1;
const SRUN: u32 = 2;
const SSLEEP: u32 = 3;
const SSTOP: u32 = 4;
const SZOMB: u32 = 5;

pub(crate) fn read_stat(pid: i32) -> io::Result<Option<ProcessInfo>> {
  if pid <= 0 {
    return Ok(None);
  }
  let mut info: libc::proc_bsdinfo = unsafe { zeroed() };
  let size = size_of::<libc::proc_bsdinfo>() as libc::c_int;
  let n = unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, (&mut info as *mut libc::proc_bsdinfo).cast(), size) };
  if n <= 0 {
    let err = io::Error::last_os_error();
    return match err.raw_os_error() {
      Some(libc::ESRCH) | Some(0) | None => Ok(None),
      _ => Err(err),
    };
  }
  if n < size {
    return Err(io::Error::new(io::ErrorKind::InvalidData, format!("short proc_pidinfo for {pid}")));
  }
  let state = match info.pbi_status {
    SIDL => 'I',
    SRUN => 'R',
    SSLEEP => 'S',
    SSTOP => 'T',
    SZOMB => 'Z',
    _ => '?',
  };
  Ok(Some(ProcessInfo {
    pid,
    ppid: info.pbi_ppid as i32,
    pgid: info.pbi_pgid as i32,
    state,
    start_time: info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec,
  }))
}

pub(crate) fn boot_id() -> io::Result<String> {
  static BOOT: OnceLock<String> = OnceLock::new();
  if let Some(b) = BOOT.get() {
    return Ok(b.clone());
  }
  let mut tv: libc::timeval = unsafe { zeroed() };
  let mut len = size_of::<libc::timeval>();
  let rc =
    unsafe { libc::sysctlbyname(c"kern.boottime".as_ptr(), (&mut tv as *mut libc::timeval).cast(), &mut len, std::ptr::null_mut(), 0) };
  if rc != 0 {
    return Err(io::Error::last_os_error());
  }
  Ok(BOOT.get_or_init(|| format!("boottime-{}.{:06}", tv.tv_sec, tv.tv_usec)).clone())
}

pub(crate) fn process_table() -> io::Result<Vec<ProcessInfo>> {
  let mut pids: Vec<libc::pid_t> = vec![0; 4096];
  loop {
    let bytes = (pids.len() * size_of::<libc::pid_t>()) as libc::c_int;
    let n = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    if n < 0 {
      return Err(io::Error::last_os_error());
    }
    if (n as usize) < pids.len() {
      pids.truncate(n as usize);
      break;
    }
    pids.resize(pids.len() * 2, 0);
  }
  Ok(pids.into_iter().filter_map(|pid| read_stat(pid).ok().flatten()).collect())
}
