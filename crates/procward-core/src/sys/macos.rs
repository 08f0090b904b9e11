//! macOS (compile-checked here by `scripts/platforms/macos-check.sh`; nothing runs until a
//! macOS runner exists): the kernel's process info through `proc_pidinfo(PROC_PIDTBSDINFO)`.
//!
//! - start time: `pbi_start_tvsec * 1_000_000 + pbi_start_tvusec`, microseconds since the
//!   epoch. xnu copies `p->p_start`, the wall clock read once at fork, so a clock step after
//!   the start never changes it (not `ps -o lstart`, which has one-second resolution).
//! - state, ppid, pgid: `pbi_status` (`SIDL`..`SZOMB` of `<sys/proc.h>`), `pbi_ppid`,
//!   `pbi_pgid`.
//! - boot id: `kern.bootsessionuuid`, a UUID made at each boot; `kern.boottime` only where
//!   that sysctl is missing.
//!
//! Checked against xnu (`bsd/kern/proc_info.c`, `bsd/kern/kern_sig.c`) and Apple's man pages
//! for proc_pidinfo's callers, kill(2) and killpg(2):
//!
//! - `proc_pidinfo` returns the bytes written, or 0 with errno set (libproc turns the
//!   syscall's -1 into 0): ESRCH when no process has the PID, EPERM for a process of another
//!   user (PROC_PIDTBSDINFO checks the same user unless the caller is root). EPERM is an
//!   error here, so a probe of such a PID reads "unreadable" (verdict `unknown`), never
//!   "gone"; the process table leaves those PIDs out, and the host's ancestor walk stops at
//!   the first one (a root-owned `login` or `sshd`, which the host cannot signal anyway).
//! - Zombies: PROC_PIDTBSDINFO finds a zombie only when `arg` is non-zero (xnu then falls
//!   back to `proc_find_zombref`); with `arg = 0` an exited, unreaped child reads ESRCH. The
//!   reads pass 1, so a zombie is `Z` as on Linux and a job that exits before its identity
//!   is read (`identity_of_child`) still has its start time.
//! - `proc_listallpids` returns a count of PIDs (libproc divides the byte count), zombies
//!   included, and fills at most the buffer: a full buffer is grown and read again.
//! - `kern.boottime` is not a boot token: xnu derives it as now minus uptime and shifts it
//!   when the clock is stepped or slewed, so two reads in one boot can differ by
//!   microseconds to seconds. `kern.bootsessionuuid` is set once per boot.
//! - kill(2) and killpg(2) are the POSIX calls the Unix kill path already makes: a negative
//!   PID signals the group, signal 0 checks existence, ESRCH when nothing matches, EPERM
//!   without the right to signal. Whether `kill(pid, 0)` succeeds on a zombie is left open
//!   by the man page; no verdict depends on it, because the state read above says `Z` and
//!   [`ProcessInfo::is_dead`] counts that as dead.
//! - Not checked: anything at run time. The module is compiled for both macOS targets, never
//!   run; the table of `scripts/platforms/README.md` says so.

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
  // arg 1: find zombies too (see the module docs).
  let n = unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 1, (&mut info as *mut libc::proc_bsdinfo).cast(), size) };
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

/// This boot's id: `kern.bootsessionuuid` (`bootsession-<uuid>`), read once. Where the sysctl
/// does not exist, `kern.boottime` (`boottime-<sec>.<usec>`), which a clock step can move.
/// Errors: the sysctl's, when neither can be read.
pub(crate) fn boot_id() -> io::Result<String> {
  static BOOT: OnceLock<String> = OnceLock::new();
  if let Some(b) = BOOT.get() {
    return Ok(b.clone());
  }
  let id = match boot_session_uuid() {
    Ok(uuid) => format!("bootsession-{uuid}"),
    Err(_) => boot_time()?,
  };
  Ok(BOOT.get_or_init(|| id).clone())
}

fn boot_session_uuid() -> io::Result<String> {
  let mut buf = [0u8; 64];
  let mut len = buf.len();
  let rc = unsafe { libc::sysctlbyname(c"kern.bootsessionuuid".as_ptr(), buf.as_mut_ptr().cast(), &mut len, std::ptr::null_mut(), 0) };
  if rc != 0 {
    return Err(io::Error::last_os_error());
  }
  let text = buf[..len.min(buf.len())].split(|&b| b == 0).next().unwrap_or_default();
  match std::str::from_utf8(text) {
    Ok(uuid) if !uuid.is_empty() => Ok(uuid.to_ascii_lowercase()),
    _ => Err(io::Error::new(io::ErrorKind::InvalidData, "kern.bootsessionuuid is empty or not text")),
  }
}

fn boot_time() -> io::Result<String> {
  let mut tv: libc::timeval = unsafe { zeroed() };
  let mut len = size_of::<libc::timeval>();
  let rc =
    unsafe { libc::sysctlbyname(c"kern.boottime".as_ptr(), (&mut tv as *mut libc::timeval).cast(), &mut len, std::ptr::null_mut(), 0) };
  if rc != 0 {
    return Err(io::Error::last_os_error());
  }
  Ok(format!("boottime-{}.{:06}", tv.tv_sec, tv.tv_usec))
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
