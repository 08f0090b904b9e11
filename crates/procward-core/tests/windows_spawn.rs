//! Windows spawn, capture, wait, stdin and ConPTY, with real Windows processes (run under
//! Wine by scripts/platforms/windows.sh).
#![cfg(windows)]

use procward_core::job::{JobEvent, SpawnOptions};
use procward_core::spawn::{spawn, Job};
use procward_core::status::ExitInfo;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

fn start(opts: SpawnOptions) -> (Job, Receiver<JobEvent>) {
  let (tx, rx) = channel();
  let job = spawn(opts, Box::new(move |ev| drop(tx.send(ev)))).expect("spawn");
  (job, rx)
}

/// Output until the exit, and the exit.
fn until_exit(rx: &Receiver<JobEvent>) -> (String, ExitInfo) {
  let mut out = String::new();
  loop {
    match rx.recv_timeout(Duration::from_secs(60)).expect("no exit within 60 s") {
      JobEvent::Output { text, .. } => out.push_str(&text),
      JobEvent::Exit(info) => return (out, info),
    }
  }
}

#[test]
fn echo_and_its_exit_code() {
  let (_job, rx) = start(SpawnOptions::new("echo hello & exit /b 3"));
  let (out, exit) = until_exit(&rx);
  assert_eq!(out.trim_end(), "hello");
  assert_eq!(exit, ExitInfo::exited(3));
}
