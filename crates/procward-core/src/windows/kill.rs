//! Tree kill on Windows: stop a job's process tree, and never touch a process that merely
//! reuses a PID. The same names and report as the Unix `kill` module; Job Objects and
//! console control events in place of process groups and signals.
//!
//! 1. **Root.** Its PID is opened and its creation time (100 ns since 1601, as `identity`
//!    reports it) compared with the recorded one: another time is a reused PID
//!    (`refused_reused`, never touched). The guard refuses the idle process, System, the
//!    host, its ancestors and anything on the host's console (see [`crate::guard`]). With
//!    `require_session_leader` the root must be in its Job Object.
//! 2. **Snapshot**, before anything is sent: the Job Object named after the root's identity
//!    (`Local\procward-job-<pid>-<start_time>`, opened by name: no handle is passed around)
//!    and its members (`JobObjectBasicProcessIdList`), and the descendants from one
//!    Toolhelp32 snapshot (a child created before its parent holds a reused parent PID and is
//!    skipped). The job is the root's only while it holds the live root, and its members only
//!    those created no earlier than the root: procward creates a job for its suspended root,
//!    so anything else was put there by someone who took the name (never touched; the job is
//!    then ended member by member). Every process is opened at once and held by its handle until the kill ends:
//!    while a handle is open its PID is never reused, so every later step acts on exactly
//!    the process snapshotted (that handle is the identity check before each action).
//! 3. **Graceful step** (SIGTERM, SIGINT): `CTRL_BREAK_EVENT` (SIGTERM) to the job's process
//!    group, whose id is the root's PID, or `CTRL_C_EVENT` (SIGINT) to its console, sent by
//!    [`KillOptions::console_helper`] (`procward-supervise.exe --ctrl-break`), which attaches
//!    to the job's console; the host never leaves its own. No helper: no graceful step. A
//!    process started in a new process group ignores Ctrl-C unless it turns it back on
//!    (`SetConsoleCtrlHandler(NULL, FALSE)`), so SIGINT reaches few programs. Window messages
//!    (`WM_CLOSE`) are not sent: jobs run without windows.
//! 4. **Wait** on the held handles (`WaitForMultipleObjects`) until all have exited or the
//!    grace period ends. A job the graceful step could not reach (no helper, or the helper
//!    failed) is not waited for: nothing would tell it to exit.
//! 5. **Terminate**: the tree is walked again (new children, new members of the job), then
//!    `TerminateJobObject` ends the job's members at once, and `TerminateProcess` every
//!    snapshotted process outside the job (escapees: a process started with
//!    `CREATE_BREAKAWAY_FROM_JOB`, or by something outside the tree). A job holding the host
//!    or a refused process is never terminated whole: its members go one by one, and the
//!    walk and termination are repeated while they find new processes. The exit code is
//!    [`TERMINATED_EXIT_CODE`].
//! 6. **Settle** and report: a process counts as gone once its handle is signalled. The
//!    report has the Unix fields; `escalated` means termination followed the graceful step.
//!
//! `grace` 0 keeps the Unix meaning: the graceful step, then termination at once (as
//! `docker stop -t 0`). A first signal of SIGKILL terminates at once (not an escalation).
//! Other signals have no Windows counterpart and [`signal_named`] refuses them. One signal
//! with no escalation ([`signal_job`], `registry.signal`) is `killsignal`'s: it ends the
//! root alone for the terminating names, and sends Ctrl-Break alone for `SIGBREAK`.
//!
//! **Under Wine 8** (where the tests run): `GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, ..)`
//! fails with `ERROR_INVALID_HANDLE` (wineserver answers `STATUS_NOT_IMPLEMENTED` for any
//! event but Ctrl-C; later wineservers map Ctrl-Break to SIGQUIT), so no `cmd.exe` or `ping`
//! ends on Ctrl-Break there, and every kill with a grace period terminates at once. `CTRL_C_EVENT` works, but Wine reads
//! group 0 as the caller's own group instead of the whole console, which is why the helper
//! also names the job's group; a job's root sees it only if it turned Ctrl-C back on.

#[path = "killconsole.rs"]
mod killconsole;
#[path = "killjob.rs"]
mod killjob;
#[path = "killprocess.rs"]
mod killprocess;
#[path = "killrun.rs"]
mod killrun;
#[path = "killsignal.rs"]
mod killsignal;
#[path = "killsnapshot.rs"]
mod killsnapshot;

use crate::error::{Error, Result};
use crate::guard::{parent_map, Host};
use crate::identity::Identity;
pub use crate::killreport::{CgroupClaim, KillReport, KillRequest, Refused};
use crate::sys;
use killconsole::{CtrlEvent, Delivery, GroupTarget};
pub use killprocess::TERMINATED_EXIT_CODE;
use killprocess::{wait_all, Process};
use killrun::Run;
pub use killsignal::{job_signal_named, signal_job, JobSignal, WINDOWS_JOB_SIGNALS};
use killsnapshot::children_of;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a kill sends first. Windows has no signals: these three are what it can do.
#[allow(clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
  /// `CTRL_C_EVENT` to the job's console, then termination after the grace period.
  SIGINT,
  /// `CTRL_BREAK_EVENT` to the job's process group, then termination after the grace period.
  SIGTERM,
  /// Termination at once (`TerminateJobObject`, `TerminateProcess`).
  SIGKILL,
}

/// How to kill a tree.
#[derive(Debug, Clone)]
pub struct KillOptions {
  /// First step. Default SIGTERM (Ctrl-Break).
  pub signal: Signal,
  /// How long members get to exit after the graceful step before termination. Default 2 s.
  /// Zero means termination right after the graceful step.
  pub grace: Duration,
  /// How long to wait for members to exit after the last step. Default 500 ms.
  pub settle: Duration,
  /// Longest the settle window stretches while terminated members are still exiting.
  /// Default 5 s; never below `settle`.
  pub settle_max: Duration,
  /// Linux only: ignored on Windows.
  pub cgroup: Option<CgroupClaim>,
  /// Refuse the whole kill (`not_session_leader`) unless the root is in the Job Object
  /// named after its identity, as every job procward starts is. Default off.
  pub require_session_leader: bool,
  /// `procward-supervise.exe`, which sends the graceful step's console event (see the
  /// module docs). `None` (the default): no graceful step; the tree is terminated at once.
  pub console_helper: Option<PathBuf>,
  /// The session's mark (Unix: what proves a process is the job's). Ignored here: a job's
  /// processes are the members of the Job Object procward created for it, which a stranger
  /// cannot join, and each is held by a handle from its check to its end.
  pub mark: Option<String>,
  /// Ignored here, as `mark` (`require_session_leader` asks for the job's Job Object).
  pub require_proof: bool,
}

impl Default for KillOptions {
  fn default() -> Self {
    KillOptions {
      signal: Signal::SIGTERM,
      grace: Duration::from_secs(2),
      settle: Duration::from_millis(500),
      settle_max: Duration::from_secs(5),
      cgroup: None,
      require_session_leader: false,
      console_helper: None,
      mark: None,
      require_proof: false,
    }
  }
}

/// The step a name asks for: `SIGTERM`/`TERM`, `SIGINT`/`INT`, `SIGKILL`/`KILL`
/// (case-insensitive). Errors: `InvalidInput` for any other name, saying which exist.
pub fn signal_named(name: &str) -> Result<Signal> {
  match bare_signal_name(name).as_str() {
    "TERM" => Ok(Signal::SIGTERM),
    "INT" => Ok(Signal::SIGINT),
    "KILL" => Ok(Signal::SIGKILL),
    _ => Err(Error::InvalidInput(format!(
      "signal {name:?} has no Windows counterpart: use SIGTERM (Ctrl-Break), SIGINT (Ctrl-C) or SIGKILL (terminate)"
    ))),
  }
}

/// A signal's name as both name parsers compare it: trimmed, upper case, without `SIG`.
fn bare_signal_name(name: &str) -> String {
  let upper = name.trim().to_ascii_uppercase();
  upper.strip_prefix("SIG").map(str::to_owned).unwrap_or(upper)
}

/// Kills the tree rooted at `root` (see the module docs for the steps). Blocks for up to
/// `grace + settle`, and up to `grace + settle_max` while terminated members still exit.
///
/// Errors: `Io` when the Toolhelp32 snapshot cannot be taken. An unreadable root (access
/// denied) is never touched and is reported as a survivor.
pub fn kill_tree(root: &Identity, opts: &KillOptions) -> Result<KillReport> {
  let request = KillRequest { root: root.clone(), cgroup: None, mark: None };
  kill_trees(std::slice::from_ref(&request), opts).pop().expect("one report per request")
}

/// Kills many trees at once, each as [`kill_tree`] would, sharing one grace period, one
/// Toolhelp32 snapshot per walk and one run of the console helper. One result per request,
/// in order.
pub fn kill_trees(requests: &[KillRequest], opts: &KillOptions) -> Vec<Result<KillReport>> {
  let boot_id = match sys::boot_id() {
    Ok(b) => b,
    Err(e) => return requests.iter().map(|_| Err(io_error("reading the boot id", &e))).collect(),
  };
  let host = Host::current();
  let mut runs: Vec<Run> = requests.iter().map(|r| Run::new(&r.root)).collect();
  let mut errors: Vec<Option<Error>> = requests.iter().map(|_| None).collect();
  let going: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].begin(&host, &boot_id, opts.require_session_leader)).collect();
  if !going.is_empty() {
    match parent_map() {
      Ok(parents) => {
        let children = children_of(&parents);
        for &i in &going {
          runs[i].walk(&children, &host);
        }
      }
      Err(e) => {
        for &i in &going {
          errors[i] = Some(io_error("reading the process table", &e));
        }
      }
    }
  }
  let live: Vec<usize> = going.into_iter().filter(|&i| errors[i].is_none()).collect();
  let first = Instant::now();
  let mut last_termination = None;
  if opts.signal == Signal::SIGKILL {
    terminate(&mut runs, &live, &host, false);
    last_termination = Some(Instant::now());
  } else {
    // Grace 0 terminates right after the graceful step (one grace rule on every platform).
    graceful_step(&mut runs, &live, opts);
    // Nothing told the unreached ones to exit: they are terminated now.
    let unreached: Vec<usize> = live.iter().copied().filter(|&i| !runs[i].delivered).collect();
    if !unreached.is_empty() {
      terminate(&mut runs, &unreached, &host, true);
      last_termination = Some(Instant::now());
    }
    let reached: Vec<usize> = live.iter().copied().filter(|&i| runs[i].delivered).collect();
    wait(&runs, &reached, first + opts.grace);
    let left: Vec<usize> = reached.into_iter().filter(|&i| runs[i].targets.iter().any(|t| t.process.running())).collect();
    if !left.is_empty() {
      terminate(&mut runs, &left, &host, true);
      last_termination = Some(Instant::now());
    }
  }
  let from = last_termination.unwrap_or(first);
  if !wait(&runs, &live, from + opts.settle) && last_termination.is_some() {
    wait(&runs, &live, from + opts.settle_max.max(opts.settle));
  }
  for &i in &live {
    runs[i].note_gone_unsignalled();
    runs[i].finish();
  }
  runs.into_iter().zip(errors).map(|(run, err)| err.map_or(Ok(run.report), Err)).collect()
}

/// Sends the graceful step's console event to every live tree in one run of the helper.
fn graceful_step(runs: &mut [Run], live: &[usize], opts: &KillOptions) {
  let Some(helper) = &opts.console_helper else { return };
  let event = if opts.signal == Signal::SIGINT { CtrlEvent::C } else { CtrlEvent::Break };
  let mut targets = Vec::new();
  let mut reaching = Vec::new();
  for &i in live {
    let run = &runs[i];
    // Whose console the helper may attach to: the root first, then the job's members (a
    // gone root's group lives on in them). A process outside the job may be on a console
    // of its own, where the group id means nothing.
    let attach: Vec<i32> =
      run.targets.iter().filter(|t| (t.in_job || t.pid() == run.root.pid) && t.process.running()).map(|t| t.pid()).take(4).collect();
    if !attach.is_empty() {
      targets.push(GroupTarget { group: run.root.pid, attach });
      reaching.push(i);
    }
  }
  if targets.is_empty() {
    return;
  }
  for (i, delivery) in reaching.into_iter().zip(killconsole::send(helper, event, &targets)) {
    if let Delivery::Sent(console) = delivery {
      runs[i].mark_delivered(&console);
    }
  }
}

/// Most walk-and-terminate rounds of one termination step.
const TERMINATE_ROUNDS: usize = 8;

/// Walks the trees again (one Toolhelp32 snapshot for all), then terminates each; again
/// while a walk finds processes the last one did not (children born between a walk and the
/// termination of their parent: `TerminateJobObject` leaves none, but a job ended member by
/// member, or an escapee's tree, may), at most [`TERMINATE_ROUNDS`] times.
fn terminate(runs: &mut [Run], which: &[usize], host: &Host, escalation: bool) {
  for round in 0..TERMINATE_ROUNDS {
    let known: usize = which.iter().map(|&i| runs[i].known()).sum();
    if let Ok(parents) = parent_map() {
      let children = children_of(&parents);
      for &i in which {
        runs[i].walk(&children, host);
      }
    }
    if round > 0 && which.iter().map(|&i| runs[i].known()).sum::<usize>() == known {
      return;
    }
    for &i in which {
      runs[i].terminate(escalation);
    }
  }
}

/// Waits until every target of `which` has exited or `deadline` passes. Returns whether all
/// have exited.
fn wait(runs: &[Run], which: &[usize], deadline: Instant) -> bool {
  let mut all = true;
  for &i in which {
    let running: Vec<&Process> = runs[i].targets.iter().map(|t| &t.process).filter(|p| p.running()).collect();
    all &= wait_all(running, deadline);
  }
  all
}

/// The same I/O error again for each request of a batch (`io::Error` is not `Clone`).
fn io_error(context: &str, e: &std::io::Error) -> Error {
  Error::io(context, std::io::Error::new(e.kind(), e.to_string()))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn signal_names_map_to_the_three_steps_and_others_are_refused() {
    assert_eq!(signal_named("SIGTERM").unwrap(), Signal::SIGTERM);
    assert_eq!(signal_named("term").unwrap(), Signal::SIGTERM);
    assert_eq!(signal_named("SIGINT").unwrap(), Signal::SIGINT);
    assert_eq!(signal_named("Kill").unwrap(), Signal::SIGKILL);
    let err = signal_named("SIGHUP").unwrap_err().to_string();
    assert!(err.contains("SIGHUP") && err.contains("SIGKILL"), "{err}");
  }
}
