//! The graceful step of a Windows tree kill: a console control event to each job's process
//! group, sent by a helper process (`procward-supervise.exe --ctrl-break` or `--ctrl-c`,
//! see `bin/procward-supervise/ctrlbreak.rs`).
//!
//! A process can only send a console control event to the console it is attached to, and
//! every job has a console of its own. The host never detaches from its own console, so a
//! short-lived helper does it: it attaches to each job's console in turn and sends the
//! event to the job's group (the job's PID: it was started with `CREATE_NEW_PROCESS_GROUP`).
//! The helper is started detached and in a process group of its own, so neither the host
//! nor the helper is in the group that gets the event.
//!
//! The helper prints one line per group: `<group> ok <pid>...` (the processes attached to
//! that console when the event went out) or `<group> err <os error>`.

use crate::windows::process::INHERIT_LOCK;
use std::io::Read;
use std::os::windows::io::AsRawHandle;
use std::os::windows::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use windows_sys::Win32::System::Threading::{WaitForSingleObject, CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS};

/// Longest the helper may take before it is given up (it attaches and sends, nothing else).
const HELPER_TIMEOUT_MS: u32 = 10_000;

/// The console control event of the graceful step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CtrlEvent {
  /// `CTRL_BREAK_EVENT`, to the job's process group (SIGTERM).
  Break,
  /// `CTRL_C_EVENT`, to every process on the job's console (SIGINT).
  C,
}

/// One group to reach: its id (the job's root PID) and the PIDs whose console the helper
/// may attach to, in order (the root while it runs, then other members: all held by
/// handles, so none of these PIDs can be reused meanwhile).
#[derive(Debug, Clone)]
pub(crate) struct GroupTarget {
  pub(crate) group: i32,
  pub(crate) attach: Vec<i32>,
}

/// What the helper did for one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Delivery {
  /// Sent; the PIDs attached to the console at that moment.
  Sent(Vec<i32>),
  /// Not sent: why (the OS error the helper got, or why the helper did not run).
  Failed(String),
}

/// Sends `event` to every target through one run of the helper at `helper`. One result per
/// target, in order; every target fails alike when the helper cannot be run.
pub(crate) fn send(helper: &Path, event: CtrlEvent, targets: &[GroupTarget]) -> Vec<Delivery> {
  match run_helper(helper, event, targets) {
    Ok(out) => targets.iter().map(|t| parse(&out, t.group)).collect(),
    Err(why) => targets.iter().map(|_| Delivery::Failed(why.clone())).collect(),
  }
}

fn run_helper(helper: &Path, event: CtrlEvent, targets: &[GroupTarget]) -> Result<String, String> {
  let flag = match event {
    CtrlEvent::Break => "--ctrl-break",
    CtrlEvent::C => "--ctrl-c",
  };
  let specs = targets.iter().map(|t| {
    let attach: Vec<String> = t.attach.iter().map(i32::to_string).collect();
    format!("{}@{}", t.group, attach.join(","))
  });
  let mut command = Command::new(helper);
  command.arg(flag).args(specs).creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
  command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
  // std lets the child inherit every inheritable handle: never while a job's pipe ends are
  // made inheritable for its own start (they would stay open in the helper).
  let started = {
    let _guard = INHERIT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    command.spawn()
  };
  let mut child = started.map_err(|e| format!("cannot start {}: {e}", helper.display()))?;
  // Its output is a few lines, far below a pipe's buffer: waiting first cannot deadlock.
  if unsafe { WaitForSingleObject(child.as_raw_handle(), HELPER_TIMEOUT_MS) } != 0 {
    let _ = child.kill();
    let _ = child.wait();
    return Err(format!("{} did not answer within {HELPER_TIMEOUT_MS} ms", helper.display()));
  }
  let mut out = String::new();
  if let Some(mut stdout) = child.stdout.take() {
    let _ = stdout.read_to_string(&mut out);
  }
  let _ = child.wait();
  Ok(out)
}

/// The helper's line for `group`.
fn parse(out: &str, group: i32) -> Delivery {
  for line in out.lines() {
    let mut words = line.split_whitespace();
    if words.next().and_then(|w| w.parse::<i32>().ok()) != Some(group) {
      continue;
    }
    return match words.next() {
      Some("ok") => Delivery::Sent(words.filter_map(|w| w.parse().ok()).collect()),
      Some("err") => Delivery::Failed(format!("GenerateConsoleCtrlEvent: OS error {}", words.collect::<Vec<_>>().join(" "))),
      _ => Delivery::Failed(format!("unexpected helper output {line:?}")),
    };
  }
  Delivery::Failed("the helper printed nothing for this group".into())
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn each_group_gets_its_own_line() {
    let out = "120 ok 120 124 128\n200 err 6 attach\n";
    assert_eq!(parse(out, 120), Delivery::Sent(vec![120, 124, 128]));
    assert!(matches!(parse(out, 200), Delivery::Failed(why) if why.contains("6")));
    assert!(matches!(parse(out, 12), Delivery::Failed(_)));
  }
}
