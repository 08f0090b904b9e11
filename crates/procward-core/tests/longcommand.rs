//! Long commands (issue 16 item 5): over 64 KiB a command reaches the shell through an
//! inherited descriptor (`script`), byte for byte, in pipe and durable jobs, with bash and
//! dash; at most 1 MiB, and the error past it names the limit.
#![cfg(unix)]

use procward_core::job::MAX_COMMAND_BYTES;
use procward_core::reader::JobEvent;
use procward_core::script::SCRIPT_THRESHOLD;
use procward_core::spawn::{spawn, Capture, SpawnOptions};
use procward_core::status::ExitInfo;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `opts` to its end: (output, exit).
fn run_to_end(opts: SpawnOptions) -> (String, ExitInfo) {
  let (tx, rx) = mpsc::channel();
  let _job = spawn(opts, Box::new(move |ev| drop(tx.send(ev)))).unwrap();
  let mut out = String::new();
  loop {
    match rx.recv_timeout(Duration::from_secs(30)).expect("no exit within 30 s") {
      JobEvent::Output { text, .. } => out.push_str(&text),
      JobEvent::Exit(info) => return (out, info),
    }
  }
}

fn with_shell(command: String, shell: &str) -> SpawnOptions {
  let mut opts = SpawnOptions::new(command);
  opts.shell = shell.into();
  opts
}

fn temp(name: &str) -> PathBuf {
  let dir = std::env::temp_dir().join(format!("procward-long-{name}-{}", std::process::id()));
  let _ = std::fs::remove_dir_all(&dir);
  std::fs::create_dir_all(&dir).unwrap();
  dir
}

/// About `len` bytes of text that is every character a heredoc passes through but NUL:
/// control characters, quotes of every kind, `$`, backslashes, newlines, multi-byte UTF-8.
fn binaryish(len: usize) -> String {
  let alphabet: Vec<char> = (1u32..=0x7f).chain([0xa0, 0xe9, 0x3b1, 0x20ac, 0x1f600]).filter_map(char::from_u32).collect();
  let mut s = String::with_capacity(len + 4);
  let mut i = 0usize;
  while s.len() < len {
    s.push(alphabet[i % alphabet.len()]);
    i = i.wrapping_mul(31).wrapping_add(7) % 100_003;
  }
  s
}

/// A heredoc that writes `payload` to `file`, then says `done`.
fn heredoc(file: &Path, payload: &str) -> String {
  format!("cat > '{}' <<'PROCWARD_END'\n{payload}\nPROCWARD_END\necho done\n", file.display())
}

#[test]
fn a_200_kb_heredoc_of_binaryish_bytes_reaches_bash_and_dash_byte_for_byte() {
  let dir = temp("heredoc");
  let payload = binaryish(200 * 1024);
  for shell in ["/bin/bash", "/bin/dash"] {
    if !Path::new(shell).exists() {
      continue;
    }
    let file = dir.join("out");
    let (out, exit) = run_to_end(with_shell(heredoc(&file, &payload), shell));
    assert_eq!((out.as_str(), exit), ("done\n", ExitInfo::exited(0)), "{shell}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{payload}\n"), "{shell}");
  }
  std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_long_command_keeps_dollar_zero_and_leaves_no_descriptor_to_the_job_or_its_children() {
  for shell in ["/bin/bash", "/bin/dash"] {
    let pad = format!("# {}\n", "x".repeat(SCRIPT_THRESHOLD));
    let command = format!(
      "{pad}echo \"0=$0 #=$#\"; [ -e /proc/$$/fd/3 ] && echo shell-has-3 || echo shell-clean; sh -c '[ -e /proc/$$/fd/3 ] && echo child-has-3 || echo child-clean'"
    );
    let (out, exit) = run_to_end(with_shell(command, shell));
    assert_eq!(exit, ExitInfo::exited(0));
    assert_eq!(out, format!("0={shell} #=0\nshell-clean\nchild-clean\n"), "{shell}");
  }
}

#[test]
fn up_to_the_threshold_bash_still_execs_the_last_command_and_above_it_reports_the_shells_status() {
  // A command of exactly `len` bytes whose last command kills itself with SIGKILL.
  let ending = "\nsh -c 'kill -KILL $$'";
  let command = |len: usize| format!("# {}{ending}", "y".repeat(len - 2 - ending.len()));
  let (_, at) = run_to_end(with_shell(command(SCRIPT_THRESHOLD), "/bin/bash"));
  assert_eq!(at, ExitInfo::signalled(libc::SIGKILL), "-c as always: bash execs the last command");
  let (_, over) = run_to_end(with_shell(command(SCRIPT_THRESHOLD + 1), "/bin/bash"));
  assert_eq!(over, ExitInfo::exited(128 + libc::SIGKILL), "a sourced script: bash forks the last command");
}

#[test]
fn exactly_the_limit_runs_and_one_byte_more_is_an_error_that_names_it() {
  let head = "echo ran\n#";
  let at = format!("{head}{}", "z".repeat(MAX_COMMAND_BYTES - head.len()));
  assert_eq!(at.len(), MAX_COMMAND_BYTES);
  assert_eq!(run_to_end(SpawnOptions::new(at.clone())), ("ran\n".to_string(), ExitInfo::exited(0)));
  let over = format!("{at}z");
  let err = spawn(SpawnOptions::new(over), Box::new(|_| {})).unwrap_err();
  assert_eq!(err.code(), "EINVAL");
  assert!(err.to_string().contains("1048576") && err.to_string().contains("1048577"), "{err}");
}

#[test]
fn a_durable_job_gets_the_long_command_through_its_supervisor() {
  let dir = temp("durable");
  let payload = binaryish(200 * 1024);
  let file = dir.join("out");
  let mut opts = SpawnOptions::new(heredoc(&file, &payload));
  opts.capture = Capture::Durable {
    log_path: dir.join("output.log"),
    exit_path: dir.join("exit.json"),
    supervisor: PathBuf::from(env!("CARGO_BIN_EXE_procward-supervise")),
    log_part_bytes: 0,
    stdin_fifo: None,
  };
  let (_, exit) = run_to_end(opts);
  assert_eq!(exit, ExitInfo::exited(0));
  assert_eq!(std::fs::read_to_string(dir.join("output.log")).unwrap(), "done\n");
  assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{payload}\n"));
  std::fs::remove_dir_all(&dir).unwrap();
}
