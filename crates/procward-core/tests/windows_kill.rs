//! Tree kill on Windows (DESIGN section 3), with real Windows processes: `cmd.exe`,
//! `ping.exe`, and this test executable run again in a role (`PROCWARD_KILL_ROLE`, see
//! `child_role`). Run under Wine by `scripts/platforms/windows.sh`.
//!
//! Each job is started the way procward's spawn starts one: suspended, in a new process
//! group with a hidden console of its own, put in a Job Object named after its identity
//! (`Local\procward-job-<pid>-<start_time>`, kill-on-close), then resumed.
#![cfg(windows)]

use procward_core::guard::Refusal;
use procward_core::identity::{identity, verdict};
use procward_core::job::{JobEvent, SpawnOptions};
use procward_core::kill::{kill_tree, kill_trees, signal_named, KillOptions, KillReport, KillRequest, Signal, TERMINATED_EXIT_CODE};
use procward_core::spawn::spawn;
use procward_core::{Identity, Verdict};
use std::mem::{size_of, zeroed};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::os::windows::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Console::{SetConsoleCtrlHandler, CTRL_C_EVENT};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
  CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
  AssignProcessToJobObject, CreateJobObjectW, IsProcessInJob, JobObjectExtendedLimitInformation, SetInformationJobObject,
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
  OpenThread, ResumeThread, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, CREATE_SUSPENDED, THREAD_SUSPEND_RESUME,
};

const ROLE: &str = "PROCWARD_KILL_ROLE";

/// A job started as procward starts one, with the Job Object the test holds (as the host
/// holds a pipe job's).
struct Job {
  child: Child,
  id: Identity,
  job_object: Option<OwnedHandle>,
}

impl Drop for Job {
  fn drop(&mut self) {
    let _ = self.child.kill();
    let _ = self.child.wait();
    let _ = std::fs::remove_file(ready_file(self.child.id()));
  }
}

fn start(cmd: &mut Command, in_job: bool) -> Job {
  let child = cmd
    .creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("start the job");
  let id = identity(child.id() as i32).unwrap().expect("the suspended job has an identity");
  let mut job = Job { child, id, job_object: None };
  if in_job {
    contain(&mut job);
  }
  resume(job.child.id());
  job
}

/// Creates the job's Job Object (named after its identity, kill-on-close) and puts the
/// job's process in it.
fn contain(job: &mut Job) {
  let name: Vec<u16> = format!(r"Local\procward-job-{}-{}", job.id.pid, job.id.start_time).encode_utf16().chain([0]).collect();
  let raw = unsafe { CreateJobObjectW(std::ptr::null(), name.as_ptr()) };
  assert!(!raw.is_null(), "CreateJobObjectW: {}", std::io::Error::last_os_error());
  let object = unsafe { OwnedHandle::from_raw_handle(raw) };
  let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { zeroed() };
  info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  let size = size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32;
  let info = (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast();
  assert_ne!(unsafe { SetInformationJobObject(raw, JobObjectExtendedLimitInformation, info, size) }, 0);
  assert_ne!(unsafe { AssignProcessToJobObject(raw, job.child.as_raw_handle()) }, 0, "{}", std::io::Error::last_os_error());
  job.job_object = Some(object);
}

/// Resumes every thread of a process started suspended (std keeps no thread handle).
fn resume(pid: u32) {
  let snap = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
  assert_ne!(snap, INVALID_HANDLE_VALUE);
  let mut entry: THREADENTRY32 = unsafe { zeroed() };
  entry.dwSize = size_of::<THREADENTRY32>() as u32;
  let mut more = unsafe { Thread32First(snap, &mut entry) } != 0;
  while more {
    if entry.th32OwnerProcessID == pid {
      let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
      assert!(!thread.is_null());
      unsafe { ResumeThread(thread) };
      unsafe { CloseHandle(thread) };
    }
    more = unsafe { Thread32Next(snap, &mut entry) } != 0;
  }
  unsafe { CloseHandle(snap) };
}

/// This test executable in a role (see `child_role`).
fn role(name: &str) -> Command {
  let mut cmd = Command::new(std::env::current_exe().unwrap());
  cmd.args(["--exact", "child_role", "--nocapture", "--test-threads=1"]).env(ROLE, name);
  cmd
}

fn helper() -> PathBuf {
  PathBuf::from(env!("CARGO_BIN_EXE_procward-supervise"))
}

fn opts(grace_ms: u64) -> KillOptions {
  KillOptions { grace: Duration::from_millis(grace_ms), console_helper: Some(helper()), ..KillOptions::default() }
}

/// Waits (bounded: the test fails rather than hangs) until `pid` has `n` live descendants,
/// and returns their identities.
fn descendants(pid: i32, n: usize) -> Vec<Identity> {
  let deadline = Instant::now() + Duration::from_secs(60);
  loop {
    let found: Vec<Identity> =
      procward_core::tree::descendants(pid).unwrap().iter().filter_map(|p| identity(p.pid).ok().flatten()).collect();
    if found.len() >= n {
      return found;
    }
    assert!(Instant::now() < deadline, "{pid} never had {n} descendants: {found:?}");
    std::thread::sleep(Duration::from_millis(50));
  }
}

fn gone(id: &Identity) -> bool {
  verdict(id) == Verdict::Gone
}

fn assert_clean(report: &KillReport) {
  assert!(report.survivors.is_empty(), "survivors: {report:?}");
  assert!(report.refused.is_empty() && report.refused_reused.is_empty(), "refusals: {report:?}");
}

#[test]
fn a_three_level_tree_is_gone_after_the_kill() {
  let mut cmd = Command::new("cmd.exe");
  cmd.raw_arg(r#"/d /s /c "cmd.exe /d /s /c "ping -n 120 127.0.0.1 >NUL"""#);
  let job = start(&mut cmd, true);
  let below = descendants(job.id.pid, 2);
  let t0 = Instant::now();
  let report = kill_tree(&job.id, &opts(500)).unwrap();
  eprintln!("3-level tree kill (cmd -> cmd -> ping) took {:?}: {report:?}", t0.elapsed());
  assert_clean(&report);
  for id in below.iter().chain([&job.id]) {
    assert!(gone(id), "{id:?} survived: {report:?}");
    assert!(report.signalled.contains(&id.pid), "{} not signalled: {report:?}", id.pid);
  }
}

#[test]
fn a_job_from_spawn_is_killed_whole_and_its_exit_arrives() {
  let (tx, rx) = std::sync::mpsc::channel();
  let opts_spawn = SpawnOptions::new(r#"cmd.exe /d /s /c "ping -n 120 127.0.0.1 >NUL""#);
  let job = spawn(opts_spawn, Box::new(move |ev| drop(tx.send(ev)))).expect("spawn");
  let below = descendants(job.pid, 2);
  let report = kill_tree(&job.identity, &KillOptions { require_session_leader: true, ..opts(500) }).unwrap();
  assert_clean(&report);
  assert!(below.iter().all(gone), "{report:?}");
  let exit = loop {
    match rx.recv_timeout(Duration::from_secs(60)).expect("no exit event within 60 s") {
      JobEvent::Exit(info) => break info,
      JobEvent::Output { .. } => {}
    }
  };
  assert_eq!(exit.code, Some(TERMINATED_EXIT_CODE as i32), "{exit:?}");
}

#[test]
fn a_member_that_ignores_ctrl_break_is_terminated_after_the_grace_period() {
  let job = start(&mut role("ignore-ctrl"), true);
  wait_until_ready(&job);
  let report = kill_tree(&job.id, &opts(300)).unwrap();
  assert_clean(&report);
  assert!(report.escalated, "termination must follow the graceful step: {report:?}");
  assert!(gone(&job.id));
}

#[test]
fn sigint_ends_a_job_that_handles_ctrl_c_without_termination() {
  let mut job = start(&mut role("exit-on-ctrl-c"), true);
  wait_until_ready(&job);
  let report = kill_tree(&job.id, &KillOptions { signal: Signal::SIGINT, ..opts(30_000) }).unwrap();
  assert_clean(&report);
  assert!(!report.escalated, "Ctrl-C alone should have ended it: {report:?}");
  assert_eq!(job.child.wait().unwrap().code(), Some(42), "its Ctrl-C handler ran");
}

#[test]
fn an_escapee_outside_the_job_is_terminated_too() {
  // The root starts a child before it is put in its Job Object: the child is the root's by
  // its ppid, and outside the job (Wine 8 ignores CREATE_BREAKAWAY_FROM_JOB).
  let mut job = start(&mut role("start-a-child"), false);
  wait_until_ready(&job);
  let escapee = descendants(job.id.pid, 1).remove(0);
  contain(&mut job);
  assert!(in_job_of(&job, job.id.pid) && !in_job_of(&job, escapee.pid), "the child should be outside the job");
  let report = kill_tree(&job.id, &opts(200)).unwrap();
  assert_clean(&report);
  assert!(gone(&escapee), "the escapee survived: {report:?}");
  assert!(report.signalled.contains(&escapee.pid));
}

#[test]
fn a_gone_root_s_job_members_are_still_killed() {
  // The root starts ping and exits: ping is the job's, and nobody's child.
  let mut job = start(&mut role("start-ping-and-exit"), true);
  wait_until_ready(&job);
  let ping = descendants(job.id.pid, 1).remove(0);
  std::fs::write(exit_file(job.child.id()), b"exit").unwrap();
  assert_eq!(job.child.wait().unwrap().code(), Some(0));
  let report = kill_tree(&job.id, &opts(200)).unwrap();
  assert!(report.already_gone.contains(&job.id.pid), "{report:?}");
  assert!(gone(&ping), "the job's member survived: {report:?}");
  assert!(report.signalled.contains(&ping.pid), "{report:?}");
}

#[test]
fn a_job_that_keeps_starting_processes_is_emptied() {
  // The root starts a ping every 20 ms: the ones born after the snapshot end too
  // (TerminateJobObject, or the walk before termination), none is left in the job.
  let job = start(&mut role("keep-starting-pings"), true);
  descendants(job.id.pid, 3);
  let report = kill_tree(&job.id, &opts(200)).unwrap();
  assert_clean(&report);
  let deadline = Instant::now() + Duration::from_secs(30);
  while active_processes(&job) > 0 {
    assert!(Instant::now() < deadline, "the job still runs {} processes: {report:?}", active_processes(&job));
    std::thread::sleep(Duration::from_millis(50));
  }
}

#[test]
fn a_reused_pid_is_refused_and_never_touched() {
  let job = start(&mut role("ignore-ctrl"), true);
  let stale = Identity { start_time: job.id.start_time - 1, ..job.id.clone() };
  let report = kill_tree(&stale, &KillOptions { signal: Signal::SIGKILL, ..opts(0) }).unwrap();
  assert_eq!(report.refused_reused, vec![job.id.pid]);
  assert!(report.signalled.is_empty(), "{report:?}");
  assert_eq!(verdict(&job.id), Verdict::Current, "the process with the reused PID must live on");
}

#[test]
fn the_host_the_idle_process_and_system_are_refused() {
  let me = identity(std::process::id() as i32).unwrap().unwrap();
  let system = Identity { pid: 4, start_time: 0, boot_id: me.boot_id.clone() };
  let idle = Identity { pid: 0, ..system.clone() };
  let requests: Vec<KillRequest> =
    [me.clone(), system, idle].into_iter().map(|root| KillRequest { root, cgroup: None, mark: None }).collect();
  let reports: Vec<KillReport> = kill_trees(&requests, &opts(0)).into_iter().map(Result::unwrap).collect();
  let reasons: Vec<(Option<i32>, Refusal)> = reports.iter().flat_map(|r| r.refused.iter().map(|x| (x.pid, x.reason))).collect();
  assert_eq!(reasons, vec![(Some(me.pid), Refusal::Host), (Some(4), Refusal::System), (Some(0), Refusal::SystemIdle)]);
  assert!(reports.iter().all(|r| r.signalled.is_empty()));
}

#[test]
fn a_root_outside_its_job_is_refused_when_a_job_is_required() {
  let job = start(&mut role("ignore-ctrl"), false);
  let opts = KillOptions { require_session_leader: true, signal: Signal::SIGKILL, ..opts(0) };
  let report = kill_tree(&job.id, &opts).unwrap();
  assert_eq!(report.refused.len(), 1, "{report:?}");
  assert_eq!(report.refused[0].reason, Refusal::NotSessionLeader);
  assert_eq!(verdict(&job.id), Verdict::Current);
}

#[test]
fn only_the_three_steps_have_names() {
  assert_eq!(signal_named("SIGTERM").unwrap(), Signal::SIGTERM);
  assert!(signal_named("SIGUSR1").is_err());
}

fn in_job_of(job: &Job, pid: i32) -> bool {
  use windows_sys::Win32::System::JobObjects::OpenJobObjectW;
  use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_QUERY_INFORMATION};
  let name: Vec<u16> = format!(r"Local\procward-job-{}-{}", job.id.pid, job.id.start_time).encode_utf16().chain([0]).collect();
  let raw = unsafe { OpenJobObjectW(0x0004, 0, name.as_ptr()) };
  assert!(!raw.is_null(), "OpenJobObjectW: {}", std::io::Error::last_os_error());
  let process = unsafe { OpenProcess(PROCESS_QUERY_INFORMATION, 0, pid as u32) };
  assert!(!process.is_null());
  let mut inside = 0;
  assert_ne!(unsafe { IsProcessInJob(process, raw, &mut inside) }, 0, "IsProcessInJob: {}", std::io::Error::last_os_error());
  unsafe { CloseHandle(raw) };
  unsafe { CloseHandle(process) };
  inside != 0
}

fn active_processes(job: &Job) -> u32 {
  use windows_sys::Win32::System::JobObjects::{
    JobObjectBasicAccountingInformation, QueryInformationJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
  };
  let handle = job.job_object.as_ref().expect("a job in a Job Object").as_raw_handle();
  let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { zeroed() };
  let size = size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32;
  let ok = unsafe {
    QueryInformationJobObject(
      handle,
      JobObjectBasicAccountingInformation,
      (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
      size,
      std::ptr::null_mut(),
    )
  };
  assert_ne!(ok, 0, "{}", std::io::Error::last_os_error());
  info.ActiveProcesses
}

/// A role's console handler is in place once its ready file exists.
fn wait_until_ready(job: &Job) {
  let marker = ready_file(job.child.id());
  let deadline = Instant::now() + Duration::from_secs(60);
  while !marker.exists() {
    assert!(Instant::now() < deadline, "the role never got ready");
    std::thread::sleep(Duration::from_millis(20));
  }
  let _ = std::fs::remove_file(marker);
}

fn ready_file(pid: u32) -> PathBuf {
  std::env::temp_dir().join(format!("procward-kill-ready-{pid}"))
}

fn exit_file(pid: u32) -> PathBuf {
  std::env::temp_dir().join(format!("procward-kill-exit-{pid}"))
}

/// `ping -n 120 127.0.0.1`, on the caller's console.
fn ping() -> Child {
  Command::new("ping.exe")
    .args(["-n", "120", "127.0.0.1"])
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("start ping")
}

unsafe extern "system" fn exit_on_ctrl_c(event: u32) -> i32 {
  if event == CTRL_C_EVENT {
    std::process::exit(42);
  }
  0
}

unsafe extern "system" fn swallow(_event: u32) -> i32 {
  1
}

/// Not a test: the body of the child processes the tests above start (this executable run
/// again with `PROCWARD_KILL_ROLE`). Without the variable it returns at once.
#[test]
fn child_role() {
  let Ok(name) = std::env::var(ROLE) else { return };
  match name.as_str() {
    // Swallows Ctrl-C and Ctrl-Break: only termination ends it.
    "ignore-ctrl" => unsafe {
      SetConsoleCtrlHandler(Some(swallow), 1);
    },
    // A new process group starts with Ctrl-C ignored: turn it back on, exit 42 on it.
    "exit-on-ctrl-c" => unsafe {
      SetConsoleCtrlHandler(None, 0);
      SetConsoleCtrlHandler(Some(exit_on_ctrl_c), 1);
    },
    // A child, then wait (the kill ends both; the child is never waited for).
    "start-a-child" => {
      let child = role("ignore-ctrl")
        .creation_flags(CREATE_NO_WINDOW)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a child");
      std::mem::forget(child);
    }
    // Starts ping, and exits when told: ping stays, the job's and nobody's child.
    "start-ping-and-exit" => {
      std::mem::forget(ping());
      std::fs::write(ready_file(std::process::id()), b"ready").unwrap();
      let told = exit_file(std::process::id());
      while !told.exists() {
        std::thread::sleep(Duration::from_millis(20));
      }
      let _ = std::fs::remove_file(told);
      std::process::exit(0);
    }
    // Starts a ping every 20 ms until it is killed.
    "keep-starting-pings" => loop {
      std::mem::forget(ping());
      std::thread::sleep(Duration::from_millis(20));
    },
    other => panic!("unknown role {other}"),
  }
  std::fs::write(ready_file(std::process::id()), b"ready").unwrap();
  std::thread::sleep(Duration::from_secs(120));
}
