//! Linux: everything comes from procfs.
//!
//! - `/proc/<pid>/stat`: state (field 3), ppid (4), pgrp (5), starttime (22, clock ticks
//!   since boot). The command name (field 2) may contain spaces and `)`, so the fields are
//!   counted from the text after the **last** `)`.
//! - `/proc/sys/kernel/random/boot_id`: a UUID that changes on every boot, so a start time
//!   recorded before a reboot can never match a process after it.

use super::ProcessInfo;
use std::fs::File;
use std::io::{self, Read};
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
pub(crate) fn read_stat(pid: i32) -> io::Result<Option<ProcessInfo>> {
  if pid <= 0 {
    return Ok(None);
  }
  let mut buf = [0u8; 1024];
  let mut path = [0u8; 32];
  let path = stat_path(pid, &mut path);
  let mut file = match File::open(path) {
    Ok(f) => f,
    Err(e) if gone_error(&e) => return Ok(None),
    Err(e) => return Err(e),
  };
  let mut len = 0;
  loop {
    match file.read(&mut buf[len..]) {
      Ok(0) => break,
      Ok(n) => {
        len += n;
        if len == buf.len() {
          break;
        }
      }
      // The process can exit between open and read.
      Err(e) if gone_error(&e) => return Ok(None),
      Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
      Err(e) => return Err(e),
    }
  }
  match parse_stat(pid, &buf[..len]) {
    Some(info) => Ok(Some(info)),
    None => Err(io::Error::new(io::ErrorKind::InvalidData, format!("unparsable /proc/{pid}/stat"))),
  }
}

fn gone_error(e: &io::Error) -> bool {
  matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH))
}

/// Formats `/proc/<pid>/stat` without allocating (this is the hot path of `probe`).
fn stat_path(pid: i32, buf: &mut [u8; 32]) -> &std::path::Path {
  use std::os::unix::ffi::OsStrExt;
  let prefix = b"/proc/";
  buf[..prefix.len()].copy_from_slice(prefix);
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
  let mut end = prefix.len();
  buf[end..end + d.len()].copy_from_slice(d);
  end += d.len();
  buf[end..end + 5].copy_from_slice(b"/stat");
  end += 5;
  std::path::Path::new(std::ffi::OsStr::from_bytes(&buf[..end]))
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
