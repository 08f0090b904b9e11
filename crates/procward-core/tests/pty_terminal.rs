//! PTY jobs run through a terminal emulator (DESIGN section 4, PTY mode): their queries are
//! answered into their input, and their screen can be read. Real processes under real PTYs.
#![cfg(unix)]

use procward_core::job::{Input, JobEvent, PtySize, SpawnOptions};
use procward_core::spawn::{spawn, Job};
use procward_core::status::ExitInfo;
use procward_core::terminal::Screen;
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn start(command: &str, size: PtySize) -> (Job, mpsc::Receiver<JobEvent>) {
  let mut opts = SpawnOptions::new(command);
  opts.shell = "/bin/bash".into();
  opts.shell_args = vec!["-c".into()];
  opts.input = Input::Pty(size);
  let (tx, rx) = mpsc::channel();
  let job = spawn(opts, Box::new(move |ev| drop(tx.send(ev)))).unwrap();
  (job, rx)
}

fn small() -> PtySize {
  PtySize { cols: 80, rows: 24 }
}

/// Output until the exit event (30 s at most: a job left waiting for an answer fails here).
fn until_exit(rx: &mpsc::Receiver<JobEvent>) -> (String, ExitInfo) {
  let mut out = String::new();
  loop {
    match rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("no exit within 30 s; output so far: {out:?}")) {
      JobEvent::Output { text, .. } => out.push_str(&text),
      JobEvent::Exit(info) => return (out, info),
    }
  }
}

/// The job's screen once `ready` holds for it (30 s at most).
fn screen_when(job: &Job, ready: impl Fn(&Screen) -> bool) -> Screen {
  let terminal = job.terminal.as_ref().expect("a PTY job has a terminal");
  let deadline = Instant::now() + Duration::from_secs(30);
  loop {
    let screen = terminal.screen();
    if ready(&screen) {
      return screen;
    }
    assert!(Instant::now() < deadline, "the screen never got there: {screen:?}");
    std::thread::sleep(Duration::from_millis(10));
  }
}

/// Runs a shell job that sends `query` and reads the answer up to `end`, printing it
/// without its ESC; returns that printed answer.
fn answer_to(query: &str, end: char) -> String {
  let command = format!("printf '{query}'; IFS= read -rs -d '{end}' reply; printf '\\ngot:%s{end}\\n' \"${{reply#?}}\"");
  let (_job, rx) = start(&command, small());
  let (out, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0), "{out:?}");
  let got = out.rsplit("got:").next().expect("an answer line").trim_end();
  assert!(out.contains("got:"), "{out:?}");
  got.to_string()
}

#[test]
fn a_cursor_position_query_is_answered_with_where_the_cursor_is() {
  assert_eq!(answer_to("\\033[3;7H\\033[6n", 'R'), "[3;7R");
  assert_eq!(answer_to("\\033[2J\\033[12;40H\\033[?6n", 'R'), "[?12;40;1R");
}

#[test]
fn status_and_device_attribute_queries_are_answered() {
  assert_eq!(answer_to("\\033[5n", 'n'), "[0n");
  assert_eq!(answer_to("\\033[c", 'c'), "[?62;22c");
  assert_eq!(answer_to("\\033[0c", 'c'), "[?62;22c");
  assert_eq!(answer_to("\\033[>c", 'c'), "[>1;0;0c");
  assert_eq!(answer_to("\\033[18t", 't'), "[8;24;80t");
}

#[test]
fn a_query_split_across_two_writes_is_answered() {
  let command = "printf 'ab\\033'; sleep 0.1; printf '[6n'; IFS= read -rs -d R reply; printf '\\ngot:%s\\n' \"${reply#?}\"";
  let (_job, rx) = start(command, small());
  let (out, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0));
  assert!(out.ends_with("got:[1;3\r\n"), "{out:?}");
}

#[test]
fn answers_go_to_the_job_and_never_into_the_recorded_output() {
  let (job, rx) = start("stty -echo; printf 'q\\033[6n'; IFS= read -r -d R reply; printf 'len=%d\\n' ${#reply}", small());
  let (out, _) = until_exit(&rx);
  assert!(out.ends_with("len=5\r\n"), "{out:?}");
  assert!(!out.contains("1;2R") && !job.tail.lock().unwrap().text().contains("1;2R"), "{out:?}");
}

#[test]
fn the_screen_shows_what_a_person_would_see_and_follows_a_resize() {
  let (job, rx) = start("printf '\\033[2J\\033[5;10Hhello\\033[1;1Htop'; read x; printf '\\033[2J\\033[1;1H'; stty size; read y", small());
  let s = screen_when(&job, |s| s.lines[4] == "         hello");
  assert_eq!((s.rows, s.cols, s.lines.len()), (24, 80, 24));
  assert_eq!(s.lines[0], "top");
  assert_eq!((s.cursor_row, s.cursor_col), (0, 3));
  let input = job.input.as_ref().unwrap();
  input.resize(PtySize { cols: 100, rows: 30 }).unwrap();
  input.write(b"\n").unwrap();
  let s = screen_when(&job, |s| s.lines[0] == "30 100");
  assert_eq!((s.rows, s.cols, s.lines.len()), (30, 100, 30));
  input.write(b"\n").unwrap();
  let (_, exit) = until_exit(&rx);
  assert_eq!(exit, ExitInfo::exited(0));
}

#[test]
fn a_job_whose_input_is_closed_still_has_its_output_and_screen() {
  let flag = std::env::temp_dir().join(format!("procward-pty-closed-{}", std::process::id()));
  let _ = std::fs::remove_file(&flag);
  let command = format!("printf 'ready\\n'; while [ ! -e '{}' ]; do sleep 0.02; done; printf '\\033[6n\\033[cafter\\n'", flag.display());
  let (mut job, rx) = start(&command, small());
  screen_when(&job, |s| s.lines[0] == "ready");
  // The host lets go of the input: the answers have nowhere to go.
  drop(job.input.take());
  std::fs::write(&flag, "").unwrap();
  let (out, exit) = until_exit(&rx);
  let _ = std::fs::remove_file(&flag);
  assert_eq!(exit, ExitInfo::exited(0));
  assert!(out.ends_with("after\r\n"), "{out:?}");
  assert_eq!(screen_when(&job, |s| s.lines[1] == "after").cursor_row, 2);
}

#[test]
fn a_job_without_a_pty_has_no_terminal() {
  let (job, rx) = {
    let (tx, rx) = mpsc::channel();
    (spawn(SpawnOptions::new("printf '\\033[6n'"), Box::new(move |ev| drop(tx.send(ev)))).unwrap(), rx)
  };
  let (out, _) = until_exit(&rx);
  assert_eq!(out, "\x1b[6n");
  assert!(job.terminal.is_none());
}
