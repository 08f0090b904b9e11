//! Adversarial tests of the Windows tree kill (issue 15), with real Windows processes under
//! Wine: what a hostile record, a squatted Job Object name or a stranger planted in a job can
//! make a kill do (commands, output and durable files: `windows_attack_io.rs`). Each test
//! states the promise it checks; a failure here is a safety bug, not a flaky timing. Run
//! under Wine by `scripts/platforms/windows.sh` (or `cargo test` on Windows).
//!
//! Roles: this test executable started again with `PROCWARD_ATTACK_ROLE` set plays a process
//! of a test (see `windows_common::run_role`).
#![cfg(windows)]

mod windows_common;

use procward_core::identity::{identity, verdict};
use procward_core::job::SpawnOptions;
use procward_core::kill::{kill_tree, KillOptions, Signal};
use procward_core::spawn::spawn;
use procward_core::windows::jobobject::JobObject;
use procward_core::{Identity, Verdict};
use std::os::windows::io::AsRawHandle;
use std::ptr::null_mut;
use std::time::{Duration, Instant};
use windows_common::{role, Proc, HANG};

fn sleeper() -> Proc {
  role("sleep", "120")
}

fn alive(id: &Identity) -> bool {
  verdict(id) == Verdict::Current
}

/// Waits (bounded) until `id` is gone; false if it is still running after [`HANG`].
fn ends(id: &Identity) -> bool {
  let deadline = Instant::now() + HANG;
  while alive(id) {
    if Instant::now() > deadline {
      return false;
    }
    std::thread::sleep(Duration::from_millis(20));
  }
  true
}

fn terminate_now() -> KillOptions {
  KillOptions { signal: Signal::SIGKILL, grace: Duration::ZERO, ..KillOptions::default() }
}

/// A Job Object created by "someone else" under the name procward gives the job of `id`.
fn squat_job(id: &Identity) -> JobObject {
  JobObject::create(id.pid as u32, id.start_time).expect("create the squatted Job Object")
}

mod kill_safety {
  use super::*;

  #[test]
  fn a_job_name_squatted_for_a_live_root_outside_it_is_not_trusted() {
    // The root runs outside any Job Object (not started by procward, or its job was never
    // made); someone creates the Job Object named after its identity and puts a stranger in
    // it. Killing the root must not reach the stranger: the job is not the root's.
    let root = sleeper();
    let stranger = sleeper();
    let squatted = squat_job(&root.id);
    squatted.assign(stranger_handle(&stranger)).expect("assign the stranger");
    let report = kill_tree(&root.id, &terminate_now()).unwrap();
    assert!(ends(&root.id), "the root itself must end: {report:?}");
    assert!(alive(&stranger.id), "a stranger in a squatted job was killed: {report:?}");
    assert!(!report.signalled.contains(&stranger.id.pid), "{report:?}");
    end_stranger_then_close(stranger, squatted);
  }

  #[test]
  fn a_stranger_older_than_the_root_planted_in_its_job_is_never_touched() {
    // A real job (the root in its own Job Object), plus a process that existed before the
    // root: it cannot be one of the root's, whoever put it in the job.
    let stranger = sleeper();
    std::thread::sleep(Duration::from_millis(20));
    let job = spawn(SpawnOptions::new("ping -n 120 127.0.0.1 >NUL"), Box::new(|_| {})).expect("spawn");
    let own = open_job(&job.identity);
    own.assign(stranger_handle(&stranger)).expect("plant the stranger in the job");
    let report = kill_tree(&job.identity, &terminate_now()).unwrap();
    assert!(ends(&job.identity), "the root must end: {report:?}");
    assert!(alive(&stranger.id), "a stranger older than the root was killed with the job: {report:?}");
    assert!(report.refused_reused.contains(&stranger.id.pid), "the stranger should be reported as not the job's: {report:?}");
    end_stranger_then_close(stranger, own);
  }

  #[test]
  fn a_job_that_keeps_starting_processes_beside_a_planted_stranger_is_emptied_or_reports_survivors() {
    // The planted stranger forbids TerminateJobObject: the job's processes are ended one by
    // one while the job starts more. Either none is left but the stranger, or the report
    // names what is (a kill never reports success for a process it did not see die).
    let stranger = sleeper();
    std::thread::sleep(Duration::from_millis(20));
    let job = spawn(SpawnOptions::new("for /l %i in (1,0,2) do @start /b ping -n 60 127.0.0.1 >NUL"), Box::new(|_| {})).expect("spawn");
    let own = open_job(&job.identity);
    own.assign(stranger_handle(&stranger)).expect("plant the stranger in the job");
    let deadline = Instant::now() + HANG;
    while own.members().len() < 4 {
      assert!(Instant::now() < deadline, "the job never started its pings");
      std::thread::sleep(Duration::from_millis(20));
    }
    let report = kill_tree(&job.identity, &terminate_now()).unwrap();
    assert!(alive(&stranger.id), "{report:?}");
    std::thread::sleep(Duration::from_millis(500));
    let left: Vec<i32> = own.members().into_iter().filter(|&p| p != stranger.id.pid).collect();
    let unreported: Vec<i32> = left.iter().copied().filter(|p| !report.survivors.contains(p)).collect();
    assert!(unreported.is_empty(), "job members {unreported:?} outlived the kill unreported: {report:?}");
    for pid in left {
      if let Some(id) = identity(pid).unwrap() {
        let _ = kill_tree(&id, &terminate_now());
      }
    }
    end_stranger_then_close(stranger, own);
  }

  #[test]
  fn a_gone_roots_squatted_job_spares_processes_older_than_the_root() {
    // The record names a root that has exited; a Job Object with its name holds a process
    // that started before the root did: not the root's tree, never killed.
    let stranger = sleeper();
    std::thread::sleep(Duration::from_millis(20));
    let root = role("exit", "0");
    let root_id = root.id.clone();
    drop(root);
    assert!(ends(&root_id));
    let squatted = squat_job(&root_id);
    squatted.assign(stranger_handle(&stranger)).expect("assign the stranger");
    let report = kill_tree(&root_id, &terminate_now()).unwrap();
    assert!(alive(&stranger.id), "a stranger older than the recorded root was killed: {report:?}");
    assert!(!report.signalled.contains(&stranger.id.pid), "{report:?}");
    end_stranger_then_close(stranger, squatted);
  }

  /// Ends the stranger, waits for it, then closes the test's handle to the job that held
  /// it. The other order (closing a kill-on-close job around a process that is being
  /// terminated) crashed Wine 8's wineserver now and then, which hangs every Wine process.
  fn end_stranger_then_close<J>(stranger: Proc, job: J) {
    drop(stranger);
    drop(job);
  }

  fn stranger_handle(p: &Proc) -> std::os::windows::io::BorrowedHandle<'_> {
    use std::os::windows::io::AsHandle;
    p.child.as_handle()
  }

  /// The job's own Job Object, opened by name as any process of the session can.
  fn open_job(id: &Identity) -> OpenedJob {
    use std::os::windows::io::{FromRawHandle, OwnedHandle};
    use windows_sys::Win32::System::JobObjects::OpenJobObjectW;
    let name: Vec<u16> = JobObject::name(id.pid as u32, id.start_time).encode_utf16().chain([0]).collect();
    // JOB_OBJECT_ASSIGN_PROCESS | JOB_OBJECT_QUERY
    let raw = unsafe { OpenJobObjectW(0x0001 | 0x0004, 0, name.as_ptr()) };
    assert!(!raw.is_null(), "OpenJobObjectW: {}", std::io::Error::last_os_error());
    OpenedJob(unsafe { OwnedHandle::from_raw_handle(raw) })
  }

  struct OpenedJob(std::os::windows::io::OwnedHandle);

  impl OpenedJob {
    /// The PIDs in the job now (`JobObjectBasicProcessIdList`, room for 1024).
    fn members(&self) -> Vec<i32> {
      use windows_sys::Win32::System::JobObjects::{JobObjectBasicProcessIdList, QueryInformationJobObject};
      let mut buf = vec![0usize; 1026];
      let bytes = (buf.len() * size_of::<usize>()) as u32;
      let ok = unsafe {
        QueryInformationJobObject(self.0.as_raw_handle(), JobObjectBasicProcessIdList, buf.as_mut_ptr().cast(), bytes, null_mut())
      };
      assert_ne!(ok, 0, "{}", std::io::Error::last_os_error());
      // Two u32 counts, then one usize per PID.
      let listed = buf[0] >> 32;
      buf[1..=listed].iter().map(|&p| p as i32).collect()
    }

    fn assign(&self, process: std::os::windows::io::BorrowedHandle<'_>) -> std::io::Result<()> {
      use windows_sys::Win32::System::JobObjects::AssignProcessToJobObject;
      if unsafe { AssignProcessToJobObject(self.0.as_raw_handle(), process.as_raw_handle()) } == 0 {
        return Err(std::io::Error::last_os_error());
      }
      Ok(())
    }
  }

  #[test]
  fn a_pid_that_differs_from_the_hosts_or_a_jobs_in_its_two_low_bits_reaches_neither() {
    // Windows' handle tables may ignore a PID's two low bits (OpenProcess(pid + 1) can open
    // pid): a record naming the host's PID + 1..3, with the host's creation time, must not
    // reach the host, nor a running job with its own.
    let me = identity(std::process::id() as i32).unwrap().unwrap();
    let other = sleeper();
    for base in [&me, &other.id] {
      for low in 1..4 {
        let near = Identity { pid: base.pid + low, ..base.clone() };
        let report = kill_tree(&near, &terminate_now()).unwrap();
        assert!(!report.signalled.contains(&base.pid) && report.signalled.is_empty(), "{near:?}: {report:?}");
      }
    }
    assert!(alive(&other.id), "a PID next to the job's reached it");
  }

  #[test]
  fn a_job_name_that_exists_already_is_never_joined() {
    let me = identity(std::process::id() as i32).unwrap().unwrap();
    let fake = Identity { start_time: me.start_time + 7, ..me };
    let _first = squat_job(&fake);
    let err = JobObject::create(fake.pid as u32, fake.start_time).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(windows_sys::Win32::Foundation::ERROR_ALREADY_EXISTS as i32), "{err}");
  }
}

/// Not a test: the body of the processes the tests start (see `windows_common::run_role`).
#[test]
fn child_role() {
  windows_common::run_role();
}
