//! Cross-process exclusive locks on a file, through `flock(2)`.
//!
//! The kernel drops the lock when its holder dies, so a host SIGKILLed while writing the
//! checkpoint never leaves a stale lock behind (a lock *directory* or pid file would, and
//! every other host would have to wait for it to be declared stale).
//!
//! Waiting hosts block in the kernel ([`lock_timeout`]) instead of polling: a poller that
//! sleeps between tries loses every race against a host that releases and re-takes the
//! lock at once, and starves (three hosts writing in a loop saw `LOCK_TIMEOUT` after 10 s).
//! A blocked waiter is woken as soon as the holder releases.

use crate::error::{Error, Result};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct FileLock {
  _flock: Flock<File>,
}

/// Opens (creating 0600, never following a symlink) the lock file at `path`.
fn open_lock_file(path: &Path) -> Result<File> {
  OpenOptions::new()
    .read(true)
    .write(true)
    .create(true)
    .truncate(false)
    .mode(0o600)
    .custom_flags(libc::O_NOFOLLOW)
    .open(path)
    .map_err(|e| Error::io(format!("opening lock file {}", path.display()), e))
}

/// Tries to take the exclusive lock on `path` (created 0600 if missing) without blocking.
/// `Ok(None)` when another process holds it.
///
/// Errors: `Io` when the file cannot be opened (for example `ENOENT` for a missing
/// directory) or `flock` fails for another reason than contention.
pub fn try_lock(path: &Path) -> Result<Option<FileLock>> {
  match Flock::lock(open_lock_file(path)?, FlockArg::LockExclusiveNonblock) {
    Ok(flock) => Ok(Some(FileLock { _flock: flock })),
    Err((_, Errno::EWOULDBLOCK)) => Ok(None),
    Err((_, e)) => Err(Error::io(format!("locking {}", path.display()), e.into())),
  }
}

/// Takes the exclusive lock on `path` (created 0600 if missing), waiting at most `timeout`
/// in a blocking `flock` (woken by the kernel when the holder releases, so a waiter cannot
/// be starved by a holder that re-takes the lock at once). `Ok(None)` after `timeout`.
///
/// The wait runs on a thread of its own, since a blocking `flock` cannot be cancelled: after
/// a timeout that thread keeps waiting and releases the lock the moment it gets it. Each
/// timed-out call leaves one such thread (and descriptor) until the holder lets go.
///
/// Errors: `Io` when the file cannot be opened, `flock` fails for another reason than
/// contention, or the waiting thread cannot be started.
pub fn lock_timeout(path: &Path, timeout: Duration) -> Result<Option<FileLock>> {
  let file = open_lock_file(path)?;
  let (tx, rx) = mpsc::channel();
  let shown = path.display().to_string();
  std::thread::Builder::new()
    .name("procward-lock".into())
    .spawn(move || {
      let mut file = file;
      let got = loop {
        match Flock::lock(file, FlockArg::LockExclusive) {
          Ok(flock) => break Ok(FileLock { _flock: flock }),
          Err((f, Errno::EINTR)) => file = f,
          Err((_, e)) => break Err(Error::io(format!("locking {shown}"), e.into())),
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
    // flock locks belong to the open file description: a second open conflicts.
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
}
