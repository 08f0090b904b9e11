//! Small files replaced atomically: written to a temporary name beside the target and
//! renamed over it, so a reader sees the old or the new content, never a torn one. With
//! `durable`, the file and then the directory are fsynced too, so that holds after a power
//! loss as well (a host crash needs no fsync: the page cache survives it).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Replaces `path` with `text` (mode 0600), fsynced when `durable`.
///
/// Errors: any I/O error of the create, write, fsync or rename; the temporary file is
/// removed when the write fails.
pub fn write_atomically(path: &Path, text: &str, durable: bool) -> std::io::Result<()> {
  let dir = path.parent().unwrap_or(Path::new("."));
  let mut tmp = PathBuf::from(path);
  tmp.set_extension(format!("tmp{}", std::process::id()));
  let written = (|| {
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
    f.write_all(text.as_bytes())?;
    if durable {
      f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
  })();
  if written.is_err() {
    let _ = std::fs::remove_file(&tmp);
  }
  written?;
  if durable {
    std::fs::File::open(dir)?.sync_all()?;
  }
  Ok(())
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::os::unix::fs::PermissionsExt;

  #[test]
  fn replaces_the_file_with_mode_0600_and_leaves_no_temporary() {
    let dir = std::env::temp_dir().join(format!("procward-atomic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("exit.json");
    std::fs::write(&path, "old").unwrap();
    write_atomically(&path, "new", true).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    write_atomically(&path, "newer", false).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "newer");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
  }
}
