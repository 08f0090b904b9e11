//! The floor for batched probes: a std-only loop reading `/proc/<pid>/stat` for each PID.
//! `probe_floor <rounds> <pid>...` prints the median nanoseconds of one pass over all PIDs.

use std::io::Read;
use std::time::Instant;

fn main() {
  let mut args = std::env::args().skip(1);
  let rounds: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
  let pids: Vec<String> = args.collect();
  let paths: Vec<String> = pids.iter().map(|p| format!("/proc/{p}/stat")).collect();
  let mut buf = Vec::with_capacity(1024);
  let mut times = Vec::with_capacity(rounds);
  let mut alive = 0usize;
  for _ in 0..rounds {
    let t = Instant::now();
    for path in &paths {
      buf.clear();
      if let Ok(mut f) = std::fs::File::open(path) {
        if f.read_to_end(&mut buf).is_ok() {
          // The same parse as the real thing: fields after the last ')'.
          if let Some(close) = buf.iter().rposition(|&b| b == b')') {
            let rest = std::str::from_utf8(&buf[close + 1..]).unwrap_or("");
            if rest.split_ascii_whitespace().nth(19).is_some() {
              alive += 1;
            }
          }
        }
      }
    }
    times.push(t.elapsed().as_nanos());
  }
  times.sort();
  println!("{} {}", times[times.len() / 2], alive / rounds.max(1));
}
