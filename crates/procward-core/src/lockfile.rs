//! Cross-process exclusive locks on a file, through `flock(2)`.
//!
//! The kernel drops the lock when its holder dies, so a host SIGKILLed while writing the
//! checkpoint never leaves a stale lock behind (a lock *directory* or pid file would, and
//! every other host would have to wait for it to be declared stale).

use crate::error::{Error, Result};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct FileLock {
  _flock: Flock<File>,
}

/// Tries to take the exclusive lock on `path` (created 0600 if missing) without blocking.
/// `Ok(None)` when another process holds it.
///
/// Errors: `Io` when the file cannot be opened (for example `ENOENT` for a missing
/// directory) or `flock` fails for another reason than contention.
pub fn try_lock(path: &Path) -> Result<Option<FileLock>> {
  let file = OpenOptions::new()
    .read(true)
    .write(true)
    .create(true)
    .truncate(false)
    .mode(0o600)
    .custom_flags(libc::O_NOFOLLOW)
    .open(path)
    .map_err(|e| Error::io(format!("opening lock file {}", path.display()), e))?;
  match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
    Ok(flock) => Ok(Some(FileLock { _flock: flock })),
    Err((_, Errno::EWOULDBLOCK)) => Ok(None),
    Err((_, e)) => Err(Error::io(format!("locking {}", path.display()), e.into())),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn second_lock_is_refused_until_the_first_is_dropped() {
    let path = std::env::temp_dir().join(format!("procward-lock-{}", std::process::id()));
    let first = try_lock(&path).unwrap().expect("first lock");
    // flock locks belong to the open file description: a second open conflicts.
    assert!(try_lock(&path).unwrap().is_none());
    drop(first);
    assert!(try_lock(&path).unwrap().is_some());
    std::fs::remove_file(&path).unwrap();
  }
}
