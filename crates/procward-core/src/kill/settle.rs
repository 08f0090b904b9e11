//! Waiting for the targets to die: through the grace period, the settle window after the
//! last signal, and the stretch of that window while survivors are still dying.

use super::exits::Exits;
use super::run::{Run, Target};
use std::time::{Duration, Instant};

/// Waits until no target of the runs `live` (indices into `runs`) is alive or the deadline
/// passes; returns, for each of them in order, the targets still alive. A target seen dead
/// stays dead (a reused PID is not ours), so each pass only rechecks each run from its
/// first target still alive and stops there; between passes it sleeps until one of those
/// exits (see [`Exits`]), or else for a polling step.
/// With `exact`, the returned lists are re-checked; without, they may still hold members
/// that died at the last moment (the caller re-checks each before signalling anyway).
pub(super) fn wait_all(runs: &[Run], live: &[usize], deadline: Instant, exact: bool) -> Vec<Vec<Target>> {
  let mut pending: Vec<Vec<Target>> = live.iter().map(|&i| runs[i].targets.clone()).collect();
  let mut exits = Exits::default();
  let mut step = Duration::from_micros(500);
  loop {
    for (&i, left) in live.iter().zip(pending.iter_mut()) {
      while let Some(&t) = left.last() {
        if runs[i].is_alive(t) {
          break;
        }
        left.pop();
      }
    }
    if pending.iter().all(Vec::is_empty) {
      return pending;
    }
    if Instant::now() >= deadline {
      if exact {
        for (&i, left) in live.iter().zip(pending.iter_mut()) {
          left.retain(|&t| runs[i].is_alive(t));
        }
      }
      return pending;
    }
    let blockers: Vec<(usize, Target)> = live.iter().zip(&pending).filter_map(|(&i, left)| Some((i, *left.last()?))).collect();
    if !exits.wait(runs, &blockers, deadline) {
      std::thread::sleep(step.min(deadline.saturating_duration_since(Instant::now())));
      step = (step * 2).min(Duration::from_millis(2));
    }
  }
}

/// After the settle window: waits on while the survivors (`left[k]` of run `live[k]`) are
/// still dying (see [`dying`]) or still disappearing, until `deadline`. Returns who is
/// still alive, in the same shape.
pub(super) fn settle_longer(runs: &[Run], live: &[usize], mut left: Vec<Vec<Target>>, deadline: Instant) -> Vec<Vec<Target>> {
  // Survivors none of which is dying get this long to show progress before they count.
  const PROGRESS: Duration = Duration::from_millis(250);
  let mut last_progress = Instant::now();
  let count = |left: &[Vec<Target>]| left.iter().map(Vec::len).sum::<usize>();
  while count(&left) > 0 && Instant::now() < deadline {
    if last_progress.elapsed() >= PROGRESS && !left.iter().flatten().any(|t| dying(t.pid)) {
      break;
    }
    std::thread::sleep(Duration::from_millis(10).min(deadline.saturating_duration_since(Instant::now())));
    let before = count(&left);
    for (&i, l) in live.iter().zip(left.iter_mut()) {
      l.retain(|&t| runs[i].is_alive(t));
    }
    if count(&left) < before {
      last_progress = Instant::now();
    }
  }
  left
}

/// Whether `pid` is on its way out: SIGKILL pending (thread or shared), or the kernel's exit
/// path under way (`PF_EXITING`, 0x4, in field 9 of `/proc/<pid>/stat`). Such a process
/// never runs user code again; it only waits for a CPU to finish dying.
pub(super) fn dying(pid: i32) -> bool {
  #[cfg(target_os = "linux")]
  {
    const PF_EXITING: u64 = 0x4;
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    let mut buf = [0u8; 1024];
    let stat = crate::sys::read_proc_file(pid, "stat", &mut buf).ok().flatten().map(|n| &buf[..n]);
    let exiting = stat.and_then(|b| {
      let close = b.iter().rposition(|&c| c == b')')?;
      // After ')': index 0 is field 3, so field 9 (flags) is index 6.
      std::str::from_utf8(&b[close + 1..]).ok()?.split_ascii_whitespace().nth(6)?.parse::<u64>().ok()
    });
    if exiting.is_some_and(|f| f & PF_EXITING != 0) {
      return true;
    }
    let mut buf = [0u8; 8192];
    let Ok(Some(n)) = crate::sys::read_proc_file(pid, "status", &mut buf) else { return false };
    String::from_utf8_lossy(&buf[..n]).lines().any(|l| {
      let pending = l.strip_prefix("SigPnd:").or_else(|| l.strip_prefix("ShdPnd:"));
      pending.and_then(|v| u64::from_str_radix(v.trim(), 16).ok()).is_some_and(|m| m & SIGKILL_BIT != 0)
    })
  }
  #[cfg(not(target_os = "linux"))]
  {
    let _ = pid;
    false
  }
}
