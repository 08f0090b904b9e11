//! Cross-process file locks for the checkpoint (`flock(2)`; `LockFileEx` on Windows).

use crate::map_error;
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue};
use napi_derive::napi;
use procward_core as core;
use std::time::Duration;

/// An exclusive cross-process lock on a file (`flock(2)`; `LockFileEx` on Windows): released
/// by `release()`, by garbage collection, or by the kernel when this process dies.
#[napi]
pub struct FileLock {
  inner: Option<core::lockfile::FileLock>,
}

/// Takes the exclusive lock on `path` (created 0600) without blocking; `null` when another
/// process holds it. Throws `ENOENT`/`EACCES`-coded errors when the file cannot be opened.
#[napi]
pub fn try_lock_file(path: String) -> Result<Option<FileLock>> {
  Ok(core::lockfile::try_lock(std::path::Path::new(&path)).map_err(map_error)?.map(|l| FileLock { inner: Some(l) }))
}

/// Takes the exclusive lock on `path` (created 0600) on a dedicated thread (never libuv's
/// pool), waiting at most `timeout_ms` milliseconds in a blocking lock call; the callback gets
/// `(error, lock)` once, `lock` being `null` after the timeout. Errors as `tryLockFile`.
#[napi]
pub fn lock_file(path: String, timeout_ms: u32, callback: ThreadsafeFunction<Option<FileLock>, UnknownReturnValue>) -> Result<()> {
  std::thread::Builder::new()
    .name("procward-lock-wait".into())
    .spawn(move || {
      let got = core::lockfile::lock_timeout(std::path::Path::new(&path), Duration::from_millis(timeout_ms.into()));
      callback.call(got.map_err(map_error).map(|l| l.map(|l| FileLock { inner: Some(l) })), ThreadsafeFunctionCallMode::Blocking);
    })
    .map_err(|e| map_error(core::Error::Io { context: "starting the lock thread".into(), source: e }))?;
  Ok(())
}

#[napi]
impl FileLock {
  /// Releases the lock (idempotent).
  #[napi]
  pub fn release(&mut self) {
    self.inner = None;
  }
}
