//! Adversarial tests of the Windows spawn and durable files (issue 15), with real Windows
//! processes under Wine: what a hostile command line, hostile output, or a crafted or linked
//! durable file can make procward do. Each test states the promise it checks; a failure
//! here is a safety bug, not a flaky timing. Run under Wine by `scripts/platforms/windows.sh`
//! (or `cargo test` on Windows).
#![cfg(windows)]

mod windows_common;

use procward_core::job::{JobEvent, SpawnOptions};
use procward_core::spawn::spawn;
use procward_core::status::ExitInfo;
use std::sync::mpsc::channel;
use std::time::Duration;
use windows_common::{events, output_and_exit, HANG, ROLE};

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

/// Not a test: the body of the processes the tests start (see `windows_common::run_role`).
#[test]
fn child_role() {
  windows_common::run_role();
}
