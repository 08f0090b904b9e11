//! Writes to a job's input (issue 16 item 1): everything reaches a job that reads, however
//! large, in order, without blocking the caller; a job that does not read fails the write
//! after its timeout with how many bytes got through; an exited job says so.
#![cfg(unix)]

use procward_core::job::{Input, PtySize, WriteError, WriteFailure};
use procward_core::reader::JobEvent;
use procward_core::spawn::{spawn, Job, SpawnOptions};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

type Outcome = Result<usize, WriteError>;

fn start(command: &str, input: Input) -> (Job, mpsc::Receiver<JobEvent>) {
  let mut opts = SpawnOptions::new(command);
  opts.input = input;
  let (tx, rx) = mpsc::channel();
  (spawn(opts, Box::new(move |ev| drop(tx.send(ev)))).unwrap(), rx)
}

/// Starts a write; the receiver gets its outcome.
fn write(job: &Job, data: Vec<u8>, timeout: Duration) -> mpsc::Receiver<Outcome> {
  let (tx, rx) = mpsc::channel();
  job.input.as_ref().unwrap().write_all(data, timeout, Box::new(move |r| drop(tx.send(r))));
  rx
}

fn outcome(rx: &mpsc::Receiver<Outcome>) -> Outcome {
  rx.recv_timeout(Duration::from_secs(60)).expect("no outcome within 60 s")
}

fn until_exit(rx: &mpsc::Receiver<JobEvent>) {
  while !matches!(rx.recv_timeout(Duration::from_secs(30)).expect("no exit within 30 s"), JobEvent::Exit(_)) {}
}

fn temp(name: &str) -> PathBuf {
  let p = std::env::temp_dir().join(format!("procward-stdin-{name}-{}", std::process::id()));
  let _ = std::fs::remove_file(&p);
  p
}

/// `len` bytes of lines that say where they are.
fn numbered(len: usize, tag: &str) -> Vec<u8> {
  let mut out = Vec::with_capacity(len + 64);
  let mut i = 0;
  while out.len() < len {
    out.extend_from_slice(format!("{tag} line {i:08} of numbered input\n").as_bytes());
    i += 1;
  }
  out
}

/// Closes the job's input, waits for its end, and returns what it wrote to `file` (removed).
fn close_and_read(job: &mut Job, rx: &mpsc::Receiver<JobEvent>, file: &std::path::Path) -> Vec<u8> {
  job.input.as_mut().unwrap().close().unwrap();
  until_exit(rx);
  let got = std::fs::read(file).unwrap();
  let _ = std::fs::remove_file(file);
  got
}

#[test]
fn a_megabyte_reaches_cat_whole_and_the_caller_is_not_blocked() {
  let (file, gate) = (temp("mb"), temp("mb-gate"));
  // The job reads nothing before `gate` exists.
  let command = format!("while [ ! -e '{}' ]; do sleep 0.02; done; cat > '{}'", gate.display(), file.display());
  let (mut job, rx) = start(&command, Input::Pipe);
  let data = numbered(1 << 20, "mb");
  let done = write(&job, data.clone(), Duration::from_secs(30));
  // The call returned while most of the megabyte waits for the job (a pipe holds 64 KiB).
  assert!(matches!(done.try_recv(), Err(mpsc::TryRecvError::Empty)));
  std::fs::write(&gate, "").unwrap();
  assert_eq!(outcome(&done).unwrap(), data.len());
  assert_eq!(close_and_read(&mut job, &rx, &file), data);
  let _ = std::fs::remove_file(&gate);
}

#[test]
fn writes_queued_behind_a_slow_reader_keep_their_order_and_eof_comes_after_them() {
  let file = temp("order");
  // A reader that starts late and then reads slowly, a line at a time.
  let (mut job, rx) =
    start(&format!("sleep 0.3; while IFS= read -r l; do printf '%s\\n' \"$l\"; done > '{}'", file.display()), Input::Pipe);
  let parts: Vec<Vec<u8>> = (0..8).map(|k| numbered(40_000, &format!("part{k}"))).collect();
  let pending: Vec<_> = parts.iter().map(|p| write(&job, p.clone(), Duration::from_secs(30))).collect();
  // EOF asked for while the writes wait: it comes after all of them.
  job.input.as_mut().unwrap().close().unwrap();
  for (rx, p) in pending.iter().zip(&parts) {
    assert_eq!(outcome(rx).unwrap(), p.len());
  }
  until_exit(&rx);
  assert_eq!(std::fs::read(&file).unwrap(), parts.concat());
  let _ = std::fs::remove_file(&file);
}

#[test]
fn a_job_that_does_not_read_times_out_with_the_bytes_written_and_the_writes_behind_are_dropped() {
  let (job, _rx) = start("sleep 30", Input::Pipe);
  let first = write(&job, vec![b'x'; 1 << 20], Duration::from_millis(300));
  let second = write(&job, vec![b'y'; 10], Duration::from_secs(30));
  let e = outcome(&first).unwrap_err();
  assert!(matches!(e.failure, WriteFailure::TimedOut(t) if t == Duration::from_millis(300)), "{e:?}");
  // The pipe took what it holds, and no more.
  assert!(e.written > 0 && e.written < 1 << 20, "{e:?}");
  assert!(e.to_string().contains("not reading") && e.to_string().contains(&format!("{} bytes written", e.written)), "{e}");
  let e2 = outcome(&second).unwrap_err();
  assert!(matches!(e2.failure, WriteFailure::Dropped) && e2.written == 0, "{e2:?}");
  unsafe { libc::kill(-job.pid, libc::SIGKILL) };
}

#[test]
fn a_job_that_exits_while_a_write_waits_fails_it_as_exited_with_the_bytes_it_read() {
  // Reads some input, then exits without reading the rest.
  let (job, rx) = start("head -c 100000 > /dev/null", Input::Pipe);
  let e = outcome(&write(&job, vec![b'z'; 4 << 20], Duration::from_secs(30))).unwrap_err();
  assert!(matches!(e.failure, WriteFailure::Exited), "{e:?}");
  assert!(e.written >= 100_000 && e.written < 4 << 20, "{e:?}");
  until_exit(&rx);
  // After the end: at once, nothing written.
  let late = outcome(&write(&job, b"late".to_vec(), Duration::from_secs(30))).unwrap_err();
  assert!(matches!(late.failure, WriteFailure::Exited) && late.written == 0, "{late:?}");
}

#[test]
fn twenty_kilobytes_reach_a_pty_job_that_is_still_starting() {
  let file = temp("pty");
  let (mut job, rx) = start(&format!("sleep 0.3; stty -echo; cat > '{}'", file.display()), Input::Pty(PtySize { cols: 80, rows: 24 }));
  let data = numbered(20 * 1024, "pty");
  assert_eq!(outcome(&write(&job, data.clone(), Duration::from_secs(30))).unwrap(), data.len());
  // The terminal hands lines over as typed (CR LF would be ICRNL's; LF stays LF).
  assert_eq!(close_and_read(&mut job, &rx, &file), data);
}

#[test]
fn a_closed_input_refuses_writes_at_once() {
  let (mut job, rx) = start("cat > /dev/null", Input::Pipe);
  job.input.as_mut().unwrap().close().unwrap();
  let e = outcome(&write(&job, b"after".to_vec(), Duration::from_secs(30))).unwrap_err();
  assert!(matches!(e.failure, WriteFailure::Closed) && e.written == 0, "{e:?}");
  assert!(job.input.as_mut().unwrap().close().is_err());
  until_exit(&rx);
}
