//! Std-only Rust floors for the output and spawn benchmarks (`bench/output.mjs`):
//!
//! - `floors read <command>`: spawns `/bin/bash -c <command>` with stdout piped, reads it to
//!   EOF in 256 KiB chunks, waits; prints the elapsed nanoseconds.
//! - `floors exit <command>`: spawns `/bin/bash -c <command>` (which prints its clock in ns
//!   and execs away), then a blocking `waitpid`; prints now (ns since the epoch) minus
//!   the job's stamp.
//! - `floors spawn <jobs> <parallel>`: spawns and reaps `<jobs>` × `/bin/bash -c true`,
//!   `<parallel>` workers each running one after another; prints the elapsed nanoseconds.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn bash(command: &str) -> Command {
  let mut c = Command::new("/bin/bash");
  c.arg("-c").arg(command);
  c
}

fn main() {
  let args: Vec<String> = std::env::args().skip(1).collect();
  match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
    ["read", command] => {
      let t = Instant::now();
      let mut child = bash(command).stdout(Stdio::piped()).spawn().expect("spawn");
      let mut out = child.stdout.take().expect("stdout");
      let mut buf = vec![0u8; 256 * 1024];
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
      eprintln!("usage: floors read <command> | exit <command> | spawn <jobs> <parallel>");
      std::process::exit(64);
    }
  }
}
