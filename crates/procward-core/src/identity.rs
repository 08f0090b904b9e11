//! Process identity: `(pid, start time, boot id)`.
//!
//! A PID alone never identifies a process: PIDs are reused. The start time tells two
//! processes with the same PID apart, and the boot id tells two boots apart (start times
//! restart at zero on every boot). Never derived from the wall clock.

use crate::probe::{probe_one, Probe, ProcessInfo};
use crate::sys;

/// Who a process is. Compare with the live system through [`verdict`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
  pub pid: i32,
  /// Linux: `starttime`, field 22 of `/proc/<pid>/stat`, in clock ticks since boot.
  pub start_time: u64,
  /// Linux: `/proc/sys/kernel/random/boot_id`.
  pub boot_id: String,
}

/// What the live system says about a recorded identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
  /// The same process is alive.
  Current,
  /// The PID is alive but belongs to another process (different start time or boot).
  Replaced,
  /// No such PID, or it is a zombie.
  Gone,
  /// Cannot be read right now: alive for bookkeeping, never signalled.
  Unknown,
}

impl Verdict {
  pub fn as_str(self) -> &'static str {
    match self {
      Verdict::Current => "current",
      Verdict::Replaced => "replaced",
      Verdict::Gone => "gone",
      Verdict::Unknown => "unknown",
    }
  }
}

/// This boot's id (Linux: `/proc/sys/kernel/random/boot_id`, read once), the third part of
/// every identity recorded now. Errors: the read's, when the platform's source of it cannot
/// be read.
pub fn boot_id() -> std::io::Result<String> {
  sys::boot_id()
}

/// Reads the identity of a live process. `Ok(None)`: no such process, or a zombie (a
/// zombie has no identity worth recording: it is already dead).
pub fn identity(pid: i32) -> std::io::Result<Option<Identity>> {
  let boot_id = sys::boot_id()?;
  match sys::read_stat(pid)? {
    Some(info) if !info.is_dead() => Ok(Some(Identity { pid, start_time: info.start_time, boot_id })),
    _ => Ok(None),
  }
}

#[cfg(unix)]
/// Identity of a process we just spawned and have not reaped yet: even if it already
/// exited, its zombie still carries the start time.
pub(crate) fn identity_of_child(pid: i32) -> std::io::Result<Identity> {
  let boot_id = sys::boot_id()?;
  match sys::read_stat(pid)? {
    Some(info) => Ok(Identity { pid, start_time: info.start_time, boot_id }),
    None => Err(std::io::Error::new(std::io::ErrorKind::NotFound, format!("child {pid} vanished before it was reaped"))),
  }
}

/// Compares a recorded identity with the live system. Reads the kernel every time (never
/// a cache), so call it immediately before acting on the answer.
pub fn verdict(id: &Identity) -> Verdict {
  let Ok(boot_id) = sys::boot_id() else { return Verdict::Unknown };
  judge(id, &boot_id, &probe_one(id.pid))
}

/// The verdict rules, separate from the reads so they can be tested on any input.
pub fn judge(id: &Identity, current_boot_id: &str, probe: &Probe) -> Verdict {
  match probe {
    Probe::Missing => Verdict::Gone,
    Probe::Unreadable(_) => Verdict::Unknown,
    Probe::Found(info) if info.is_dead() => Verdict::Gone,
    Probe::Found(info) => {
      if id.boot_id == current_boot_id && matches(id, info) {
        Verdict::Current
      } else {
        Verdict::Replaced
      }
    }
  }
}

fn matches(id: &Identity, info: &ProcessInfo) -> bool {
  id.pid == info.pid && id.start_time == info.start_time
}

#[cfg(test)]
mod tests {
  use super::*;

  fn info(state: char, start: u64) -> ProcessInfo {
    ProcessInfo { pid: 10, ppid: 1, pgid: 10, state, start_time: start }
  }
  fn id(start: u64) -> Identity {
    Identity { pid: 10, start_time: start, boot_id: "boot-a".into() }
  }

  #[test]
  fn same_start_same_boot_is_current() {
    assert_eq!(judge(&id(5), "boot-a", &Probe::Found(info('S', 5))), Verdict::Current);
  }

  #[test]
  fn one_tick_off_is_replaced() {
    assert_eq!(judge(&id(6), "boot-a", &Probe::Found(info('S', 5))), Verdict::Replaced);
  }

  #[test]
  fn another_boot_is_replaced_even_with_equal_ticks() {
    assert_eq!(judge(&id(5), "boot-b", &Probe::Found(info('R', 5))), Verdict::Replaced);
  }

  #[test]
  fn zombie_and_missing_are_gone() {
    assert_eq!(judge(&id(5), "boot-a", &Probe::Found(info('Z', 5))), Verdict::Gone);
    assert_eq!(judge(&id(5), "boot-a", &Probe::Missing), Verdict::Gone);
  }

  #[test]
  fn unreadable_is_unknown_never_replaced() {
    assert_eq!(judge(&id(5), "boot-a", &Probe::Unreadable("EACCES".into())), Verdict::Unknown);
  }

  #[cfg(target_os = "linux")]
  #[test]
  fn live_process_is_current_and_shifted_start_is_replaced() {
    let me = identity(std::process::id() as i32).unwrap().unwrap();
    assert_eq!(verdict(&me), Verdict::Current);
    let shifted = Identity { start_time: me.start_time + 1, ..me.clone() };
    assert_eq!(verdict(&shifted), Verdict::Replaced);
  }
}
