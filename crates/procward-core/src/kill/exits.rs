//! Waking when a target exits: a pidfd (Linux 5.3+) becomes readable once its process has
//! exited (a zombie, or reaped), so a wait wakes at the exit itself instead of at the next
//! step of a polling loop, and reads nothing from `/proc` while it sleeps. Where pidfds
//! are missing (other systems, old kernels, no descriptor left), the caller polls.

use super::run::{Run, Target};
use std::time::Instant;

/// Most targets watched at once (one per tree a wait is blocked on); a batch with more
/// polls instead.
#[cfg(target_os = "linux")]
const MAX_WATCHED: usize = 64;

/// Longest one wait blocks: the identity check after it, not the pidfd, decides who is
/// dead (a leader that exited while its other threads run is a zombie to `/proc` before
/// its pidfd is readable).
#[cfg(target_os = "linux")]
const MAX_BLOCK: std::time::Duration = std::time::Duration::from_millis(20);

/// The pidfds of the targets a wait is blocked on, kept from one wait to the next.
#[derive(Default)]
pub(super) struct Exits {
  #[cfg(target_os = "linux")]
  fds: Vec<(i32, crate::pidfd::PidFd)>,
}

impl Exits {
  /// Blocks until one of `blockers` (each a run's index and its target, just judged alive)
  /// exits or `until` passes. Returns false, without blocking, when it cannot watch them
  /// all: the caller then sleeps its polling step.
  #[cfg(target_os = "linux")]
  pub(super) fn wait(&mut self, runs: &[Run], blockers: &[(usize, Target)], until: Instant) -> bool {
    if blockers.len() > MAX_WATCHED {
      return false;
    }
    self.fds.retain(|(pid, _)| blockers.iter().any(|(_, t)| t.pid == *pid));
    for &(i, t) in blockers {
      if self.fds.iter().any(|(pid, _)| *pid == t.pid) {
        continue;
      }
      let Ok(fd) = crate::pidfd::PidFd::open(t.pid) else { return false };
      // The PID named the target when it was judged alive; the pidfd is the target's only if
      // it still does now that the pidfd is open. If not, the target is dead: look again.
      if !runs[i].is_alive(t) {
        return true;
      }
      self.fds.push((t.pid, fd));
    }
    let mut polls: Vec<libc::pollfd> =
      self.fds.iter().map(|(_, fd)| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let left = until.saturating_duration_since(Instant::now()).min(MAX_BLOCK);
    let timeout = libc::timespec { tv_sec: 0, tv_nsec: left.as_nanos() as libc::c_long };
    // SAFETY: `polls` holds open descriptors and lives across the call; no signal mask.
    unsafe { libc::ppoll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, &timeout, std::ptr::null()) };
    true
  }

  #[cfg(not(target_os = "linux"))]
  pub(super) fn wait(&mut self, _runs: &[Run], _blockers: &[(usize, Target)], _until: Instant) -> bool {
    false
  }
}
