//! Windows spawn, capture, wait, stdin and ConPTY, with real Windows processes: cmd.exe,
//! ping, and `examples/jobkid.rs` where cmd has no tool for the job. Run under Wine by
//! `scripts/platforms/windows.sh` (or `cargo test` on Windows).
#![cfg(windows)]

mod windows_common;

use windows_common::{start, until_exit, HANG};

use procward_core::job::{Input, JobEvent, PtySize, SpawnOptions};
use procward_core::spawn::{spawn, Job};
use procward_core::status::ExitInfo;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// Reads output into `out` until it contains `needle` (an exit on the way fails).
fn until_output(rx: &Receiver<JobEvent>, out: &mut String, needle: &str) {
  let deadline = Instant::now() + HANG;
  while !out.contains(needle) {
    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
      Ok(JobEvent::Output { text, .. }) => out.push_str(&text),
      Ok(JobEvent::Exit(info)) => panic!("exited ({info:?}) before printing {needle:?}; output: {out:?}"),
      Err(_) => panic!("no {needle:?} within 60 s; output: {out:?}"),
    }
  }
}

/// `examples/jobkid.rs`, built by `cargo test` beside the test executables.
fn kid() -> String {
  let exe = std::env::current_exe().unwrap();
  let path: PathBuf = exe.parent().and_then(|deps| deps.parent()).unwrap().join("examples").join("jobkid.exe");
  assert!(path.is_file(), "{} is missing: cargo test builds it (cargo build --example jobkid)", path.display());
  format!("\"{}\"", path.display())
}

mod output_and_exit {
  use super::*;

  #[test]
  fn echo_and_its_exit_code() {
    let (job, rx) = start(SpawnOptions::new("echo hello & exit /b 3"));
    let (out, exit) = until_exit(&rx);
    assert_eq!(out.trim_end(), "hello");
    assert_eq!(exit, ExitInfo::exited(3));
    assert_eq!(*job.exit.lock().unwrap(), Some(ExitInfo::exited(3)), "the job's handle has the end too");
    assert!(job.tail.lock().unwrap().text().contains("hello"), "the tail holds the output");
    assert!(job.identity.start_time > 0 && job.identity.pid == job.pid);
  }

  #[test]
  fn stdout_and_stderr_share_one_stream() {
    let (_job, rx) = start(SpawnOptions::new("echo to-out & echo to-err 1>&2 & echo again"));
    let (out, exit) = until_exit(&rx);
    let lines: Vec<&str> = out.lines().map(str::trim_end).collect();
    assert_eq!(lines, ["to-out", "to-err", "again"], "{out:?}");
    assert_eq!(exit, ExitInfo::exited(0));
  }

  #[test]
  fn quotes_ampersands_percents_and_the_environment_reach_cmd_as_written() {
    let long = "x".repeat(4000);
    let mut opts = SpawnOptions::new(format!(r#"echo %PW_VALUE% & echo "a & b" 100% & echo {long}"#));
    let mut env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.eq_ignore_ascii_case("SystemRoot")).collect();
    env.push(("PW_VALUE".into(), "from-env".into()));
    opts.env = Some(env);
    let (_job, rx) = start(opts);
    let (out, exit) = until_exit(&rx);
    let lines: Vec<&str> = out.lines().map(str::trim_end).collect();
    assert_eq!(lines, ["from-env", r#""a & b" 100%"#, long.as_str()], "{out:?}");
    assert_eq!(exit, ExitInfo::exited(0));
  }

  #[test]
  fn utf8_split_across_writes_comes_out_whole() {
    let (_job, rx) = start(SpawnOptions::new(format!("{} split", kid())));
    let (out, exit) = until_exit(&rx);
    assert_eq!(out, "café ✓\n");
    assert_eq!(exit, ExitInfo::exited(0));
  }

  #[test]
  fn an_orphaned_grandchild_holding_the_pipe_does_not_hold_the_exit() {
    // The grandchild inherits the output pipe and outlives cmd; it prints its PID first.
    let (_job, rx) = start(SpawnOptions::new(format!("start /b \"\" {} hold 60 & echo parent-done", kid())));
    let mut out = String::new();
    let exit = loop {
      match rx.recv_timeout(HANG).expect("no exit within 60 s") {
        JobEvent::Output { text, .. } => out.push_str(&text),
        JobEvent::Exit(info) => break info,
      }
    };
    assert_eq!(exit, ExitInfo::exited(0));
    assert!(out.contains("parent-done"), "{out:?}");
    // Its PID may come before or after the exit (late output).
    until_output(&rx, &mut out, "pid=");
    let pid: i32 = out.split("pid=").nth(1).and_then(|s| s.split_whitespace().next()).and_then(|p| p.parse().ok()).expect(&out);
    // The exit was published while the grandchild still held the pipe open.
    assert!(procward_core::identity::identity(pid).unwrap().is_some(), "the grandchild {pid} is alive, and was not waited for");
  }

  #[test]
  fn jobs_started_at_once_never_hold_each_others_output_pipe() {
    // Half the jobs end at once, half run on; all start together from eight threads. A
    // short job's capture ends (dropping its sink) only when no process holds its pipe, so
    // a long job that inherited it would keep it open for a minute.
    let kid = kid();
    let starters: Vec<_> = (0..8)
      .map(|i| {
        let command = if i % 2 == 0 { format!("echo short-{i}") } else { format!("{kid} hold 60") };
        std::thread::spawn(move || start(SpawnOptions::new(command)))
      })
      .collect();
    let jobs: Vec<(Job, Receiver<JobEvent>)> = starters.into_iter().map(|t| t.join().unwrap()).collect();
    for (i, (_job, rx)) in jobs.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
      let (out, exit) = until_exit(rx);
      assert_eq!((out.trim_end(), exit), (format!("short-{i}").as_str(), ExitInfo::exited(0)));
      loop {
        match rx.recv_timeout(HANG) {
          Ok(_) => continue,
          Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
          Err(_) => panic!("job {i}'s output pipe is still held open a minute after its exit"),
        }
      }
    }
  }

  #[test]
  fn the_jobs_identity_is_what_identity_reads_while_it_runs() {
    let (job, rx) = start(SpawnOptions::new(format!("{} hold 60", kid())));
    let mut out = String::new();
    until_output(&rx, &mut out, "pid=");
    let live = procward_core::identity::identity(job.pid).unwrap().expect("the job runs");
    assert_eq!(live, job.identity);
    assert_eq!(procward_core::identity::verdict(&job.identity), procward_core::Verdict::Current);
  }
}

mod stdin {
  use super::*;

  #[test]
  fn a_megabyte_written_to_the_stdin_pipe_comes_back_whole() {
    let mut opts = SpawnOptions::new(format!("{} cat", kid()));
    opts.input = Input::Pipe;
    opts.tail_limit = 4 << 20;
    let (mut job, rx) = start(opts);
    let line = format!("{}\n", "0123456789abcdef".repeat(4));
    let total = 1 << 20;
    let data = line.repeat(total / line.len() + 1)[..total].to_string();
    let input = job.input.as_mut().expect("a stdin pipe");
    for chunk in data.as_bytes().chunks(64 * 1024) {
      input.write(chunk).expect("write");
    }
    input.close().expect("close");
    let (out, exit) = until_exit(&rx);
    assert_eq!(exit, ExitInfo::exited(0));
    assert_eq!(out.len(), total, "every byte written came back");
    assert!(out == data, "in order");
    assert!(input.write(b"more").is_err(), "stdin is closed");
  }

  #[test]
  fn writing_to_a_job_that_exited_fails() {
    let mut opts = SpawnOptions::new("exit /b 0");
    opts.input = Input::Pipe;
    let (job, rx) = start(opts);
    until_exit(&rx);
    let input = job.input.as_ref().unwrap();
    // A write is queued; the one that finds the pipe broken is reported by the next call.
    let failed = (0..100).any(|_| {
      std::thread::sleep(Duration::from_millis(50));
      input.write(b"x\r\n").is_err()
    });
    assert!(failed, "writes to an exited job keep succeeding");
  }

  #[test]
  fn without_stdin_the_job_reads_eof() {
    // cat copies stdin until EOF: with NUL as stdin it ends at once, with nothing.
    let (job, rx) = start(SpawnOptions::new(format!("{} cat", kid())));
    let (out, exit) = until_exit(&rx);
    assert!(job.input.is_none());
    assert_eq!(out, "");
    assert_eq!(exit, ExitInfo::exited(0));
  }
}

mod pty {
  use super::*;

  /// `cmd /d /v:on /s /c <command>` on a 100x30 pseudoconsole (delayed expansion: `!X!` is
  /// read after `set /p` ran), started through `jobkid console`, which hands cmd the
  /// console's handles: Wine 8 gives a pseudoconsole's first process none.
  fn pty_opts(command: &str) -> SpawnOptions {
    let mut opts = SpawnOptions::new(command);
    opts.shell = kid().trim_matches('"').into();
    opts.shell_args = ["console", "cmd", "/d", "/v:on", "/s", "/c"].map(String::from).to_vec();
    opts.input = Input::Pty(PtySize { cols: 100, rows: 30 });
    opts
  }

  #[test]
  fn prompt_and_answer() {
    let (job, rx) = start(pty_opts("set /p X=name? & echo got [!X!]"));
    let mut out = String::new();
    until_output(&rx, &mut out, "name?");
    job.input.as_ref().unwrap().write(b"procward\r").unwrap();
    until_output(&rx, &mut out, "got [procward]");
    let (_, exit) = until_exit(&rx);
    assert_eq!(exit, ExitInfo::exited(0));
  }

  #[test]
  fn close_types_the_console_eof() {
    // cat reads the console through Rust's std, which takes Ctrl-Z at the start of a read
    // as the end of input, as the C runtime does.
    let mut opts = pty_opts("cat");
    opts.shell_args = vec!["console".to_string(), kid().trim_matches('"').to_string()];
    let (mut job, rx) = start(opts);
    let input = job.input.as_mut().unwrap();
    input.write(b"typed-line\r").unwrap();
    let mut out = String::new();
    until_output(&rx, &mut out, "typed-line");
    input.close().unwrap();
    let (_, exit) = until_exit(&rx);
    assert_eq!(exit, ExitInfo::exited(0), "cat saw the end of its input: {out:?}");
  }

  #[test]
  fn resize_reaches_the_console() {
    let mut opts = pty_opts("");
    opts.shell_args = vec!["console".to_string(), kid().trim_matches('"').to_string()];
    opts.command = "size".into();
    let (job, rx) = start(opts);
    let input = job.input.as_ref().unwrap();
    let mut out = String::new();
    until_output(&rx, &mut out, "size=100x30");
    match input.resize(PtySize { cols: 90, rows: 20 }) {
      Ok(()) => {
        input.write(b"\r").unwrap();
        until_output(&rx, &mut out, "size=90x20");
      }
      // Wine 8's ResizePseudoConsole is a stub (E_NOTIMPL): a clear ENOTSUP, never EINVAL.
      Err(e) => {
        assert_eq!(e.code(), "ENOTSUP", "{e}");
        eprintln!("resize is not supported by this ConPTY: {e}");
      }
    }
  }

  #[test]
  fn a_pipe_job_cannot_be_resized() {
    let mut opts = SpawnOptions::new("exit /b 0");
    opts.input = Input::Pipe;
    let (job, rx) = start(opts);
    let err = job.input.as_ref().unwrap().resize(PtySize::default()).unwrap_err();
    assert_eq!(err.code(), "EINVAL", "{err}");
    until_exit(&rx);
  }
}

mod errors {
  use super::*;
  use procward_core::spawn::EventSink;

  fn fails(opts: SpawnOptions) -> procward_core::Error {
    let sink: EventSink = Box::new(|_| {});
    spawn(opts, sink).expect_err("spawn should fail")
  }

  #[test]
  fn a_missing_cwd_is_enoent_and_names_the_directory() {
    let mut opts = SpawnOptions::new("echo hi");
    opts.cwd = Some(r"C:\procward-no-such-dir".into());
    let err = fails(opts);
    assert_eq!(err.code(), "ENOENT", "{err}");
    assert!(err.to_string().contains(r"C:\procward-no-such-dir"), "{err}");
  }

  #[test]
  fn an_unknown_shell_is_enoent_and_names_the_shell() {
    let mut opts = SpawnOptions::new("echo hi");
    opts.shell = "procward-no-such-shell".into();
    let err = fails(opts);
    assert_eq!(err.code(), "ENOENT", "{err}");
    assert!(err.to_string().contains("finding the shell procward-no-such-shell"), "{err}");
  }

  #[test]
  fn a_command_over_cmds_limit_is_refused_with_the_limit_named() {
    let err = fails(SpawnOptions::new(format!("echo {}", "x".repeat(8191))));
    assert_eq!(err.code(), "EINVAL", "{err}");
    assert!(err.to_string().contains("8191"), "{err}");
    assert!(!err.to_string().contains("xxxx"), "the command stays out of the message: {err}");
  }

  #[test]
  fn an_empty_command_is_refused() {
    assert_eq!(fails(SpawnOptions::new("")).code(), "EINVAL");
  }
}
