//! Live jobs share one reactor thread (DESIGN sections 2 and 3): thousands of jobs at once
//! cost a bounded number of threads, and every job's output and exit still arrive exactly.
//! Its own test binary, so the thread count is this test's alone.
#![cfg(unix)]

use procward_core::reader::JobEvent;
use procward_core::spawn::{spawn, SpawnOptions};
use procward_core::status::ExitInfo;
use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `Threads:` of this process, from `/proc/self/status` (Linux).
fn threads() -> Option<usize> {
  let status = std::fs::read_to_string("/proc/self/status").ok()?;
  status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok())
}

/// Output and exits of numbered jobs, as they arrived.
#[derive(Default)]
struct Seen {
  out: HashMap<usize, String>,
  exits: HashMap<usize, ExitInfo>,
}

impl Seen {
  /// Takes events until `done`, noting the peak thread count; fails after two minutes.
  fn collect(&mut self, rx: &mpsc::Receiver<(usize, JobEvent)>, peak: &mut Option<usize>, done: impl Fn(&Seen) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done(self) {
      let (i, ev) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("events stopped");
      match ev {
        JobEvent::Output { text, .. } => self.out.entry(i).or_default().push_str(&text),
        JobEvent::Exit(info) => assert!(self.exits.insert(i, info).is_none(), "job {i} exited twice"),
      }
      *peak = (*peak).max(threads());
    }
  }
}

#[test]
fn two_thousand_live_jobs_share_a_few_threads_and_each_gets_its_output_and_exit() {
  // Each live job holds two descriptors here (output pipe, pidfd): raise the soft limit to
  // the hard one, as Node does at startup (many systems start at 1024).
  let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
  unsafe {
    libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
    lim.rlim_cur = lim.rlim_max;
    libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
  }
  assert!(lim.rlim_max >= 4200, "this test needs 4200 descriptors, the hard limit is {}", lim.rlim_max);
  const JOBS: usize = 2000;
  let dir = std::env::temp_dir().join(format!("procward-reactor-{}", std::process::id()));
  std::fs::create_dir_all(&dir).unwrap();
  let fifo = dir.join("go");
  nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
  // Held read-write, so a job's open of the FIFO never blocks and nobody sees EOF early:
  // every job waits on its own `read` until the test writes its line.
  let gate = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
  let before = threads();

  let (tx, rx) = mpsc::channel::<(usize, JobEvent)>();
  let mut jobs = Vec::with_capacity(JOBS);
  for i in 0..JOBS {
    let tx = tx.clone();
    let cmd = format!("echo start-{i}; read x < '{}'; echo end-{i}; exit {}", fifo.display(), i % 256);
    jobs.push(spawn(SpawnOptions::new(cmd), Box::new(move |ev| drop(tx.send((i, ev))))).unwrap());
  }
  drop(tx);

  let mut seen = Seen::default();
  let mut peak = threads();
  // Every job has started and none can end before the gate opens: all 2000 are live.
  seen.collect(&rx, &mut peak, |s| s.out.len() == JOBS && s.out.values().all(|t| t.starts_with("start-")));
  assert!(seen.exits.is_empty(), "a job ended before its gate opened");
  use std::io::Write;
  (&gate).write_all(&vec![b'\n'; JOBS]).unwrap();
  seen.collect(&rx, &mut peak, |s| s.exits.len() == JOBS);
  drop(gate);
  let Seen { out, exits } = seen;

  for i in 0..JOBS {
    assert_eq!(out[&i], format!("start-{i}\nend-{i}\n"), "output of job {i}");
    assert_eq!(exits[&i], ExitInfo::exited((i % 256) as i32), "exit of job {i}");
  }
  // The harness's main thread, one thread per test of this file, the reactor: nothing per
  // job (a thread per job made this 2000 and more).
  if let (Some(before), Some(peak)) = (before, peak) {
    eprintln!("{JOBS} live jobs: {before} threads before, {peak} at the peak");
    assert!(peak <= 8, "{peak} threads at the peak with {JOBS} live jobs ({before} before they started)");
  }
  let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_job_that_closes_its_output_and_runs_on_ends_with_its_own_status() {
  // Pipe EOF long before the exit: the end still comes from the process, not the pipe.
  let (tx, rx) = mpsc::channel();
  let _job = spawn(SpawnOptions::new("echo bye; exec >&- 2>&-; sleep 0.3; exit 7"), Box::new(move |ev| drop(tx.send(ev)))).unwrap();
  let mut out = String::new();
  loop {
    match rx.recv_timeout(Duration::from_secs(10)).expect("no exit within 10 s") {
      JobEvent::Output { text, .. } => out.push_str(&text),
      JobEvent::Exit(info) => {
        assert_eq!(info, ExitInfo::exited(7));
        break;
      }
    }
  }
  assert_eq!(out, "bye\n");
}
