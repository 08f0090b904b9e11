//! The signal plan: the group signal when the guard allows it, then each target that is not
//! a member of that group, each right after a fresh identity check and the guard's.
//!
//! A stopped process (SIGSTOP, Ctrl-Z) cannot act on SIGTERM: the signal stays pending, its
//! handler never runs, and the kill always ends in SIGKILL with the job's cleanup undone.
//! So every signal a stopped process must run to handle is followed at once by SIGCONT to
//! whatever got it (the group, each member signalled on its own), as `kill(1)` of a shell
//! does for a stopped job. A process that was not stopped ignores SIGCONT unless it handles
//! it (a TUI redraws).

use super::run::{Handle, Run, Target};
use crate::guard::session_of;
use crate::identity::Verdict;
use crate::pidfd::{OpenError, PidFd};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

impl Run<'_> {
  /// Sends the group signal when the guard allows it at this instant: the group may be the
  /// job's (`Run::group_is_jobs`), the leader is ours (identity `current`), leads its own session, and the group spares the host. A session
  /// leader stays one for life, so the check between two identity reads holds for the signal.
  ///
  /// The signal goes through a pidfd of the root opened before the check
  /// (`PIDFD_SIGNAL_PROCESS_GROUP`), so it reaches the group the root made and no later group
  /// of its number. A kernel without that flag, or a pidfd that cannot be opened, gets no
  /// group signal (each target is signalled through its own pidfd); a system without pidfds
  /// gets `kill(-pgid)` right after the checks. The pidfd is closed at once: a batch of
  /// hundreds of trees never holds one per tree.
  pub(super) fn signal_group(&mut self, root: Target, sig: Signal) -> bool {
    // A group of the root's number that may not be the job's (the root is a stranger, or
    // gone) gets no signal, whoever leads it now.
    if !self.group_is_jobs {
      return false;
    }
    let fd = match PidFd::open(root.pid) {
      Ok(fd) => Some(fd),
      Err(OpenError::Unsupported) => None,
      Err(_) => return false,
    };
    let (Verdict::Current, Some(info)) = self.check(root) else { return false };
    if self.host.check_group(&info, session_of(root.pid)).is_err() {
      return false;
    }
    match fd {
      Some(fd) => fd.signal_group(sig as i32).unwrap_or(false),
      None => self.verdict(root) == Verdict::Current && kill(Pid::from_raw(-root.pid), sig).is_ok(),
    }
  }

  /// Signals the whole group (if the guard allows it), then each target that is not a
  /// member of that group, each right after a fresh identity check and the guard's.
  /// Each signal that needs the process to run is followed by SIGCONT (see the module docs).
  pub(super) fn signal_all(&mut self, sig: Signal) {
    let root = self.root_target();
    let resume = needs_to_run(sig);
    let group_sent = self.signal_group(root, sig);
    if group_sent {
      Self::note(&mut self.report.signalled, root.pid);
      // A leader that the signal ended already cannot vouch for its group any more: its
      // snapshotted members get SIGCONT one by one, each after its own identity check.
      if resume && !self.signal_group(root, Signal::SIGCONT) {
        for t in self.targets.clone().into_iter().filter(|t| t.pgid == root.pid && t.pid != root.pid) {
          self.resume(t);
        }
      }
    }
    // A copy: a refusal takes its PID out of the targets.
    for t in self.targets.clone() {
      self.signal_target(t, sig, group_sent, resume);
    }
  }

  /// `sig` to `t` alone, checked as every target is (and SIGCONT after it when needed).
  pub(super) fn signal_one(&mut self, t: Target, sig: Signal) {
    self.signal_target(t, sig, false, needs_to_run(sig));
  }

  /// SIGCONT to `t`, checked again: a signal goes only to a process that is current right
  /// before it.
  fn resume(&mut self, t: Target) {
    let handle = self.handle(t.pid);
    if self.verdict(t) == Verdict::Current {
      Self::send(&handle, t.pid, Signal::SIGCONT);
    }
  }

  pub(super) fn root_target(&self) -> Target {
    Target { pid: self.root.pid, start_time: self.root.start_time, pgid: self.root.pid }
  }

  /// One target's turn: a member of the signalled group is only counted; any other live
  /// one is signalled after the guard's check. Gone and reused PIDs are listed as such.
  fn signal_target(&mut self, t: Target, sig: Signal, group_sent: bool, resume: bool) {
    let group = self.root.pid;
    // A member at the snapshot that is still in the group (or gone: counted below the same
    // way) was reached by the group signal. Whoever holds its PID now is of the job's own
    // group (a group's id is never handed to a new process while the group exists), so one
    // getpgid answers without the stat read (which contends with the exits under way).
    if group_sent && t.pgid == group {
      // SAFETY: getpgid only reads the kernel's record of `t.pid`.
      let now = unsafe { libc::getpgid(t.pid) };
      if now == group || (now < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)) {
        Self::note(&mut self.report.signalled, t.pid);
        return;
      }
    }
    // Opened before the check, so the process checked is the process signalled.
    let handle = self.handle(t.pid);
    if matches!(handle, Handle::Never) && self.report.refused.iter().any(|r| r.pid == Some(t.pid)) {
      return;
    }
    match self.check(t) {
      // The group signal reached it: the guard passed the group, which holds no process
      // of the host's (`Host::check_group`), so no check of its own is needed.
      (Verdict::Current, Some(info)) if group_sent && info.pgid == group => Self::note(&mut self.report.signalled, t.pid),
      (Verdict::Current, Some(info)) => {
        if let Err(reason) = self.host.check_process(&info, session_of(t.pid)) {
          self.refuse(t.pid, reason);
          return;
        }
        if Self::send(&handle, t.pid, sig) {
          Self::note(&mut self.report.signalled, t.pid);
          if resume {
            self.resume(t);
          }
        }
      }
      (Verdict::Current, None) => {}
      (Verdict::Gone, _) if group_sent && t.pgid == group => Self::note(&mut self.report.signalled, t.pid),
      (Verdict::Gone, _) => {
        if !self.report.signalled.contains(&t.pid) {
          Self::note(&mut self.report.already_gone, t.pid);
        }
      }
      (Verdict::Replaced, _) => Self::note(&mut self.report.refused_reused, t.pid),
      (Verdict::Unknown, _) => {}
    }
  }
}

/// Whether a stopped process must run to act on `sig`: every signal but SIGKILL (which ends
/// a stopped process too), SIGCONT itself and the stop signals (which SIGCONT would undo).
fn needs_to_run(sig: Signal) -> bool {
  !matches!(sig, Signal::SIGKILL | Signal::SIGCONT | Signal::SIGSTOP | Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU)
}
