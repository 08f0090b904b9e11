//! Adversarial tests of the Windows core (issue 15), with real Windows processes under Wine:
//! what a hostile record, a squatted Job Object name, a stranger planted in a job, a hostile
//! command line or hostile output can make procward do. Each test states the promise it
//! checks; a failure here is a safety bug, not a flaky timing. Run under Wine by
//! `scripts/platforms/windows.sh` (or `cargo test` on Windows).
//!
//! Roles: this test executable started again with `PROCWARD_ATTACK_ROLE` set plays a process
//! of a test (see `child_role`).
#![cfg(windows)]

use procward_core::identity::{identity, verdict};
use procward_core::job::{JobEvent, SpawnOptions};
use procward_core::kill::{kill_tree, KillOptions, Signal};
use procward_core::spawn::spawn;
use procward_core::status::ExitInfo;
use procward_core::windows::jobobject::JobObject;
use procward_core::{Identity, Verdict};
use std::io::Write;
use std::mem::size_of;
use std::os::windows::io::AsRawHandle;
use std::os::windows::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::ptr::null_mut;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};
use windows_sys::Win32::System::Threading::DETACHED_PROCESS;

/// A generous bound that turns a hang into a failure (never a speed claim).
const HANG: Duration = Duration::from_secs(60);
const ROLE: &str = "PROCWARD_ATTACK_ROLE";

/// A process a test started; killed and reaped when the test ends, whatever happened.
struct Proc {
  child: Child,
  id: Identity,
}

impl Drop for Proc {
  fn drop(&mut self) {
    let _ = self.child.kill();
    let _ = self.child.wait();
  }
}

/// This test executable in a role, running (no console, no standard handles: without a
/// console there is no conhost.exe beside it, whose termination together with its client's
/// crashed Wine 8's wineserver now and then).
fn role(name: &str, arg: &str) -> Proc {
  let child = Command::new(std::env::current_exe().unwrap())
    .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
    .env(ROLE, name)
    .env("PROCWARD_ATTACK_ARG", arg)
    .creation_flags(DETACHED_PROCESS)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("start a role");
  let id = identity(child.id() as i32).unwrap().expect("a running role has an identity");
  Proc { child, id }
}

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

/// Runs `opts` to its end: every event in order, the exit last (bounded by [`HANG`]).
fn events(opts: SpawnOptions) -> Vec<JobEvent> {
  let (tx, rx) = channel();
  let _job = spawn(opts, Box::new(move |ev| drop(tx.send(ev)))).expect("spawn");
  let mut seen = Vec::new();
  while !matches!(seen.last(), Some(JobEvent::Exit(_))) {
    seen.push(rx.recv_timeout(HANG).expect("no exit within 60 s"));
  }
  seen
}

/// The text of `events` and the exit.
fn output_and_exit(events: &[JobEvent]) -> (String, ExitInfo) {
  let text = events.iter().filter_map(|e| if let JobEvent::Output { text, .. } = e { Some(text.as_str()) } else { None }).collect();
  let Some(JobEvent::Exit(info)) = events.last() else { unreachable!("events end with the exit") };
  (text, *info)
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

mod command_line {
  use super::*;

  #[test]
  fn a_second_line_for_cmd_is_refused_instead_of_dropped() {
    // cmd.exe stops at the first line break of its command line (Wine's cmd echoes the rest
    // as text): the second line would never run, and nobody would be told.
    let err = spawn(SpawnOptions::new("echo first\r\necho second"), Box::new(|_| {})).unwrap_err().to_string();
    assert!(err.contains("first line") && err.contains("&"), "the refusal should say why and what to do: {err}");
    // A line break at the end only is harmless: the command runs.
    let (out, exit) = output_and_exit(&events(SpawnOptions::new("echo one\r\n")));
    assert_eq!(exit, ExitInfo::exited(0));
    assert!(out.starts_with("one"), "{out:?}");
  }

  #[test]
  fn a_batch_file_as_the_shell_is_refused() {
    // CreateProcessW runs a .bat or .cmd through cmd.exe, which parses the C runtime's
    // quoting its own way: `"` and `&` in the command would run as commands (BatBadBut).
    let dir = std::env::temp_dir().join(format!("procward-attack-bat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bat = dir.join("wrapper.bat");
    std::fs::write(&bat, "@echo arg=[%1]\r\n").unwrap();
    let marker = dir.join("smuggled");
    let mut opts = SpawnOptions::new(format!("x\" & echo smuggled> \"{}\" & rem \"", marker.display()));
    opts.shell = bat.clone();
    opts.shell_args = Vec::new();
    match spawn(opts, Box::new(|_| {})) {
      Err(e) => assert!(e.to_string().contains("batch"), "the refusal should name the batch file: {e}"),
      Ok(_) => {
        std::thread::sleep(Duration::from_secs(3));
        assert!(!marker.exists(), "a command given to a batch-file shell ran a second command");
        panic!("a batch file was accepted as the shell");
      }
    }
    let _ = std::fs::remove_dir_all(&dir);
  }

  #[test]
  fn quotes_carets_percents_and_bangs_reach_cmd_byte_for_byte() {
    // As cmd reads a typed line: `^` escapes outside quotes only, a lone `%` stays, `!` is
    // plain text (no delayed expansion), backslashes are not escapes.
    let (out, exit) = output_and_exit(&events(SpawnOptions::new(r#"echo "a^b" ^& 100% !x! "tail\\" \"q\""#)));
    assert_eq!(exit, ExitInfo::exited(0));
    assert_eq!(out.trim_end(), r#""a^b" & 100% !x! "tail\\" \"q\""#);
  }

  #[test]
  fn a_nul_in_the_command_is_refused() {
    let err = spawn(SpawnOptions::new("echo a\0& echo b"), Box::new(|_| {})).unwrap_err();
    assert!(err.to_string().contains("NUL"), "{err}");
  }
}

mod hostile_output {
  use super::*;

  #[test]
  fn a_ten_megabyte_line_with_invalid_utf8_arrives_whole_and_the_exit_follows() {
    let mut opts = SpawnOptions::new(format!("\"{}\" --exact child_role --nocapture --test-threads=1", exe()));
    opts.env = Some(env_with(&[(ROLE, "flood"), ("PROCWARD_ATTACK_ARG", "10485760")]));
    opts.tail_limit = 1 << 10;
    let seen = events(opts);
    let (text, exit) = output_and_exit(&seen);
    let xs = text.chars().filter(|&c| c == 'x').count();
    let replacement = text.chars().filter(|&c| c == '\u{fffd}').count();
    assert_eq!(exit, ExitInfo::exited(0));
    assert_eq!(xs, 10 << 20, "every byte of the long line must arrive");
    // \xff, \xfe and the truncated \xe2\x9c at the end: one U+FFFD each.
    assert_eq!(replacement, 3, "invalid bytes become one U+FFFD each");
  }

  #[test]
  fn lone_surrogates_written_to_a_pseudoconsole_come_out_as_text_and_the_exit_follows() {
    // UTF-16 that is not: lone high and low surrogates typed to the console through
    // WriteConsoleW. The pseudoconsole's UTF-8 stream must not stall or poison the capture.
    let mut opts = SpawnOptions::new("surrogates");
    opts.shell = std::env::current_exe().unwrap();
    opts.shell_args = ["--exact", "child_role", "--nocapture", "--test-threads=1"].map(String::from).to_vec();
    opts.env = Some(env_with(&[(ROLE, "surrogates")]));
    opts.input = procward_core::job::Input::Pty(procward_core::job::PtySize { cols: 80, rows: 25 });
    let (text, exit) = output_and_exit(&events(opts));
    assert_eq!(exit, ExitInfo::exited(0), "{text:?}");
    assert!(text.contains("a") && text.contains("end"), "the text around the surrogates must come out: {text:?}");
  }

  fn exe() -> String {
    std::env::current_exe().unwrap().display().to_string()
  }

  fn env_with(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k != ROLE).collect();
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
  }
}

mod durable_files {
  use super::*;
  use procward_core::job::Capture;
  use std::path::{Path, PathBuf};

  /// `<temp>/procward-attack-<name>-<pid>/sessions/proc_<12 hex>/`, created down to
  /// `sessions` (the supervisor creates the session's own directory).
  fn session_dir(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("procward-attack-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("sessions")).unwrap();
    let salt = name.bytes().fold(7u64, |h, b| h.wrapping_mul(131).wrapping_add(b.into()));
    root.join("sessions").join(format!("proc_{:012x}", (u64::from(std::process::id()) << 20 ^ salt) & 0xffff_ffff_ffff))
  }

  fn durable(command: &str, dir: &Path, stdin: bool) -> SpawnOptions {
    let mut opts = SpawnOptions::new(command);
    opts.capture = Capture::Durable {
      log_path: dir.join("output.log"),
      exit_path: dir.join("exit.json"),
      supervisor: std::path::absolute(env!("CARGO_BIN_EXE_procward-supervise")).unwrap(),
      log_part_bytes: 0,
      stdin_fifo: stdin.then(|| dir.join("stdin")),
    };
    opts.session_record = Some(format!("{{\"id\":\"{}\",\"durable\":true}}", dir.file_name().unwrap().to_string_lossy()));
    opts
  }

  /// A named pipe server under `name`, as anyone on the machine may create one (the default
  /// security: its creator and admins write, everyone reads).
  fn squat_pipe(name: &str) -> std::os::windows::io::OwnedHandle {
    use std::os::windows::io::{FromRawHandle, OwnedHandle};
    use windows_sys::Win32::Storage::FileSystem::PIPE_ACCESS_INBOUND;
    use windows_sys::Win32::System::Pipes::{CreateNamedPipeW, PIPE_TYPE_BYTE, PIPE_WAIT};
    let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
    let h = unsafe { CreateNamedPipeW(wide.as_ptr(), PIPE_ACCESS_INBOUND, PIPE_TYPE_BYTE | PIPE_WAIT, 4, 4096, 4096, 0, std::ptr::null()) };
    assert!(!h.is_null() && h != windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE, "{}", std::io::Error::last_os_error());
    unsafe { OwnedHandle::from_raw_handle(h) }
  }

  /// The job's output and exit when its stdin pipe cannot be served: it must not run (a
  /// host would write its input to whoever holds the name, or to nobody).
  fn start_without_its_pipe(dir: &Path) -> (String, ExitInfo) {
    let (out, exit) = output_and_exit(&events(durable("echo ran", dir, true)));
    assert!(!out.contains("ran\r\n"), "the job ran without its stdin pipe: {out:?}");
    assert!(out.contains("stdin pipe"), "the log should say why: {out:?}");
    (out, exit)
  }

  #[test]
  fn a_squatted_stdin_pipe_name_fails_the_start_instead_of_running_the_job_without_its_stdin() {
    // Someone on the machine (pipe names are machine-wide) holds the job's stdin pipe name
    // before the supervisor makes it. Windows refuses the supervisor's
    // FILE_FLAG_FIRST_PIPE_INSTANCE then; Wine 8 ignores that flag (and the instance
    // count) and lets it join the squatter's pipe, so there the case cannot be made.
    let dir = session_dir("squat");
    let name = procward_core::windows::durable::stdin_pipe_name(&dir.join("stdin"));
    let _squatter = squat_pipe(&name);
    if !first_instance_is_enforced() {
      eprintln!("this system lets a second server join a taken pipe name (Wine 8): the squatted case is not checked");
      return;
    }
    assert_eq!(start_without_its_pipe(&dir).1, ExitInfo::exited(127));
  }

  #[test]
  fn a_stdin_pipe_that_cannot_be_made_fails_the_start() {
    // A session id so long that its pipe name passes the 256 characters a pipe name may
    // have: any failure to serve the pipe fails the start, as a squatted name does.
    let short = session_dir("long");
    let dir = short.with_file_name(format!("proc_{}", "a".repeat(240)));
    assert_eq!(start_without_its_pipe(&dir).1, ExitInfo::exited(127));
  }

  /// Whether creating a pipe with `FILE_FLAG_FIRST_PIPE_INSTANCE` fails on a taken name.
  fn first_instance_is_enforced() -> bool {
    use windows_sys::Win32::Storage::FileSystem::{FILE_FLAG_FIRST_PIPE_INSTANCE, PIPE_ACCESS_INBOUND};
    use windows_sys::Win32::System::Pipes::{CreateNamedPipeW, PIPE_TYPE_BYTE, PIPE_WAIT};
    let name = format!(r"\\.\pipe\procward-attack-probe-{}", std::process::id());
    let _first = squat_pipe(&name);
    let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
    let flags = PIPE_ACCESS_INBOUND | FILE_FLAG_FIRST_PIPE_INSTANCE;
    let h = unsafe { CreateNamedPipeW(wide.as_ptr(), flags, PIPE_TYPE_BYTE | PIPE_WAIT, 1, 4096, 4096, 0, std::ptr::null()) };
    let refused = h.is_null() || h == windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
    if !refused {
      unsafe { windows_sys::Win32::Foundation::CloseHandle(h) };
    }
    refused
  }

  /// Whether a symbolic link now stands at `at`. Wine 8's CreateSymbolicLinkW is a stub
  /// that reports success and creates nothing: there the link cases are not checked.
  fn linked(made: std::io::Result<()>, at: &Path) -> bool {
    let there = made.is_ok() && std::fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink());
    if !there {
      eprintln!("no symbolic link could be made at {} ({made:?}): the case is not checked", at.display());
    }
    there
  }

  #[test]
  fn an_exit_file_planted_as_a_link_is_not_read_as_the_jobs_end() {
    // A link at exit.json's name, to a file that says the job exited 0, planted while the
    // job runs: the host must not take it for the job's end (files of the session directory
    // are opened without following links); the supervisor's own end, 4, is the one.
    let dir = session_dir("exitlink");
    let (tx, rx) = channel();
    let _job = spawn(durable("echo started & ping -n 3 127.0.0.1 >nul & exit /b 4", &dir, false), Box::new(move |ev| drop(tx.send(ev))))
      .expect("spawn");
    let first = rx.recv_timeout(HANG).expect("no output");
    assert!(matches!(&first, JobEvent::Output { text, .. } if text.contains("started")), "{first:?}");
    let fake = dir.parent().unwrap().join("fake-exit.json");
    std::fs::write(&fake, "{\"code\":0,\"signal\":null}\n").unwrap();
    if !linked(std::os::windows::fs::symlink_file(&fake, dir.join("exit.json")), &dir.join("exit.json")) {
      return;
    }
    let exit = loop {
      match rx.recv_timeout(HANG).expect("no exit within 60 s") {
        JobEvent::Exit(info) => break info,
        JobEvent::Output { .. } => {}
      }
    };
    assert_eq!(exit, ExitInfo::exited(4), "the planted link was read as the job's end");
  }

  #[test]
  fn a_lock_file_planted_as_a_link_is_refused() {
    let dir = session_dir("lock");
    let target = dir.parent().unwrap().join("target");
    std::fs::write(&target, "keep").unwrap();
    let lock = dir.parent().unwrap().join("checkpoint.lock");
    if !linked(std::os::windows::fs::symlink_file(&target, &lock), &lock) {
      return;
    }
    let err = procward_core::lockfile::try_lock(&lock).expect_err("a lock taken through a link");
    assert!(err.to_string().contains("link"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
  }

  #[test]
  fn a_session_directory_that_is_a_link_is_refused() {
    // The session directory replaced by a link to another directory: the supervisor
    // writes nothing through it.
    let dir = session_dir("link");
    let elsewhere = dir.parent().unwrap().parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    if !linked(std::os::windows::fs::symlink_dir(&elsewhere, &dir), &dir) {
      return;
    }
    let _ = output_and_exit(&events(durable("echo ran", &dir, false)));
    let written: Vec<_> = std::fs::read_dir(&elsewhere).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(written.is_empty(), "files written through the link: {written:?}");
  }
}

/// Not a test: the body of the processes the tests start (this executable run again with
/// `PROCWARD_ATTACK_ROLE`). Without the variable it returns at once.
#[test]
fn child_role() {
  let Ok(name) = std::env::var(ROLE) else { return };
  let arg = std::env::var("PROCWARD_ATTACK_ARG").unwrap_or_default();
  match name.as_str() {
    "sleep" => std::thread::sleep(Duration::from_secs(arg.parse().unwrap_or(120))),
    "exit" => std::process::exit(arg.parse().unwrap_or(0)),
    // `arg` bytes of 'x' with no line break, then invalid UTF-8, and a sequence cut short.
    "flood" => {
      let mut out = std::io::stdout().lock();
      let n: usize = arg.parse().unwrap();
      let chunk = vec![b'x'; 64 * 1024];
      let mut left = n;
      while left > 0 {
        let k = left.min(chunk.len());
        out.write_all(&chunk[..k]).unwrap();
        left -= k;
      }
      out.write_all(b"\xff\xfe\xe2\x9c").unwrap();
      out.flush().unwrap();
      std::process::exit(0);
    }
    // Lone surrogates, then a line, to the console (CONOUT$: Wine 8 gives a pseudoconsole's
    // first process no standard handles).
    "surrogates" => {
      use windows_sys::Win32::Foundation::{GENERIC_READ, GENERIC_WRITE};
      use windows_sys::Win32::Storage::FileSystem::{CreateFileW, FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_EXISTING};
      use windows_sys::Win32::System::Console::WriteConsoleW;
      let name: Vec<u16> = "CONOUT$".encode_utf16().chain([0]).collect();
      let share = FILE_SHARE_READ | FILE_SHARE_WRITE;
      let out = unsafe { CreateFileW(name.as_ptr(), GENERIC_READ | GENERIC_WRITE, share, null_mut(), OPEN_EXISTING, 0, null_mut()) };
      let mut text: Vec<u16> = vec![0xD800, u16::from(b'a'), 0xDC00, u16::from(b'b'), 0xDBFF];
      text.extend("\r\nend\r\n".encode_utf16());
      let mut written = 0u32;
      unsafe { WriteConsoleW(out, text.as_ptr().cast(), text.len() as u32, &mut written, null_mut()) };
      std::thread::sleep(Duration::from_millis(300));
      std::process::exit(0);
    }
    other => panic!("unknown role {other}"),
  }
}
