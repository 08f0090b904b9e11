//! One signal to a job on Windows (`kill::signal_job`, what `registry.signal` sends), with
//! real Windows processes: jobs started by procward's spawn (`cmd.exe` running `ping`), this
//! test executable in a role (a process outside any Job Object of procward's), and a durable
//! job under the real `procward-supervise.exe`, which is also the console helper for
//! `SIGBREAK`. Run under Wine by `scripts/platforms/windows.sh`.
#![cfg(windows)]

mod windows_common;

use procward_core::guard::Refusal;
use procward_core::identity::{boot_id, identity};
use procward_core::job::{JobEvent, SpawnOptions};
use procward_core::kill::{job_signal_named, kill_tree, signal_job, JobSignal, KillOptions, Signal, WINDOWS_JOB_SIGNALS};
use procward_core::spawn::Job;
use procward_core::status::ExitInfo;
use procward_core::{Error, Identity};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};
use windows_common::durable::{exit_file, number_after, session_dir, started_job, supervisor};
use windows_common::{role, start, until_exit, HANG};

#[test]
fn child_role() {
  windows_common::run_role();
}

/// Wine passes the Unix environment on; `scripts/platforms/windows.sh` sets `WINEPREFIX`.
fn under_wine() -> bool {
  std::env::var_os("WINEPREFIX").is_some()
}

fn helper() -> PathBuf {
  supervisor()
}

/// The lower-case path of `pid`'s executable (`QueryFullProcessImageNameW`), or "".
fn image(pid: i32) -> String {
  use windows_sys::Win32::Foundation::CloseHandle;
  use windows_sys::Win32::System::Threading::{OpenProcess, QueryFullProcessImageNameW, PROCESS_QUERY_LIMITED_INFORMATION};
  let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid as u32) };
  if handle.is_null() {
    return String::new();
  }
  let (mut buf, mut len) = ([0u16; 1024], 1024u32);
  let ok = unsafe { QueryFullProcessImageNameW(handle, 0, buf.as_mut_ptr(), &mut len) } != 0;
  unsafe { CloseHandle(handle) };
  if ok {
    String::from_utf16_lossy(&buf[..len as usize]).to_lowercase()
  } else {
    String::new()
  }
}

/// A process held by a handle opened while it ran (`SYNCHRONIZE`): its PID cannot be
/// reused while the test looks at it.
struct Held(OwnedHandle);

impl Held {
  fn open(pid: i32) -> Held {
    use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_SYNCHRONIZE};
    let raw = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid as u32) };
    assert!(!raw.is_null(), "cannot open {pid}: {}", std::io::Error::last_os_error());
    Held(unsafe { OwnedHandle::from_raw_handle(raw) })
  }

  /// Not signalled yet: still running.
  fn running(&self) -> bool {
    use windows_sys::Win32::{Foundation::WAIT_TIMEOUT, System::Threading::WaitForSingleObject};
    unsafe { WaitForSingleObject(self.0.as_raw_handle(), 0) == WAIT_TIMEOUT }
  }
}

/// A pipe job `cmd /c ping ...` whose `ping` child runs; returns the job and that child
/// (not the console host a job's hidden console may add beside it), held.
fn job_with_a_child() -> (Job, Receiver<JobEvent>, Held) {
  let (job, rx) = start(SpawnOptions::new("ping -n 120 127.0.0.1 >nul"));
  let deadline = Instant::now() + HANG;
  loop {
    let kids = procward_core::tree::descendants(job.pid).unwrap();
    if let Some(kid) = kids.iter().find(|k| image(k.pid).ends_with("ping.exe")) {
      return (job, rx, Held::open(kid.pid));
    }
    assert!(Instant::now() < deadline, "the job's ping never started");
    std::thread::sleep(Duration::from_millis(20));
  }
}

#[test]
fn each_terminating_name_ends_the_root_alone_with_exit_code_1() {
  for name in ["SIGTERM", "SIGKILL", "SIGINT", "SIGQUIT", "SIGHUP"] {
    let (job, rx, kid) = job_with_a_child();
    let report = signal_job(&job.identity, job_signal_named(name).unwrap(), None).unwrap();
    assert_eq!(report.signalled, vec![job.pid], "{name}: {report:?}");
    assert!(!report.escalated && report.refused.is_empty(), "{name}: {report:?}");
    // Reported as any Windows exit: TerminateProcess's code 1, no signal.
    let (_, exit) = until_exit(&rx);
    assert_eq!(exit, ExitInfo::exited(1), "{name}");
    // The root alone: its child runs on (the Job Object the host holds ends it at the drop).
    assert!(kid.running(), "{name}: the root's child was touched");
    drop(job);
  }
}

#[test]
fn every_other_name_is_unsupported_and_the_list_has_six() {
  assert_eq!(WINDOWS_JOB_SIGNALS.len(), 6);
  assert_eq!(job_signal_named("SIGBREAK").unwrap(), JobSignal::Break);
  for name in ["SIGUSR1", "SIGSTOP", "SIGCONT", "SIGWINCH", "SIGALRM", "SIGTSTP"] {
    let err = job_signal_named(name).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)) && err.code() == "ENOTSUP", "{name}: {err}");
  }
}

#[test]
fn sigbreak_reaches_the_jobs_process_group() {
  if under_wine() {
    return; // Wine 8 cannot send Ctrl-Break: see the `_under_wine` test.
  }
  let (job, _rx, _) = job_with_a_child();
  let report = signal_job(&job.identity, JobSignal::Break, Some(&helper())).unwrap();
  assert_eq!(report.signalled, vec![job.pid], "{report:?}");
}

#[test]
fn sigbreak_fails_with_eio_and_the_job_runs_on_under_wine() {
  if !under_wine() {
    return; // Real Windows: see `sigbreak_reaches_the_jobs_process_group`.
  }
  let (job, rx, kid) = job_with_a_child();
  let err = signal_job(&job.identity, JobSignal::Break, Some(&helper())).unwrap_err();
  assert_eq!(err.code(), "EIO", "{err}");
  assert!(err.to_string().contains("Ctrl-Break"), "{err}");
  assert!(Held::open(job.pid).running(), "the job ended");
  assert!(kid.running(), "the job's child ended");
  assert!(rx.try_recv().map_or(true, |ev| !matches!(ev, JobEvent::Exit(_))), "the job published an exit");
  // Without the helper nothing is tried.
  let err = signal_job(&job.identity, JobSignal::Break, None).unwrap_err();
  assert_eq!(err.code(), "ENOTSUP", "{err}");
}

#[test]
fn a_reused_pid_is_refused_a_gone_one_is_already_gone_and_the_host_is_refused() {
  let mut sleeper = role("sleep", "120");
  let mut reused = sleeper.id.clone();
  reused.start_time -= 1;
  for signal in [JobSignal::Terminate, JobSignal::Break] {
    let report = signal_job(&reused, signal, Some(&helper())).unwrap();
    assert_eq!(report.refused_reused, vec![sleeper.id.pid], "{signal:?}: {report:?}");
    assert!(report.signalled.is_empty(), "{signal:?}: {report:?}");
  }
  assert!(sleeper.child.try_wait().unwrap().is_none(), "a reused PID was touched");

  let mut gone = role("exit", "0");
  let status = gone.child.wait().unwrap();
  assert!(status.success());
  let report = signal_job(&gone.id, JobSignal::Terminate, None).unwrap();
  assert_eq!(report.already_gone, vec![gone.id.pid], "{report:?}");
  assert!(report.signalled.is_empty(), "{report:?}");

  let me = identity(std::process::id() as i32).unwrap().unwrap();
  let report = signal_job(&me, JobSignal::Terminate, None).unwrap();
  assert_eq!(report.refused.first().map(|r| r.reason), Some(Refusal::Host), "{report:?}");
}

#[test]
fn sigbreak_to_a_process_outside_its_job_object_is_refused_and_sigterm_still_ends_it() {
  let mut outsider = role("sleep", "120");
  let report = signal_job(&outsider.id, JobSignal::Break, Some(&helper())).unwrap();
  assert_eq!(report.refused.len(), 1, "{report:?}");
  assert_eq!(report.refused[0].reason, Refusal::NotSessionLeader);
  assert!(report.signalled.is_empty(), "{report:?}");
  assert!(outsider.child.try_wait().unwrap().is_none(), "the outsider was touched");
  // Termination needs no Job Object: the root alone, as `process.kill` ends any process.
  let report = signal_job(&outsider.id, JobSignal::Terminate, None).unwrap();
  assert_eq!(report.signalled, vec![outsider.id.pid], "{report:?}");
  assert_eq!(outsider.child.wait().unwrap().code(), Some(1));
}

#[test]
fn a_durable_jobs_own_root_is_terminated_and_its_supervisor_records_the_end() {
  let dir = session_dir("signal");
  let (job, rx, record) = started_job(&dir);
  let root = Identity {
    pid: number_after(&record, "\"job\"", "pid") as i32,
    start_time: number_after(&record, "\"job\"", "startTime"),
    boot_id: boot_id().unwrap(),
  };
  assert_ne!(root.pid, job.pid, "supervisor.json names the job's own process");
  let report = signal_job(&root, job_signal_named("SIGTERM").unwrap(), None).unwrap();
  assert_eq!(report.signalled, vec![root.pid], "{report:?}");
  // The supervisor lived on to write the exit file: the job's code, 1.
  let (rest, exit) = until_exit(&rx);
  assert!(!rest.contains("never"), "{rest}");
  assert_eq!(exit, ExitInfo::exited(1));
  assert_eq!(exit_file(&dir), ExitInfo::exited(1));
  // The root alone ended: its `ping` runs on in the job, and the supervisor with it. Both
  // go with the supervisor's Job Object, as a kill of the session ends them.
  let options = KillOptions { signal: Signal::SIGKILL, ..KillOptions::default() };
  let report = kill_tree(&job.identity, &options).unwrap();
  assert!(report.survivors.is_empty() && report.signalled.contains(&job.pid), "{report:?}");
}
