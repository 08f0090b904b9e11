//! Durable jobs on Windows with real Windows processes (cmd.exe, ping, and `examples/jobkid.rs`
//! where Wine has no tool: its `findstr` does not read stdin) under the real
//! `procward-supervise.exe`: its files, a host that is gone, the stdin named pipe, and a
//! kill through the supervisor's named Job Object. Run under Wine by
//! `scripts/platforms/windows.sh` (or `cargo test` on Windows).
#![cfg(windows)]

mod windows_common;

use windows_common::durable::{alive, durable, exit_file, number_after, session_dir, started_job, wait_for_file};
use windows_common::{start, until_exit, HANG};

use procward_core::spawn::spawn;
use procward_core::status::ExitInfo;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The test binary plays a host that starts a job and exits when this names a directory.
const HOST_ROLE: &str = "PROCWARD_TEST_DURABLE_HOST";

#[test]
fn the_supervisor_writes_the_record_its_identity_the_log_and_the_exit() {
  let dir = session_dir("files");
  let (job, rx) = start(durable("echo hi & exit /b 7", &dir, false));
  let (out, exit) = until_exit(&rx);
  assert_eq!(out.trim_end(), "hi");
  assert_eq!(exit, ExitInfo::exited(7));
  assert_eq!(*job.exit.lock().unwrap(), Some(ExitInfo::exited(7)));
  assert_eq!(exit_file(&dir), ExitInfo::exited(7));
  assert_eq!(std::fs::read_to_string(dir.join("output.log")).unwrap().trim_end(), "hi");
  // session.json: the host's record with the supervisor's identity added, as on Unix.
  let record = std::fs::read_to_string(dir.join("session.json")).unwrap();
  assert!(record.starts_with(&format!("{{\"id\":\"{}\",\"durable\":true,", dir.file_name().unwrap().to_string_lossy())), "{record}");
  assert_eq!(number_after(&record, "{", "pid"), job.pid as u64);
  assert_eq!(number_after(&record, "\"identity\"", "startTime"), job.identity.start_time);
  // supervisor.json: the same identity, and the job's own process.
  let sup = std::fs::read_to_string(dir.join("supervisor.json")).unwrap();
  assert_eq!(number_after(&sup, "{", "pid"), job.pid as u64);
  assert_eq!(number_after(&sup, "{", "startTime"), job.identity.start_time);
  assert_ne!(number_after(&sup, "\"job\"", "pid"), job.pid as u64);
}

#[test]
fn the_shell_and_the_long_line_are_checked_before_anything_starts() {
  let dir = session_dir("checks");
  let mut opts = durable("echo never", &dir, false);
  opts.shell = "no-such-shell-procward".into();
  let err = spawn(opts, Box::new(|_| {})).unwrap_err().to_string();
  assert!(err.contains("finding the shell"), "{err}");
  let err = spawn(durable(&"x".repeat(9000), &dir, false), Box::new(|_| {})).unwrap_err().to_string();
  assert!(err.contains("8191"), "{err}");
  assert!(!dir.exists(), "nothing started, so no session directory");
}

/// The host role: starts `PROCWARD_TEST_DURABLE_HOST`'s job and exits at once, printing the
/// supervisor's pid, while the job runs on.
#[test]
fn host_role() {
  let Ok(dir) = std::env::var(HOST_ROLE) else { return };
  let (job, _rx) = start(durable("echo before & ping -n 3 127.0.0.1 >nul & echo after & exit /b 4", Path::new(&dir), false));
  println!("supervisor={}", job.pid);
  std::process::exit(0);
}

#[test]
fn the_job_outlives_its_host_and_a_second_host_reads_its_end_from_the_files() {
  let dir = session_dir("orphan");
  let host = std::process::Command::new(std::env::current_exe().unwrap())
    .args(["--exact", "host_role", "--nocapture", "--test-threads=1"])
    .env(HOST_ROLE, &dir)
    .output()
    .unwrap();
  let said = String::from_utf8_lossy(&host.stdout);
  assert!(host.status.success() && said.contains("supervisor="), "host: {said} {}", String::from_utf8_lossy(&host.stderr));
  // The host is gone; the job goes on: "after" comes two seconds later, then the exit.
  let record = wait_for_file(&dir.join("supervisor.json"), |t| t.ends_with("}\n"));
  let (sup_pid, sup_start) = (number_after(&record, "{", "pid"), number_after(&record, "{", "startTime"));
  assert!(said.contains(&format!("supervisor={sup_pid}")));
  assert_eq!(exit_file(&dir), ExitInfo::exited(4));
  let log = std::fs::read_to_string(dir.join("output.log")).unwrap();
  assert!(log.contains("before") && log.contains("after"), "{log}");
  // The supervisor leaves once the job and its output are done.
  let deadline = Instant::now() + HANG;
  while alive(sup_pid, sup_start) {
    assert!(Instant::now() < deadline, "the supervisor stayed");
    std::thread::sleep(Duration::from_millis(50));
  }
}

/// `examples/jobkid.rs` (`cat` copies stdin to stdout until EOF), built by `cargo test`
/// beside the test executables.
fn kid() -> String {
  let exe = std::env::current_exe().unwrap();
  let path: PathBuf = exe.parent().and_then(|deps| deps.parent()).unwrap().join("examples").join("jobkid.exe");
  assert!(path.is_file(), "{} is missing: cargo test builds it (cargo build --example jobkid)", path.display());
  format!("\"{}\"", path.display())
}

/// Opens the job's stdin pipe for writing, waiting while the supervisor has not created it.
fn open_stdin(dir: &Path) -> std::fs::File {
  let name = procward_core::windows::durable::stdin_pipe_name(&dir.join("stdin"));
  let deadline = Instant::now() + HANG;
  loop {
    match std::fs::OpenOptions::new().write(true).open(&name) {
      Ok(f) => return f,
      Err(e) => assert!(Instant::now() < deadline, "cannot open {name}: {e}"),
    }
    std::thread::sleep(Duration::from_millis(20));
  }
}

#[test]
fn stdin_through_the_named_pipe_reaches_the_job_from_two_writers_and_a_close_ends_it() {
  use std::io::Write;
  let dir = session_dir("stdin");
  let (_job, rx) = start(durable(&format!("{} cat", kid()), &dir, true));
  // Two writers, one after the other (each host opens, writes, closes).
  open_stdin(&dir).write_all(b"first line\r\n").unwrap();
  let big: String = (0..2000).map(|i| format!("row {i:04}\r\n")).collect();
  open_stdin(&dir).write_all(big.as_bytes()).unwrap();
  // The close request: the marker, then a connection that writes nothing to wake the
  // supervisor. It may find no pipe: the supervisor saw the marker after the last write.
  std::fs::write(dir.join("stdin-closed"), "1\n").unwrap();
  let name = procward_core::windows::durable::stdin_pipe_name(&dir.join("stdin"));
  drop(std::fs::OpenOptions::new().write(true).open(&name));
  let (out, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0));
  assert!(out.starts_with("first line\r\nrow 0000\r\n"), "{:?}", &out[..out.len().min(80)]);
  assert!(out.ends_with("row 1999\r\n"), "{:?}", &out[out.len().saturating_sub(80)..]);
  assert_eq!(out.len(), "first line\r\n".len() + big.len());
  // After the close there is no pipe to write to.
  assert!(std::fs::OpenOptions::new().write(true).open(name).is_err());
}

/// `TerminateJobObject(<name>, 1)`, by name, as a killer in another process does.
fn terminate_job(name: &str) {
  use windows_sys::Win32::System::JobObjects::{OpenJobObjectW, TerminateJobObject};
  // winnt.h (windows-sys keeps it in a large feature).
  const JOB_OBJECT_TERMINATE: u32 = 8;
  let wide: Vec<u16> = name.encode_utf16().chain(std::iter::once(0)).collect();
  let handle = unsafe { OpenJobObjectW(JOB_OBJECT_TERMINATE, 0, wide.as_ptr()) };
  assert!(!handle.is_null(), "cannot open {name}: {}", std::io::Error::last_os_error());
  assert_ne!(unsafe { TerminateJobObject(handle, 1) }, 0);
  unsafe { windows_sys::Win32::Foundation::CloseHandle(handle) };
}

#[test]
fn terminate_job_object_of_the_jobs_named_job_gives_an_exit_file() {
  let dir = session_dir("kill");
  let (job, rx, record) = started_job(&dir);
  let (pid, start_time) = (number_after(&record, "\"job\"", "pid"), number_after(&record, "\"job\"", "startTime"));
  terminate_job(&procward_core::windows::jobobject::JobObject::name(pid as u32, start_time));
  // The supervisor is outside that job: it records the job's end, the code the killer chose.
  let (rest, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(1));
  assert!(!rest.contains("never"), "{rest}");
  assert_eq!(exit_file(&dir), ExitInfo::exited(1));
  assert!(!alive(pid, start_time), "the job's process is gone");
  drop(job);
}

#[test]
fn terminate_job_object_of_the_supervisors_named_job_ends_both_and_the_end_is_unknown() {
  let dir = session_dir("killsup");
  let (job, rx, record) = started_job(&dir);
  let (pid, start_time) = (number_after(&record, "\"job\"", "pid"), number_after(&record, "\"job\"", "startTime"));
  // The name a killer derives from the session's identity alone.
  terminate_job(&procward_core::windows::jobobject::JobObject::name(job.pid as u32, job.identity.start_time));
  let (rest, exit) = until_exit(&rx);
  // No exit file: the supervisor died with the job, and hosts see the end as unknown (lost).
  assert_eq!(exit, ExitInfo { code: None, signal: None });
  assert!(!rest.contains("never"), "{rest}");
  assert!(!dir.join("exit.json").exists());
  assert!(!alive(pid, start_time), "the job's process is gone");
  assert!(!alive(job.pid as u64, job.identity.start_time), "the supervisor is gone");
}
