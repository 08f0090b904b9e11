//! Durable jobs for the Windows integration tests: a session directory, the options of a
//! durable job under the real `procward-supervise.exe`, and reading the files the
//! supervisor writes (`supervisor.json`, `exit.json`).

use super::{start, HANG};
use procward_core::job::{Capture, JobEvent, SpawnOptions};
use procward_core::spawn::Job;
use procward_core::status::ExitInfo;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// `<temp>/procward-durable-<name>-<pid>/sessions/proc_<12 hex>/`, created empty down to
/// `sessions` (the supervisor creates the session's own directory).
pub fn session_dir(name: &str) -> PathBuf {
  let root = std::env::temp_dir().join(format!("procward-durable-{name}-{}", std::process::id()));
  let _ = std::fs::remove_dir_all(&root);
  std::fs::create_dir_all(root.join("sessions")).unwrap();
  // Ids differ between tests (they name each session's stdin pipe, shared by the machine).
  let salt = name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
  root.join("sessions").join(format!("proc_{:012x}", (u64::from(std::process::id()) << 24 ^ salt) & 0xffff_ffff_ffff))
}

pub fn supervisor() -> PathBuf {
  std::path::absolute(env!("CARGO_BIN_EXE_procward-supervise")).unwrap()
}

/// A durable job in `dir` whose record the supervisor writes (as a host hands it over).
pub fn durable(command: &str, dir: &Path, stdin: bool) -> SpawnOptions {
  let mut opts = SpawnOptions::new(command);
  opts.capture = Capture::Durable {
    log_path: dir.join("output.log"),
    exit_path: dir.join("exit.json"),
    supervisor: supervisor(),
    log_part_bytes: 0,
    stdin_fifo: stdin.then(|| dir.join("stdin")),
  };
  let id = dir.file_name().unwrap().to_string_lossy();
  opts.session_record = Some(format!("{{\"id\":\"{id}\",\"durable\":true}}"));
  opts
}

/// The file's text once `ready` accepts it (files are written whole, but may not exist yet).
pub fn wait_for_file(path: &Path, ready: impl Fn(&str) -> bool) -> String {
  let deadline = Instant::now() + HANG;
  loop {
    if let Some(text) = std::fs::read_to_string(path).ok().filter(|t| ready(t)) {
      return text;
    }
    assert!(Instant::now() < deadline, "{} never became ready", path.display());
    std::thread::sleep(Duration::from_millis(20));
  }
}

pub fn exit_file(dir: &Path) -> ExitInfo {
  ExitInfo::from_json(&wait_for_file(&dir.join("exit.json"), |t| ExitInfo::from_json(t).is_some())).unwrap()
}

/// `"key":<number>` or `"key":"<digits>"` of a flat JSON text, after `from`.
pub fn number_after(text: &str, from: &str, key: &str) -> u64 {
  let rest = &text[text.find(from).unwrap_or_else(|| panic!("{from} not in {text}"))..];
  let value = rest.split(&format!("\"{key}\":")).nth(1).unwrap_or_else(|| panic!("{key} not in {text}"));
  value.trim_start_matches('"').split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// Whether a process with this id and creation time runs now.
pub fn alive(pid: u64, start_time: u64) -> bool {
  use procward_core::identity::{boot_id, verdict, Identity, Verdict};
  verdict(&Identity { pid: pid as i32, start_time, boot_id: boot_id().unwrap() }) == Verdict::Current
}

/// Starts a job that prints `started` and then waits a minute; returns once it printed.
pub fn started_job(dir: &Path) -> (Job, Receiver<JobEvent>, String) {
  let (job, rx) = start(durable("echo started & ping -n 60 127.0.0.1 >nul & echo never", dir, false));
  let mut out = String::new();
  while !out.contains("started") {
    match rx.recv_timeout(HANG).expect("no output within 60 s") {
      JobEvent::Output { text, .. } => out.push_str(&text),
      JobEvent::Exit(info) => panic!("exited ({info:?}) before the kill"),
    }
  }
  let record = wait_for_file(&dir.join("supervisor.json"), |t| t.ends_with("}\n"));
  (job, rx, record)
}
