//! Std-only Rust floors for the output and spawn benchmarks (`bench/output.mjs`):
//!
//! - `floors read <command>`: spawns `/bin/bash -c <command>` with stdout on a pipe enlarged
//!   to 256 KiB (`F_SETPIPE_SZ`, as procward's reader does), reads it to EOF in 256 KiB
//!   chunks, waits; prints the elapsed nanoseconds and the bytes read.
//! - `floors splice <command>`: the same pipe, moved to `/dev/null` by `splice(2)` without
//!   copying into user space (the fastest a reader that does not look at the bytes can be).
//! - `floors exit <command>`: spawns `/bin/bash -c <command>` (which prints its clock in ns
//!   and execs away), then a blocking `waitpid`; prints now (ns since the epoch) minus
//!   the job's stamp.
//! - `floors spawn <jobs> <parallel>`: spawns and reaps `<jobs>` × `/bin/bash -c true`,
//!   `<parallel>` workers each running one after another; prints the elapsed nanoseconds.
//!
//! Linux only (`F_SETPIPE_SZ`, `splice`, `pipe2`): elsewhere it compiles to a `main` that says
//! so, so `cargo check --all-targets` passes for every target.
#![cfg_attr(not(target_os = "linux"), allow(unused))]

use std::fs::File;
use std::io::Read;
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn bash(command: &str) -> Command {
  let mut c = Command::new("/bin/bash");
  c.arg("-c").arg(command);
  c
}

/// Pipe size of procward's reader (`PIPE_SIZE` in `spawn.rs`), so the floor reads under the
/// same conditions.
const PIPE_BYTES: i32 = 256 * 1024;

/// Spawns `bash -c command` with stdout on a new pipe of [`PIPE_BYTES`]; returns the child and
/// the read end.
#[cfg(target_os = "linux")]
fn spawn_piped(command: &str) -> (std::process::Child, File) {
  let mut fds = [0; 2];
  assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0, "pipe2");
  let (read, write) = unsafe { (File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
  unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES) };
  let child = bash(command).stdout(Stdio::from(write)).spawn().expect("spawn");
  (child, read)
}

#[cfg(not(target_os = "linux"))]
fn main() {
  eprintln!("floors: Linux only (pipe2, F_SETPIPE_SZ, splice)");
  std::process::exit(64);
}

#[cfg(target_os = "linux")]
fn main() {
  let args: Vec<String> = std::env::args().skip(1).collect();
  match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
    ["read", command] => {
      let t = Instant::now();
      let (mut child, mut out) = spawn_piped(command);
      let mut buf = vec![0u8; PIPE_BYTES as usize];
      let mut total = 0usize;
      while let Ok(n) = out.read(&mut buf) {
        if n == 0 {
          break;
        }
        total += n;
      }
      child.wait().expect("wait");
      println!("{} {total}", t.elapsed().as_nanos());
    }
    ["splice", command] => {
      let t = Instant::now();
      let (mut child, out) = spawn_piped(command);
      let null = std::fs::OpenOptions::new().write(true).open("/dev/null").expect("/dev/null");
      let mut total = 0usize;
      loop {
        let n = unsafe {
          libc::splice(
            out.as_raw_fd(),
            std::ptr::null_mut(),
            null.as_raw_fd(),
            std::ptr::null_mut(),
            PIPE_BYTES as usize,
            libc::SPLICE_F_MOVE,
          )
        };
        if n <= 0 {
          break;
        }
        total += n as usize;
      }
      child.wait().expect("wait");
      println!("{} {total}", t.elapsed().as_nanos());
    }
    ["exit", command] => {
      let child = bash(command).stdout(Stdio::piped()).spawn().expect("spawn");
      let out = child.wait_with_output().expect("wait");
      let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_nanos();
      let stamp: u128 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("stamp");
      println!("{}", now.saturating_sub(stamp));
    }
    ["spawn", jobs, parallel] => {
      let (jobs, parallel): (usize, usize) = (jobs.parse().expect("jobs"), parallel.parse().expect("parallel"));
      let t = Instant::now();
      // `parallel` workers, each spawning and reaping one job after another.
      std::thread::scope(|scope| {
        for w in 0..parallel {
          scope.spawn(move || {
            for _ in (w..jobs).step_by(parallel) {
              bash("true").stdin(Stdio::null()).status().expect("spawn");
            }
          });
        }
      });
      println!("{}", t.elapsed().as_nanos());
    }
    _ => {
      eprintln!("usage: floors read <command> | splice <command> | exit <command> | spawn <jobs> <parallel>");
      std::process::exit(64);
    }
  }
}
