//! A durable job's kill-after deadline (`--timeout-ms <n> [--timeout-grace-ms <n>]`): the
//! supervisor, not the host, enforces it, so it holds when the host has crashed. Counted on
//! the supervisor's monotonic clock from the moment the job started (a wall-clock change
//! moves nothing). When it passes before the job ended:
//!
//! - Unix: every descendant of the supervisor (the job and the orphans it adopted as a child
//!   subreaper: the whole tree, also what left the job's group) gets SIGTERM and SIGCONT,
//!   each after a fresh identity check; after the grace period the tree is walked again and
//!   every survivor gets SIGKILL. The supervisor's own group is never signalled: it is the
//!   supervisor's (it would be refused by the kill guard, which spares its caller's group).
//!   Runs on a thread of its own, so the copy loop keeps copying the job's last output.
//! - Windows: Ctrl-Break to the job's process group (it has a hidden console of its own),
//!   sent by a copy of the supervisor (`--ctrl-break`, see `ctrlbreak`), then, after the
//!   grace period, the job's Job Object is terminated (exit code 1).
//!
//! The exit file then says `"timedOut":true` (see `ended`).

use std::time::{Duration, Instant};

/// When the deadline falls and how long its SIGTERM gets before SIGKILL.
pub struct Deadline {
  at: Instant,
  pub grace: Duration,
  fired: bool,
}

impl Deadline {
  /// A deadline `after` from now (the job just started).
  pub fn new(after: Duration, grace: Duration) -> Deadline {
    Deadline { at: Instant::now() + after, grace, fired: false }
  }

  /// How long until it falls; `None` once it fired.
  pub fn left(&self) -> Option<Duration> {
    (!self.fired).then(|| self.at.saturating_duration_since(Instant::now()))
  }

  /// True once, when the deadline has passed.
  pub fn due(&mut self) -> bool {
    if self.fired || Instant::now() < self.at {
      return false;
    }
    self.fired = true;
    true
  }
}

/// The shorter of two optional waits.
pub fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
  match (a, b) {
    (Some(a), Some(b)) => Some(a.min(b)),
    (a, b) => a.or(b),
  }
}

/// Tree-kills every descendant of this process on a new thread: SIGTERM (with SIGCONT),
/// `grace` for them to go, SIGKILL to the survivors and to what they started meanwhile.
#[cfg(unix)]
pub fn kill_descendants(grace: Duration) {
  std::thread::spawn(move || {
    let first = signal_tree(libc::SIGTERM, &[]);
    let until = Instant::now() + grace;
    while Instant::now() < until && first.iter().any(|&(pid, start)| same_process(pid, start)) {
      std::thread::sleep(Duration::from_millis(20));
    }
    // Two rounds: what a dying member forked between the walk and its SIGKILL is found by the second.
    for _ in 0..2 {
      signal_tree(libc::SIGKILL, &first);
    }
  });
}

/// Windows: the deadline's graceful step, Ctrl-Break to the job's process group, sent by a
/// copy of ourselves that attaches to the job's console (we have none), detached from us.
/// Best effort: the forceful step follows anyway.
#[cfg(windows)]
pub fn ctrl_break(job_pid: u32) {
  use std::os::windows::process::CommandExt;
  use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS};
  let Ok(exe) = std::env::current_exe() else { return };
  let _ = std::process::Command::new(exe)
    .arg("--ctrl-break")
    .arg(format!("{job_pid}@{job_pid}"))
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP)
    .spawn();
}

/// Sends `sig` to every live descendant of ours (and to the still-current members of
/// `also`), each right after a check that its PID still names the process walked; returns
/// `(pid, start time)` of each one signalled.
#[cfg(unix)]
fn signal_tree(sig: libc::c_int, also: &[(i32, u64)]) -> Vec<(i32, u64)> {
  let me = std::process::id() as i32;
  let Ok(table) = procward_core::probe::process_table() else { return Vec::new() };
  let Some(own) = table.iter().find(|p| p.pid == me) else { return Vec::new() };
  let mut members: Vec<(i32, u64)> = procward_core::tree::descendants_in(&table, me, own.start_time)
    .iter()
    .filter(|p| !p.is_dead())
    .map(|p| (p.pid, p.start_time))
    .collect();
  members.extend(also.iter().filter(|m| !members.contains(m)).copied().collect::<Vec<_>>());
  members.retain(|&(pid, start)| {
    if pid <= 1 || pid == me {
      return false;
    }
    // Through a pidfd opened before the check, so the process checked is the one signalled
    // (by number where there are no pidfds; a pidfd that cannot be opened: not signalled).
    use procward_core::pidfd::{OpenError, PidFd};
    let fd = match PidFd::open(pid) {
      Ok(fd) => Some(fd),
      Err(OpenError::Unsupported) => None,
      Err(_) => return false,
    };
    if !same_process(pid, start) {
      return false;
    }
    let send = |s: libc::c_int| match &fd {
      Some(fd) => drop(fd.signal(s)),
      // SAFETY: checked just above; the platform has no pidfds.
      None => unsafe {
        libc::kill(pid, s);
      },
    };
    send(sig);
    if sig == libc::SIGTERM {
      // A stopped member runs its SIGTERM handler instead of waiting for SIGKILL.
      send(libc::SIGCONT);
    }
    true
  });
  members
}

/// Whether `pid` is alive (not a zombie) and started at `start`.
#[cfg(unix)]
fn same_process(pid: i32, start: u64) -> bool {
  matches!(procward_core::probe::probe_one(pid), procward_core::probe::Probe::Found(p) if !p.is_dead() && p.start_time == start)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a_deadline_falls_once_and_then_has_nothing_left() {
    let mut d = Deadline::new(Duration::ZERO, Duration::from_millis(5));
    assert!(d.due());
    assert!(!d.due(), "it fires once");
    assert_eq!(d.left(), None);
    let far = Deadline::new(Duration::from_secs(3600), Duration::ZERO);
    assert!(far.left().is_some_and(|l| l > Duration::from_secs(3000)));
    assert_eq!(sooner(Some(Duration::from_millis(3)), Some(Duration::from_millis(2))), Some(Duration::from_millis(2)));
    assert_eq!(sooner(None, Some(Duration::from_millis(2))), Some(Duration::from_millis(2)));
    assert_eq!(sooner(None, None), None);
  }
}
