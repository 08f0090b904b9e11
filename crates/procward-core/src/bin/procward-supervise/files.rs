//! The supervisor's files in the session directory: `session.json` written for the host
//! before the job starts, its own `supervisor.json`, and the job's `exit.json`.

use std::io::{ErrorKind, Read, Write};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
#[cfg(windows)]
use std::os::windows::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

/// Most bytes of a session record read from stdin (a record is a few KiB; the host sends
/// larger ones never, it writes them itself).
const MAX_RECORD_BYTES: u64 = 1 << 20;

/// Whether `path` is a directory itself, not a symlink to one.
fn is_real_dir(path: &Path) -> bool {
  std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Reads the session record the host wrote to our stdin (a pipe it closed), at most
/// [`MAX_RECORD_BYTES`].
pub fn read_record() -> std::io::Result<Vec<u8>> {
  let mut text = Vec::new();
  std::io::stdin().lock().take(MAX_RECORD_BYTES + 1).read_to_end(&mut text)?;
  if text.len() as u64 > MAX_RECORD_BYTES || text.is_empty() {
    return Err(std::io::Error::new(
      ErrorKind::InvalidData,
      format!("the session record on stdin is empty or over {MAX_RECORD_BYTES} bytes"),
    ));
  }
  Ok(text)
}

/// Our identity as JSON (`{"pid":…,"startTime":"…","bootId":"…"}`), the shape of
/// `supervisor.json` and of a record's `identity`; `None` when it cannot be read.
pub fn own_identity() -> Option<String> {
  let me = procward_core::identity::identity(std::process::id() as i32).ok()??;
  Some(format!("{{\"pid\":{},\"startTime\":\"{}\",\"bootId\":\"{}\"}}", me.pid, me.start_time, me.boot_id))
}

/// `identity` (ours, as [`own_identity`] gives it) with the job's own identity added as
/// `"job":{"pid":…,"startTime":"…","bootId":"…"}`: the process a durable session's `pid`
/// names and signals reach (readers of our identity alone ignore the key). `None` when our
/// identity is unknown; without a boot id the job's key is left out.
pub fn with_job(identity: Option<&str>, job_pid: u32, job_start: u64) -> Option<String> {
  let id = identity?;
  let Ok(boot) = procward_core::identity::boot_id() else { return Some(id.to_owned()) };
  let head = id.trim_end().strip_suffix('}')?;
  Some(format!("{head},\"job\":{{\"pid\":{job_pid},\"startTime\":\"{job_start}\",\"bootId\":\"{boot}\"}}}}"))
}

/// The host's record (a JSON object without `pid` and `identity`) with ours added as its
/// last keys: a host that recovers the session from `session.json` alone knows at once
/// which process to follow, with no window where the record exists and our identity does
/// not. A record that is not an object is kept as it is.
fn with_identity(record: &[u8], identity: Option<&str>) -> Vec<u8> {
  let body = record.trim_ascii_end();
  let (Some(id), Some((b'}', head))) = (identity, body.split_last()) else { return record.to_vec() };
  let pid = id.split_once("\"pid\":").and_then(|(_, rest)| rest.split(',').next()).unwrap_or("null");
  let sep = if head.trim_ascii() == b"{" { "" } else { "," };
  let mut out = head.to_vec();
  out.extend_from_slice(format!("{sep}\"pid\":{pid},\"identity\":{id}}}\n").as_bytes());
  out
}

/// Creates the session directory (0700; one that exists must be a real directory) below
/// `sessions/`, which must be a real directory too, and writes `record` (with our
/// identity, see [`with_identity`]) to `session.json` in it by a new temporary file
/// (`O_EXCL | O_NOFOLLOW`, 0600) and a rename, the way the host's `writePrivate` does: a
/// reader sees the whole record or none, never a link. When the record cannot be written
/// (a full disk), a directory made here is removed again: nothing is left that a host could
/// take for a job, and no exit file will be written into it (see `failed_start`).
pub fn record_session(path: &Path, record: &[u8], identity: Option<&str>) -> std::io::Result<()> {
  let record = with_identity(record, identity);
  let untrusted = |p: &Path| std::io::Error::new(ErrorKind::PermissionDenied, format!("{} is a symlink or not a directory", p.display()));
  let dir = path.parent().ok_or_else(|| untrusted(path))?;
  let sessions = dir.parent().ok_or_else(|| untrusted(dir))?;
  if !is_real_dir(sessions) {
    return Err(untrusted(sessions));
  }
  let builder = &mut std::fs::DirBuilder::new();
  // Windows: the directory inherits the private ACL of the state directory.
  #[cfg(unix)]
  builder.mode(0o700);
  let made = match builder.create(dir) {
    Err(e) if e.kind() != ErrorKind::AlreadyExists => return Err(e),
    Err(_) => false,
    Ok(()) => true,
  };
  if !is_real_dir(dir) {
    return Err(untrusted(dir));
  }
  let mut temp = path.as_os_str().to_owned();
  temp.push(format!(".{}.tmp", std::process::id()));
  let temp = std::path::PathBuf::from(temp);
  let written = write_new(&temp, &record).and_then(|()| std::fs::rename(&temp, path));
  if written.is_err() {
    let _ = std::fs::remove_file(&temp);
    if made {
      let _ = std::fs::remove_dir(dir);
    }
  }
  written
}

/// `supervisor.json` and the exit file: one write to a new file (0600, never through a
/// link). Cheaper than a rename on a metadata-bound disk, and as safe for readers: both
/// texts end with `}` and a newline, and a reader takes anything shorter for "not written
/// yet". Not fsynced: they must outlive the host, whose crash leaves the page cache
/// intact; a power loss ends the job too, and then its end is `lost` at worst.
pub fn write_new(path: &Path, text: &[u8]) -> std::io::Result<()> {
  let mut options = std::fs::OpenOptions::new();
  options.write(true).create_new(true);
  #[cfg(unix)]
  options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
  // Windows: CREATE_NEW fails on a link at the name as on any file (the flag makes sure
  // it is never followed).
  #[cfg(windows)]
  options.custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT);
  options.open(path)?.write_all(text)
}

/// Records our identity in `supervisor.json` beside the exit file, for a host that must
/// find this job without a checkpoint entry (its host crashed between the spawn and the
/// checkpoint write); after a reboot the identity is void anyway (boot id).
pub fn record_identity(exit: &Path, identity: Option<&str>) -> Result<(), String> {
  let Some(id) = identity else { return Ok(()) };
  let path = exit.with_file_name("supervisor.json");
  write_new(&path, format!("{id}\n").as_bytes()).map_err(|e| format!("cannot record identity in {}: {e}", path.display()))
}

/// Writes the exit file, retrying while it cannot be written (a full disk, no inodes):
/// every 50 ms at first, backing off to every 5 s, for as long as this process lives. The
/// job's end is known only here, and a host takes a supervisor that is gone without an exit
/// file for `lost`; while we retry, hosts see the job running. A failed attempt's partial
/// file is removed (readers take it for "not yet" meanwhile). Gives up (false) only when
/// the session directory is gone: the session was pruned or removed, and no one will read
/// the file.
pub fn write_exit(path: &Path, text: &str) -> bool {
  let mut delay = Duration::from_millis(50);
  let mut reported = false;
  loop {
    match write_new(path, text.as_bytes()) {
      Ok(()) => return true,
      Err(e) if e.kind() == ErrorKind::NotFound => {
        let _ = writeln!(std::io::stderr(), "procward-supervise: cannot write {}: {e}; the session directory is gone", path.display());
        return false;
      }
      Err(e) => {
        if !reported {
          // Not eprintln!, which panics when stderr (the log, on the same full disk) fails.
          let _ = writeln!(std::io::stderr(), "procward-supervise: cannot write {}: {e}; retrying until it can", path.display());
          reported = true;
        }
        // Ours (a partial write) or not, a file there that is not our end must go: the
        // supervisor alone writes the exit file.
        let _ = std::fs::remove_file(path);
      }
    }
    std::thread::sleep(delay);
    delay = (delay * 2).min(Duration::from_secs(5));
  }
}

#[cfg(test)]
mod tests {
  use super::with_identity;

  #[test]
  fn the_jobs_identity_is_the_supervisors_last_key() {
    let id = r#"{"pid":42,"startTime":"7","bootId":"b"}"#;
    let boot = procward_core::identity::boot_id().unwrap();
    let out = super::with_job(Some(id), 43, 8).unwrap();
    assert_eq!(out, format!(r#"{{"pid":42,"startTime":"7","bootId":"b","job":{{"pid":43,"startTime":"8","bootId":"{boot}"}}}}"#));
    assert_eq!(super::with_job(None, 43, 8), None);
  }

  #[test]
  fn the_identity_becomes_the_records_last_keys() {
    let id = r#"{"pid":42,"startTime":"7","bootId":"b"}"#;
    let out = String::from_utf8(with_identity(b"{\"id\":\"proc_1\"}\n", Some(id))).unwrap();
    assert_eq!(out, "{\"id\":\"proc_1\",\"pid\":42,\"identity\":{\"pid\":42,\"startTime\":\"7\",\"bootId\":\"b\"}}\n");
    assert_eq!(
      String::from_utf8(with_identity(b"{}", Some(id))).unwrap(),
      "{\"pid\":42,\"identity\":{\"pid\":42,\"startTime\":\"7\",\"bootId\":\"b\"}}\n"
    );
    assert_eq!(with_identity(b"[1]", Some(id)), b"[1]");
    assert_eq!(with_identity(b"{\"id\":1}", None), b"{\"id\":1}");
  }
}
