//! Cross-process exclusive locks on a file, through std's `File::lock`/`File::try_lock`:
//! `flock(2)` on Linux and macOS, `LockFileEx` on Windows (an exclusive lock on the file's
//! first bytes).
//!
//! Either way the kernel drops the lock when its holder dies, so a host killed while writing
//! the checkpoint never leaves a stale lock behind (a lock *directory* or pid file would, and
//! every other host would have to wait for it to be declared stale). Both belong to the open
//! file (the open file description; the file object on Windows), so a second open in the same
//! process conflicts with the first, as one in another process does.
//!
//! Waiting hosts block in the kernel ([`lock_timeout`]) instead of polling: a poller that
//! sleeps between tries loses every race against a host that releases and re-takes the
//! lock at once, and starves (three hosts writing in a loop saw `LOCK_TIMEOUT` after 10 s).
//! A blocked waiter is woken as soon as the holder releases (`flock` and `LockFileEx` both
//! queue waiters).

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::ErrorKind;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct FileLock {
  file: File,
}

impl Drop for FileLock {
  /// Unlocks before the close: Windows releases the locks of a closed handle "at a time that
  /// is not specified", and a waiter should not wait for that.
  fn drop(&mut self) {
    let _ = self.file.unlock();
  }
}

/// Opens (creating it if missing, never through a symlink) the lock file at `path`: 0600 and
/// `O_NOFOLLOW` on Unix; on Windows `FILE_FLAG_OPEN_REPARSE_POINT` opens a link planted at
/// the name as itself, which is then refused (the file inherits its directory's ACL: the
/// state directory's, private to its user).
fn open_lock_file(path: &Path) -> Result<File> {
  let mut options = OpenOptions::new();
  options.read(true).write(true).create(true).truncate(false);
  #[cfg(unix)]
  {
    use std::os::unix::fs::OpenOptionsExt;
    options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
  }
  #[cfg(windows)]
  {
    use std::os::windows::fs::OpenOptionsExt;
    options.custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT);
  }
  let context = || format!("opening lock file {}", path.display());
  let file = options.open(path).map_err(|e| Error::io(context(), e))?;
  #[cfg(windows)]
  if file.metadata().map_err(|e| Error::io(context(), e))?.file_type().is_symlink() {
    return Err(Error::io(context(), std::io::Error::new(ErrorKind::InvalidInput, "a symbolic link is at the lock's name")));
  }
  Ok(file)
}

/// Tries to take the exclusive lock on `path` (created 0600 if missing) without blocking.
/// `Ok(None)` when another process holds it.
///
/// Errors: `Io` when the file cannot be opened (for example `ENOENT` for a missing
/// directory) or the lock fails for another reason than contention.
pub fn try_lock(path: &Path) -> Result<Option<FileLock>> {
  let file = open_lock_file(path)?;
  match file.try_lock() {
    Ok(()) => Ok(Some(FileLock { file })),
    Err(TryLockError::WouldBlock) => Ok(None),
    Err(TryLockError::Error(e)) => Err(Error::io(format!("locking {}", path.display()), e)),
  }
}

/// Takes the exclusive lock on `path` (created 0600 if missing), waiting at most `timeout`
/// in a blocking lock call (woken by the kernel when the holder releases, so a waiter cannot
/// be starved by a holder that re-takes the lock at once). `Ok(None)` after `timeout`.
///
/// The wait runs on a thread of its own, since a blocking lock cannot be cancelled: after
/// a timeout that thread keeps waiting and releases the lock the moment it gets it. Each
/// timed-out call leaves one such thread (and descriptor or handle) until the holder lets go.
///
/// Errors: `Io` when the file cannot be opened, the lock fails for another reason than
/// contention, or the waiting thread cannot be started.
pub fn lock_timeout(path: &Path, timeout: Duration) -> Result<Option<FileLock>> {
  let file = open_lock_file(path)?;
  let (tx, rx) = mpsc::channel();
  let shown = path.display().to_string();
  std::thread::Builder::new()
    .name("procward-lock".into())
    .spawn(move || {
      let got = loop {
        match file.lock() {
          Ok(()) => break Ok(FileLock { file }),
          // std's flock is not retried after a signal.
          Err(e) if e.kind() == ErrorKind::Interrupted => {}
          Err(e) => break Err(Error::io(format!("locking {shown}"), e)),
        }
      };
      // A receiver that gave up drops the lock here, at once.
      let _ = tx.send(got);
    })
    .map_err(|e| Error::io("starting the lock thread", e))?;
  match rx.recv_timeout(timeout) {
    Ok(got) => got.map(Some),
    Err(_) => Ok(None),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn second_lock_is_refused_until_the_first_is_dropped() {
    let path = std::env::temp_dir().join(format!("procward-lock-{}", std::process::id()));
    let first = try_lock(&path).unwrap().expect("first lock");
    // Locks belong to the open file: a second open conflicts, in this process too.
    assert!(try_lock(&path).unwrap().is_none());
    drop(first);
    assert!(try_lock(&path).unwrap().is_some());
    std::fs::remove_file(&path).unwrap();
  }

  #[test]
  fn a_blocked_waiter_gets_the_lock_once_it_is_released_and_times_out_while_held() {
    let path = std::env::temp_dir().join(format!("procward-lock-wait-{}", std::process::id()));
    let first = try_lock(&path).unwrap().expect("first lock");
    assert!(lock_timeout(&path, Duration::from_millis(50)).unwrap().is_none());
    let waiter = {
      let path = path.clone();
      std::thread::spawn(move || lock_timeout(&path, Duration::from_secs(30)).unwrap().is_some())
    };
    std::thread::sleep(Duration::from_millis(50));
    drop(first);
    assert!(waiter.join().unwrap());
    // The timed-out waiter released what it got late: the lock is free again.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while try_lock(&path).unwrap().is_none() {
      assert!(std::time::Instant::now() < deadline, "lock never became free");
      std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::remove_file(&path).unwrap();
  }

  #[cfg(unix)]
  #[test]
  fn the_lock_file_is_private_and_never_opened_through_a_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("procward-lock-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("checkpoint.lock");
    drop(try_lock(&path).unwrap().expect("lock"));
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let planted = dir.join("planted.lock");
    std::os::unix::fs::symlink(&path, &planted).unwrap();
    assert!(try_lock(&planted).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
  }
}
