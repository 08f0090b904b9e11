//! Waiting in unit tests: a condition polled until it holds, or a failure after a generous
//! bound (a hang turned into a failure, never a speed claim).

use std::time::{Duration, Instant};

/// Polls `cond` every 10 ms until it holds; panics naming `what` after 10 s.
pub(crate) fn until(what: &str, mut cond: impl FnMut() -> bool) {
  let deadline = Instant::now() + Duration::from_secs(10);
  while !cond() {
    assert!(Instant::now() < deadline, "timed out waiting for {what} (10 s)");
    std::thread::sleep(Duration::from_millis(10));
  }
}
