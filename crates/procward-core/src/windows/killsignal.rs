//! One signal to a job on Windows, with no escalation and no wait: the Windows half of
//! `registry.signal` (the Unix half is `kill/jobsignal.rs`).
//!
//! Windows has no signals. What each name does follows libuv's `uv_kill`, which Node's
//! `process.kill` is built on: libuv terminates the process for `SIGTERM`, `SIGKILL`,
//! `SIGINT` and `SIGQUIT` (`TerminateProcess`, exit code 1) and answers `UV_ENOSYS` for
//! other signals (<https://docs.libuv.org/en/v1.x/process.html#c.uv_kill>); Node documents
//! it as "sending `SIGINT`, `SIGTERM`, and `SIGKILL` will cause the unconditional
//! termination of the target process", and `SIGBREAK` as what Ctrl-Break delivers
//! (<https://nodejs.org/api/process.html#signal-events>). So:
//!
//! - `SIGTERM`, `SIGKILL`, `SIGINT`, `SIGQUIT`, `SIGHUP` ([`JobSignal::Terminate`]): the
//!   job's ROOT alone is terminated (`TerminateProcess`, exit code [`TERMINATED_EXIT_CODE`]).
//!   `SIGHUP` joins libuv's four: on Windows it means the console closed, after which
//!   Windows ends the process anyway. No tree walk, no escalation, no wait: the root's
//!   children run on (a tree kill is [`kill_tree`](super::kill_tree)).
//! - `SIGBREAK` ([`JobSignal::Break`]): `CTRL_BREAK_EVENT` to the job's process group (its
//!   id is the root's PID: every job starts with `CREATE_NEW_PROCESS_GROUP`), through the
//!   console helper the kill path's graceful step uses (`killconsole`). Only for a root
//!   in the Job Object named after it (procward started it, in a group and on a console of
//!   its own); any other root is refused with `not_session_leader`, as Unix refuses a group
//!   whose leader does not lead its session. A program may handle Ctrl-Break and run on.
//!   Under Wine 8 the event cannot be sent (see the `kill` module docs): an `Io` error
//!   (`EIO`) and the job runs on.
//! - every other name: `Unsupported` ([`WINDOWS_JOB_SIGNALS`] lists the names there are).
//!
//! **Identity.** The root is judged as a tree kill judges it (`Run::begin`, one code path):
//! its PID is opened once and the creation time read through that handle is compared with
//! the recorded one; the handle stays open until the action is done, so the PID cannot be
//! handed to another process between the check and `TerminateProcess` (which acts on that
//! very handle) or the helper's attach. The guard applies (never the idle process, System,
//! the host, its ancestors or a process on the host's console).
//!
//! **The end** is then published as any Windows exit is: the exit code (1 after
//! termination, or whatever the job chose on Ctrl-Break) and no signal, as a tree kill's
//! end is (Windows has no signals to report; see `windows/reader.rs`).
//!
//! **Durable jobs**: call this with the job's own identity (the `job` of `supervisor.json`),
//! never the supervisor's: the supervisor holds the job's Job Object and writes the exit
//! file when the job ends; ending it would leave none.

use super::killconsole::{self, CtrlEvent, Delivery, GroupTarget};
use super::killrun::Run;
use super::{bare_signal_name, KillReport, TERMINATED_EXIT_CODE};
use crate::error::{Error, Result};
use crate::guard::Host;
use crate::identity::Identity;
use crate::sys;
use std::path::Path;

/// What a signal name does to a job on Windows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobSignal {
  /// `TerminateProcess` of the job's root alone, exit code 1.
  Terminate,
  /// `CTRL_BREAK_EVENT` to the job's process group.
  Break,
}

/// The names [`signal_job`] takes on Windows, as `registry.signal` lists them.
pub const WINDOWS_JOB_SIGNALS: [&str; 6] = ["SIGTERM", "SIGKILL", "SIGINT", "SIGQUIT", "SIGHUP", "SIGBREAK"];

/// What `name` does (case-insensitive, `SIG` optional). Errors: `Unsupported` for any name
/// outside [`WINDOWS_JOB_SIGNALS`].
pub fn job_signal_named(name: &str) -> Result<JobSignal> {
  match bare_signal_name(name).as_str() {
    "BREAK" => Ok(JobSignal::Break),
    "TERM" | "KILL" | "INT" | "QUIT" | "HUP" => Ok(JobSignal::Terminate),
    _ => Err(Error::Unsupported(
      "this signal on Windows: SIGTERM, SIGKILL, SIGINT, SIGQUIT and SIGHUP terminate the job's process, SIGBREAK is Ctrl-Break",
    )),
  }
}

/// Sends `signal` to the job whose root is `root` (see the module docs). `console_helper`:
/// `procward-supervise.exe`, which `SIGBREAK` needs.
///
/// Returns the report of a kill's shape: the root's PID in `signalled` (terminated, or its
/// group got Ctrl-Break), or in `already_gone`, `refused_reused` (another creation time:
/// never touched), `survivors` (it cannot be opened: nothing sent) or `refused` (the guard's
/// reason; `not_session_leader` for `SIGBREAK` to a root outside its Job Object).
/// `escalated` is always false.
///
/// Errors: `Io` when the boot id cannot be read, `TerminateProcess` fails on a running
/// root, or the helper could not send Ctrl-Break (`EIO`; always under Wine 8);
/// `Unsupported` for `SIGBREAK` without a helper.
pub fn signal_job(root: &Identity, signal: JobSignal, console_helper: Option<&Path>) -> Result<KillReport> {
  let helper = match (signal, console_helper) {
    (JobSignal::Break, None) => return Err(Error::Unsupported("SIGBREAK without the console helper (procward-supervise.exe)")),
    (_, helper) => helper,
  };
  let boot_id = sys::boot_id().map_err(|e| Error::io("reading the boot id", e))?;
  let mut run = Run::new(root);
  // The root is opened and held from here on: the handle is the identity until the end.
  if !run.begin(&Host::current(), &boot_id, signal == JobSignal::Break) || !run.root_current {
    return Ok(run.report);
  }
  let root_process = &run.targets[0].process;
  let sent = match (signal, helper) {
    (JobSignal::Break, Some(helper)) => {
      let group = GroupTarget { group: root.pid, attach: vec![root.pid] };
      match killconsole::send(helper, CtrlEvent::Break, &[group]).pop() {
        Some(Delivery::Sent(_)) => Ok(()),
        Some(Delivery::Failed(why)) => Err(Error::io("sending Ctrl-Break to the job's process group", std::io::Error::other(why))),
        None => Err(Error::io("sending Ctrl-Break to the job's process group", std::io::Error::other("no answer from the helper"))),
      }
    }
    _ => root_process.terminate().map_err(|e| Error::io(format!("TerminateProcess({}, {TERMINATED_EXIT_CODE})", root.pid), e)),
  };
  match sent {
    Ok(()) => run.report.signalled.push(root.pid),
    // It ended on its own meanwhile (an exiting process refuses termination).
    Err(_) if !root_process.running() => run.report.already_gone.push(root.pid),
    Err(e) => return Err(e),
  }
  Ok(run.report)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn five_names_terminate_sigbreak_breaks_and_the_rest_are_unsupported() {
    for name in ["SIGTERM", "kill", "SigInt", " QUIT ", "SIGHUP"] {
      assert_eq!(job_signal_named(name).unwrap(), JobSignal::Terminate, "{name}");
    }
    assert_eq!(job_signal_named("break").unwrap(), JobSignal::Break);
    for name in ["SIGUSR1", "SIGSTOP", "SIGCONT", "SIGWINCH", "BOGUS", ""] {
      assert!(matches!(job_signal_named(name), Err(Error::Unsupported(_))), "{name}");
    }
    assert!(WINDOWS_JOB_SIGNALS.iter().all(|n| job_signal_named(n).is_ok()));
  }
}
