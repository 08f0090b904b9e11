//! Process file descriptors: the one place procward opens pidfds and signals through them.
//!
//! A pidfd (Linux 5.3+, `pidfd_open(2)`) names one process, not a number: once it is open,
//! the process it names can exit and its PID be handed to a stranger, and a signal sent
//! through the pidfd (`pidfd_send_signal(2)`) still goes to the process it was opened for,
//! or nowhere (`ESRCH`). So a kill opens a pidfd first, checks the identity of the process
//! it names after the open (`/proc/<pid>/stat` field 22 still the recorded start time), and
//! signals through it: the process checked is the process signalled.
//!
//! A pidfd pins the kernel's `struct pid`, and a process group is the list of processes
//! whose group id is that `struct pid` (`PIDTYPE_PGID`). With `PIDFD_SIGNAL_PROCESS_GROUP`
//! (Linux 6.9+) a signal through the leader's pidfd reaches the group the leader made,
//! even once the leader is reaped, and never a later group that reuses its number (a new
//! `struct pid`). Older kernels refuse the flag (`EINVAL`): the kill then signals each
//! member through its own pidfd and sends no group signal at all.
//!
//! Where there are no pidfds (`ENOSYS`: kernels before 5.3, seccomp filters; macOS and
//! other systems), callers fall back to a check right before `kill(2)` by number, and the
//! window between them stays (SECURITY.md lists it). `PROCWARD_NO_PIDFD=1` in the
//! environment of the process that loads procward forces that fallback, for tests of it.
//!
//! Descriptors are opened one at a time and closed after their signal (the kill's exit
//! waits keep at most 64, see `kill::exits`), so a bulk kill of thousands of processes
//! never holds more than a few.

use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicU8, Ordering};

/// `PIDFD_SIGNAL_PROCESS_GROUP` from `<linux/pidfd.h>` (Linux 6.9).
#[cfg(target_os = "linux")]
const PIDFD_SIGNAL_PROCESS_GROUP: libc::c_uint = 1 << 2;

/// An open pidfd (Linux). Closed on drop.
#[derive(Debug)]
pub struct PidFd {
  #[cfg(target_os = "linux")]
  fd: OwnedFd,
}

/// Why no pidfd could be opened for a PID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
  /// No such process (`ESRCH`): it was reaped, or never existed.
  Gone,
  /// This system has no pidfds (`ENOSYS`, forced off, or not Linux): use the fallback.
  Unsupported,
  /// pidfds exist but this one could not be opened (`EMFILE`, `ENFILE`, `ENOMEM`, `EINVAL`
  /// for a thread that leads no thread group, ...): never signal such a process by number.
  Failed(i32),
}

/// Whether pidfds are used at all: not forced off and not refused with `ENOSYS` so far.
pub fn available() -> bool {
  #[cfg(target_os = "linux")]
  return state() != State::Missing;
  #[cfg(not(target_os = "linux"))]
  false
}

#[cfg(target_os = "linux")]
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
  Unknown = 0,
  Present = 1,
  Missing = 2,
}

/// 0 unknown, 1 present, 2 missing (see [`State`]).
#[cfg(target_os = "linux")]
static STATE: AtomicU8 = AtomicU8::new(0);
/// 0 unknown, 1 the group flag works, 2 the kernel refuses it.
#[cfg(target_os = "linux")]
static GROUP_FLAG: AtomicU8 = AtomicU8::new(0);

#[cfg(target_os = "linux")]
fn state() -> State {
  match STATE.load(Ordering::Relaxed) {
    1 => State::Present,
    2 => State::Missing,
    _ => {
      let forced_off = std::env::var_os("PROCWARD_NO_PIDFD").is_some_and(|v| v == "1");
      let s = if forced_off { State::Missing } else { State::Unknown };
      if forced_off {
        STATE.store(2, Ordering::Relaxed);
      }
      s
    }
  }
}

impl PidFd {
  /// Opens a pidfd for `pid` (close-on-exec). The caller must check the identity of the
  /// process it names after this returns: until then it may name whoever held the PID at
  /// the instant of the open. A zombie can be opened (and a signal to it succeeds without
  /// effect, so a sent signal never proves life).
  pub fn open(pid: i32) -> Result<PidFd, OpenError> {
    #[cfg(target_os = "linux")]
    {
      if pid <= 0 {
        return Err(OpenError::Gone);
      }
      if state() == State::Missing {
        return Err(OpenError::Unsupported);
      }
      // SAFETY: pidfd_open takes a PID and flags and returns a new descriptor or -1.
      let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
      if fd >= 0 {
        STATE.store(State::Present as u8, Ordering::Relaxed);
        // SAFETY: a non-negative result is a descriptor nothing else owns. pidfds are
        // always close-on-exec.
        return Ok(PidFd { fd: unsafe { OwnedFd::from_raw_fd(fd as i32) } });
      }
      match io::Error::last_os_error().raw_os_error() {
        Some(libc::ESRCH) => Err(OpenError::Gone),
        Some(libc::ENOSYS) => {
          STATE.store(State::Missing as u8, Ordering::Relaxed);
          Err(OpenError::Unsupported)
        }
        Some(e) => Err(OpenError::Failed(e)),
        None => Err(OpenError::Failed(0)),
      }
    }
    #[cfg(not(target_os = "linux"))]
    {
      let _ = pid;
      Err(OpenError::Unsupported)
    }
  }

  /// Sends `sig` to the process this pidfd names. `ESRCH` once it was reaped; succeeds
  /// without effect on a zombie.
  pub fn signal(&self, sig: i32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    return self.send(sig, 0);
    #[cfg(not(target_os = "linux"))]
    {
      let _ = sig;
      Err(io::Error::from(io::ErrorKind::Unsupported))
    }
  }

  /// Sends `sig` to the process group this pidfd's process made (its PID as a group id, as
  /// `kill(-pid)` names it, but never a later group of that number). `Ok(false)` when the
  /// kernel has no `PIDFD_SIGNAL_PROCESS_GROUP` (before 6.9): nothing was sent.
  pub fn signal_group(&self, sig: i32) -> io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
      if GROUP_FLAG.load(Ordering::Relaxed) == 2 {
        return Ok(false);
      }
      match self.send(sig, PIDFD_SIGNAL_PROCESS_GROUP) {
        Ok(()) => {
          GROUP_FLAG.store(1, Ordering::Relaxed);
          Ok(true)
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && GROUP_FLAG.load(Ordering::Relaxed) == 0 => {
          GROUP_FLAG.store(2, Ordering::Relaxed);
          Ok(false)
        }
        Err(e) => Err(e),
      }
    }
    #[cfg(not(target_os = "linux"))]
    {
      let _ = sig;
      Ok(false)
    }
  }

  #[cfg(target_os = "linux")]
  fn send(&self, sig: i32, flags: libc::c_uint) -> io::Result<()> {
    // SAFETY: the descriptor is an open pidfd; no siginfo (the kernel fills one as kill does).
    let r = unsafe { libc::syscall(libc::SYS_pidfd_send_signal, self.fd.as_raw_fd(), sig, std::ptr::null::<libc::siginfo_t>(), flags) };
    if r == 0 {
      Ok(())
    } else {
      Err(io::Error::last_os_error())
    }
  }

  /// The descriptor, for `poll` (readable once the process has exited).
  #[cfg(target_os = "linux")]
  pub fn as_raw_fd(&self) -> i32 {
    self.fd.as_raw_fd()
  }

  /// The descriptor itself (for a reader that keeps it to notice the exit).
  #[cfg(target_os = "linux")]
  pub fn into_owned(self) -> OwnedFd {
    self.fd
  }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
  use super::*;
  use std::os::unix::process::CommandExt;

  #[test]
  fn a_pidfd_keeps_naming_its_process_after_the_pid_is_reaped() {
    let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let fd = PidFd::open(child.id() as i32).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    // Reaped: the pidfd names no process, whoever gets the PID next.
    assert_eq!(fd.signal(libc::SIGTERM).unwrap_err().raw_os_error(), Some(libc::ESRCH));
  }

  #[test]
  fn the_group_signal_reaches_the_leaders_group_after_the_leader_is_reaped() {
    use crate::identity::{identity, verdict, Verdict};
    // The leader makes a group, starts a member, and is killed and reaped alone.
    let mut leader = std::process::Command::new("sh").args(["-c", "sleep 30 & wait"]).process_group(0).spawn().unwrap();
    let pid = leader.id() as i32;
    let mut member = None;
    crate::testwait::until("the member", || {
      member = crate::tree::descendants(pid).unwrap().into_iter().find(|p| !p.is_dead());
      member.is_some()
    });
    let member = identity(member.unwrap().pid).unwrap().unwrap();
    let fd = PidFd::open(pid).unwrap();
    leader.kill().unwrap();
    leader.wait().unwrap();
    match fd.signal_group(libc::SIGKILL) {
      Ok(true) => crate::testwait::until("the member to die", || verdict(&member) != Verdict::Current),
      // A kernel before 6.9: nothing was sent.
      Ok(false) => unsafe {
        libc::kill(member.pid, libc::SIGKILL);
      },
      Err(e) => panic!("{e}"),
    }
  }

  #[test]
  fn nothing_is_opened_for_pid_0_or_a_missing_process() {
    assert_eq!(PidFd::open(0).unwrap_err(), OpenError::Gone);
    assert_eq!(PidFd::open(-5).unwrap_err(), OpenError::Gone);
    assert!(matches!(PidFd::open(i32::MAX).unwrap_err(), OpenError::Gone | OpenError::Unsupported));
  }
}
