//! Linux: everything comes from procfs.
//!
//! - `/proc/<pid>/stat`: state (field 3), ppid (4), pgrp (5), starttime (22, clock ticks
//!   since boot). The command name (field 2) may contain spaces and `)`, so the fields are
//!   counted from the text after the **last** `)`.
//! - `/proc/sys/kernel/random/boot_id`: a UUID that changes on every boot, so a start time
//!   recorded before a reboot can never match a process after it.
//!
//! Every per-process file is opened relative to one descriptor of `/proc` ([`open_proc`]),
//! never by its absolute path: qemu-user fakes an emulated process's own `/proc/self/stat`.

use super::ProcessInfo;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

/// Parses the text of `/proc/<pid>/stat`. Returns `None` when the text is not a stat line.
pub(crate) fn parse_stat(pid: i32, text: &[u8]) -> Option<ProcessInfo> {
  let close = text.iter().rposition(|&b| b == b')')?;
  let rest = std::str::from_utf8(&text[close + 1..]).ok()?;
  let mut fields = rest.split_ascii_whitespace();
  // After ')': index 0 is field 3 (state), so field N is at index N - 3.
  let state = fields.next()?.chars().next()?;
  let ppid = fields.next()?.parse().ok()?;
  let pgid = fields.next()?.parse().ok()?;
  let start_time = fields.nth(22 - 6)?.parse().ok()?;
  Some(ProcessInfo { pid, ppid, pgid, state, start_time })
}

/// Reads one process's stat. `Ok(None)` means there is no such process.
///
/// The file is opened relative to `/proc` (see [`open_proc`]), so this process's own stat
/// is the one every other process reads, under qemu-user too.
pub(crate) fn read_stat(pid: i32) -> io::Result<Option<ProcessInfo>> {
  let mut buf = [0u8; 1024];
  let Some(len) = read_proc_file(pid, "stat", &mut buf)? else { return Ok(None) };
  match parse_stat(pid, &buf[..len]) {
    Some(info) => Ok(Some(info)),
    None => Err(io::Error::new(io::ErrorKind::InvalidData, format!("unparsable /proc/{pid}/stat"))),
  }
}

/// Reads at most `buf.len()` bytes of `/proc/<pid>/<name>` (opened by [`open_proc`]) into
/// `buf` and returns how many it read. `Ok(None)` when there is no such process, or it
/// exited between the open and the read. Reads until end of file, `EINTR` retried.
pub(crate) fn read_proc_file(pid: i32, name: &str, buf: &mut [u8]) -> io::Result<Option<usize>> {
  let Some(mut file) = open_proc(pid, name)? else { return Ok(None) };
  let mut len = 0;
  while len < buf.len() {
    match file.read(&mut buf[len..]) {
      Ok(0) => break,
      Ok(n) => len += n,
      // The process can exit between open and read.
      Err(e) if gone_error(&e) => return Ok(None),
      Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
      Err(e) => return Err(e),
    }
  }
  Ok(Some(len))
}

/// Opens `/proc/<pid>/<name>` (`name`: `stat`, `status`, ...) read-only with `openat`
/// relative to a descriptor of `/proc` opened once per process, never by its absolute path.
/// `Ok(None)` when there is no such process (`ENOENT`, `ESRCH`) or `pid <= 0`.
///
/// Why relative: qemu-user answers an emulated process's own opens of `/proc/self/stat` and
/// `/proc/<its own pid>/stat` itself, with state `0`, process group 0 and a start time from
/// its own clock that no other process sees (measured: 4296524 against the kernel's 4296490).
/// A supervisor or host under qemu then records an identity nobody else can match, and the
/// job it names is never believed. qemu matches only absolute paths that start with
/// `/proc/`; an `openat` relative to a `/proc` descriptor reaches the kernel's own file.
pub(crate) fn open_proc(pid: i32, name: &str) -> io::Result<Option<File>> {
  use nix::fcntl::{openat, OFlag};
  use nix::sys::stat::Mode;
  static PROC: OnceLock<OwnedFd> = OnceLock::new();
  if pid <= 0 {
    return Ok(None);
  }
  let dir = match PROC.get() {
    Some(fd) => fd,
    None => {
      let fd = OwnedFd::from(File::open("/proc")?);
      // Two first callers at once: one descriptor is kept, the other is closed here.
      PROC.get_or_init(|| fd)
    }
  };
  let mut path = [0u8; 48];
  let path = proc_path(pid, name, &mut path);
  match openat(dir, path, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()) {
    Ok(fd) => Ok(Some(File::from(fd))),
    Err(e) if gone_error(&io::Error::from(e)) => Ok(None),
    Err(e) => Err(e.into()),
  }
}

/// Opens the directory `/proc/<pid>` (relative to the `/proc` descriptor, as [`open_proc`]).
/// Files opened relative to it belong to the process it was opened for, or to none: once
/// that process is reaped they fail with `ENOENT`, whoever holds its PID by then.
/// `Ok(None)` when there is no such process.
pub(crate) fn open_proc_dir(pid: i32) -> io::Result<Option<File>> {
  open_proc(pid, "")
}

/// Reads at most `cap` bytes of `name` in a directory opened by [`open_proc_dir`] into `out`
/// (cleared first). `Ok(false)` when the process is gone.
pub(crate) fn read_in(dir: &File, name: &str, cap: u64, out: &mut Vec<u8>) -> io::Result<bool> {
  use nix::fcntl::{openat, OFlag};
  use nix::sys::stat::Mode;
  out.clear();
  let fd = match openat(dir, name, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()) {
    Ok(fd) => fd,
    Err(e) if gone_error(&io::Error::from(e)) => return Ok(false),
    Err(e) => return Err(e.into()),
  };
  match File::from(fd).take(cap).read_to_end(out) {
    Ok(_) => Ok(true),
    Err(e) if gone_error(&e) => Ok(false),
    Err(e) => Err(e),
  }
}

fn gone_error(e: &io::Error) -> bool {
  matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH))
}

/// Formats the relative path `<pid>/<name>` without allocating (this is the hot path of
/// `probe`). A `name` longer than the buffer leaves is cut, and then names no file.
fn proc_path<'a>(pid: i32, name: &str, buf: &'a mut [u8; 48]) -> &'a [u8] {
  let mut digits = [0u8; 12];
  let mut n = pid as u32;
  let mut i = digits.len();
  loop {
    i -= 1;
    digits[i] = b'0' + (n % 10) as u8;
    n /= 10;
    if n == 0 {
      break;
    }
  }
  let d = &digits[i..];
  buf[..d.len()].copy_from_slice(d);
  let mut end = d.len();
  buf[end] = b'/';
  end += 1;
  let name = &name.as_bytes()[..name.len().min(buf.len() - end)];
  buf[end..end + name.len()].copy_from_slice(name);
  end += name.len();
  &buf[..end]
}

/// The current boot id, read once per process (it cannot change while we run).
pub(crate) fn boot_id() -> io::Result<String> {
  static BOOT_ID: OnceLock<String> = OnceLock::new();
  if let Some(id) = BOOT_ID.get() {
    return Ok(id.clone());
  }
  let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")?.trim().to_string();
  Ok(BOOT_ID.get_or_init(|| id).clone())
}

/// One pass over `/proc`: every process's stat. Processes that exit during the walk are
/// skipped; a stat that cannot be read for another reason is skipped too (it cannot be
/// part of a tree we may signal if we cannot read its identity).
pub(crate) fn process_table() -> io::Result<Vec<ProcessInfo>> {
  let mut table = Vec::with_capacity(512);
  for entry in std::fs::read_dir("/proc")? {
    let Ok(entry) = entry else { continue };
    let name = entry.file_name();
    let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
    if let Ok(Some(info)) = read_stat(pid) {
      table.push(info);
    }
  }
  Ok(table)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn parses_after_the_last_paren_even_with_spaces_and_parens_in_the_name() {
    let line = b"4242 (evil) name (x) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0\n";
    let info = parse_stat(4242, line).unwrap();
    assert_eq!(info.state, 'S');
    assert_eq!(info.ppid, 1);
    assert_eq!(info.pgid, 4242);
    assert_eq!(info.start_time, 987654);
  }

  #[test]
  fn rejects_text_that_is_not_a_stat_line() {
    assert!(parse_stat(1, b"garbage").is_none());
    assert!(parse_stat(1, b"1 (x) S 1 2").is_none());
  }

  #[test]
  fn reads_this_process() {
    let me = std::process::id() as i32;
    let info = read_stat(me).unwrap().unwrap();
    assert_eq!(info.pid, me);
    assert!(info.start_time > 0);
    assert_eq!(info.ppid, std::os::unix::process::parent_id() as i32);
  }

  #[test]
  fn missing_pid_is_none_not_error() {
    assert!(read_stat(i32::MAX).unwrap().is_none());
    assert!(read_stat(0).unwrap().is_none());
  }

  #[test]
  fn boot_id_is_a_uuid() {
    let id = boot_id().unwrap();
    assert_eq!(id.len(), 36);
  }
}
