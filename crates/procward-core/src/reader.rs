//! Output capture that never hangs on an orphaned grandchild and never loses the end.
//!
//! The exit of the direct child is never taken from pipe EOF: a grandchild (`sleep 30 &`)
//! inherits the write end and can keep the pipe open for as long as it lives. Instead the
//! reader watches the child through a pidfd (or a short polling tick where pidfds do not
//! exist). Once the child has exited, the reader drains what is left until the pipe is
//! idle for `idle` or `max_wait` or `byte_cap` is reached, then publishes the exit. Output
//! that arrives later (from a grandchild still holding the pipe) is delivered as late
//! output; the grandchild is neither waited for nor killed (only a kill kills).

use crate::job::{EventSink, Launched};
use crate::logfile::LogFollower;
use crate::status::ExitInfo;
use crate::utf8::Utf8Decoder;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

// Their home is `job`; re-exported where they were first published.
pub use crate::job::{DrainOptions, JobEvent};

const CHUNK: usize = 256 * 1024;
/// Polling tick for the direct child when no pidfd exists.
const EXIT_TICK: Duration = Duration::from_millis(20);
/// How often a durable job's log file is checked for growth.
const TAIL_TICK: Duration = Duration::from_millis(15);

fn timeout(d: Duration) -> PollTimeout {
  PollTimeout::try_from(d.as_millis().min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX)
}

fn reap(child: &mut Launched) -> Option<ExitInfo> {
  match child.try_wait() {
    Ok(Some(status)) => Some(ExitInfo::from_status(status)),
    Ok(None) => None,
    // ECHILD: someone else reaped it; the status is lost, but the process is gone.
    Err(_) => Some(ExitInfo { code: None, signal: None }),
  }
}

/// Polls `main` and, when given, `other` for readability; `(main ready, other ready)`, or
/// `None` when a signal interrupted the wait (poll again). A failed poll counts as `main`
/// ready, so the caller's read reports the error.
pub fn poll_ready(main: BorrowedFd, other: Option<BorrowedFd>, wait: PollTimeout) -> Option<(bool, bool)> {
  let mut fds = vec![PollFd::new(main, PollFlags::POLLIN)];
  if let Some(o) = other {
    fds.push(PollFd::new(o, PollFlags::POLLIN));
  }
  match poll(&mut fds, wait) {
    Ok(_) => {
      let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
      Some((ready(&fds[0]), fds.get(1).is_some_and(ready)))
    }
    Err(nix::errno::Errno::EINTR) => None,
    Err(_) => Some((true, false)),
  }
}

/// The pipe reader: runs on its own thread until EOF.
pub(crate) fn run_pipe(pipe: OwnedFd, mut child: Launched, pidfd: Option<OwnedFd>, drain: DrainOptions, mut sink: EventSink) {
  let mut file = File::from(pipe);
  let mut buf = vec![0u8; CHUNK];
  let mut decoder = Utf8Decoder::new();
  let mut exit: Option<ExitInfo> = None;
  let mut exit_at = Instant::now();
  let mut after_exit = 0usize;
  let mut eof = false;

  loop {
    let wait = match (exit.is_some(), pidfd.is_some()) {
      (true, _) => timeout(drain.idle.min(drain.max_wait.saturating_sub(exit_at.elapsed()))),
      (false, true) => PollTimeout::NONE,
      (false, false) => timeout(EXIT_TICK),
    };
    let Some((pipe_ready, child_ready)) =
      poll_ready(file.as_fd(), if exit.is_none() { pidfd.as_ref().map(|p| p.as_fd()) } else { None }, wait)
    else {
      continue;
    };

    if pipe_ready {
      match file.read(&mut buf) {
        Ok(0) => eof = true,
        Ok(n) => {
          let text = decoder.decode(&buf[..n]);
          if !text.is_empty() {
            sink(JobEvent::Output { text, late: false });
          }
          if exit.is_some() {
            after_exit += n;
          }
        }
        Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {}
        // EIO: a PTY master whose slave side has no holder left.
        Err(_) => eof = true,
      }
    }

    let mut just_exited = false;
    if exit.is_none() && (child_ready || pidfd.is_none() || eof) {
      exit =
        if eof { child.wait().ok().map(ExitInfo::from_status).or(Some(ExitInfo { code: None, signal: None })) } else { reap(&mut child) };
      exit_at = Instant::now();
      just_exited = exit.is_some();
    }

    if let Some(info) = exit {
      // Idle means a whole poll window passed after the exit with nothing to read.
      let idle = !pipe_ready && !just_exited;
      if eof || idle || after_exit >= drain.byte_cap || exit_at.elapsed() >= drain.max_wait {
        if eof {
          flush(&mut decoder, false, &mut sink);
        }
        sink(JobEvent::Exit(info));
        break;
      }
    }
  }

  if !eof {
    late_output(file, buf, decoder, sink);
  }
}

/// After the exit is published: keep reading until the last holder of the pipe closes it,
/// so a grandchild that writes never gets SIGPIPE from us.
fn late_output(mut file: File, mut buf: Vec<u8>, mut decoder: Utf8Decoder, mut sink: EventSink) {
  loop {
    // The descriptor may be non-blocking (a PTY master shared with the input side).
    let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
    if matches!(poll(&mut fds, PollTimeout::NONE), Err(e) if e != nix::errno::Errno::EINTR) {
      break;
    }
    match file.read(&mut buf) {
      Ok(0) => break,
      Ok(n) => {
        let text = decoder.decode(&buf[..n]);
        if !text.is_empty() {
          sink(JobEvent::Output { text, late: true });
        }
      }
      Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => continue,
      Err(_) => break,
    }
  }
  flush(&mut decoder, true, &mut sink);
}

/// The durable-job tailer: follows the log (across rotations) while the supervisor runs.
/// The job's end is published as soon as the supervisor has written the exit file, even
/// when the supervisor stays on because a grandchild still holds the job's output pipe;
/// output after that is late output. A supervisor that ended without an exit file (SIGKILL,
/// a full disk) gives an unknown end (no code, no signal), never its own status.
pub(crate) fn run_tail(log_path: PathBuf, exit_path: PathBuf, mut child: Launched, pidfd: Option<OwnedFd>, mut sink: EventSink) {
  let mut follower = LogFollower::new(&log_path);
  let mut buf = vec![0u8; CHUNK];
  let mut decoder = Utf8Decoder::new();
  let mut published = false;
  let mut pump = |late: bool, sink: &mut EventSink, decoder: &mut Utf8Decoder| {
    follower.read_new(&mut buf, &mut |bytes| {
      let text = decoder.decode(bytes);
      if !text.is_empty() {
        sink(JobEvent::Output { text, late });
      }
    });
  };
  loop {
    pump(published, &mut sink, &mut decoder);
    let gone = reap(&mut child);
    if !published {
      let recorded = std::fs::read_to_string(&exit_path).ok().and_then(|t| ExitInfo::from_json(&t));
      // Without an exit file the job's end is unknown: the supervisor's own status says
      // nothing about the job (SIGKILLed alone, it leaves the job running).
      if let Some(info) = recorded.or(gone.map(|_| ExitInfo { code: None, signal: None })) {
        pump(false, &mut sink, &mut decoder);
        if gone.is_some() {
          flush(&mut decoder, false, &mut sink);
        }
        sink(JobEvent::Exit(info));
        published = true;
      }
    }
    if gone.is_some() {
      pump(true, &mut sink, &mut decoder);
      flush(&mut decoder, true, &mut sink);
      return;
    }
    if let Some(p) = &pidfd {
      let mut fds = [PollFd::new(p.as_fd(), PollFlags::POLLIN)];
      let _ = poll(&mut fds, timeout(TAIL_TICK));
    } else {
      std::thread::sleep(TAIL_TICK);
    }
  }
}

/// Hands what the decoder still holds (a truncated character becomes U+FFFD) to the sink.
fn flush(decoder: &mut Utf8Decoder, late: bool, sink: &mut EventSink) {
  let rest = decoder.finish();
  if !rest.is_empty() {
    sink(JobEvent::Output { text: rest, late });
  }
}
