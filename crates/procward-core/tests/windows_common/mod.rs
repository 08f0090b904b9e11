//! What the Windows integration tests share: the hang bound, starting a job and reading it
//! to its end, and the roles (the test executable started again to play a process of a
//! test: each test file that uses them has a `child_role` test calling [`run_role`]).
//! Not every test file uses every item.
#![allow(dead_code)]

pub mod durable;

use procward_core::identity::identity;
use procward_core::job::{JobEvent, SpawnOptions};
use procward_core::spawn::{spawn, Job};
use procward_core::status::ExitInfo;
use procward_core::Identity;
use std::io::Write;
use std::os::windows::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::ptr::null_mut;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;
use windows_sys::Win32::System::Threading::DETACHED_PROCESS;

/// A generous bound that turns a hang into a failure (never a speed claim).
pub const HANG: Duration = Duration::from_secs(60);
/// The variable that makes the test executable play a role (see [`run_role`]).
pub const ROLE: &str = "PROCWARD_ATTACK_ROLE";

/// Starts `opts`, its events on a channel.
pub fn start(opts: SpawnOptions) -> (Job, Receiver<JobEvent>) {
  let (tx, rx) = channel();
  let job = spawn(opts, Box::new(move |ev| drop(tx.send(ev)))).expect("spawn");
  (job, rx)
}

/// Output until the exit, and the exit.
pub fn until_exit(rx: &Receiver<JobEvent>) -> (String, ExitInfo) {
  let mut out = String::new();
  loop {
    match rx.recv_timeout(HANG).expect("no exit within 60 s") {
      JobEvent::Output { text, .. } => out.push_str(&text),
      JobEvent::Exit(info) => return (out, info),
    }
  }
}

/// Runs `opts` to its end: every event in order, the exit last (bounded by [`HANG`]).
pub fn events(opts: SpawnOptions) -> Vec<JobEvent> {
  let (tx, rx) = channel();
  let _job = spawn(opts, Box::new(move |ev| drop(tx.send(ev)))).expect("spawn");
  let mut seen = Vec::new();
  while !matches!(seen.last(), Some(JobEvent::Exit(_))) {
    seen.push(rx.recv_timeout(HANG).expect("no exit within 60 s"));
  }
  seen
}

/// The text of `events` and the exit.
pub fn output_and_exit(events: &[JobEvent]) -> (String, ExitInfo) {
  let text = events.iter().filter_map(|e| if let JobEvent::Output { text, .. } = e { Some(text.as_str()) } else { None }).collect();
  let Some(JobEvent::Exit(info)) = events.last() else { unreachable!("events end with the exit") };
  (text, *info)
}

/// A process a test started; killed and reaped when the test ends, whatever happened.
pub struct Proc {
  pub child: Child,
  pub id: Identity,
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
pub fn role(name: &str, arg: &str) -> Proc {
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

/// The body of a role: the test executable run again with [`ROLE`] set. Without the
/// variable it returns at once.
pub fn run_role() {
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
