//! Output capture that never hangs on an orphaned grandchild and never loses the end.
//!
//! The exit of the direct child is never taken from pipe EOF: a grandchild (`sleep 30 &`)
//! inherits the write end and can keep the pipe open for as long as it lives. Instead the
//! reader watches the child through a pidfd (or a short polling tick where pidfds do not
//! exist). Once the child has exited, the reader drains what is left until the pipe is
//! idle for `idle` or `max_wait` or `byte_cap` is reached, then publishes the exit. Output
//! that arrives later (from a grandchild still holding the pipe) is delivered as late
//! output; the grandchild is neither waited for nor killed (only a kill kills).
//!
//! A job's capture is a state machine ([`PipeCapture`], [`LogCapture`]) that the
//! [`reactor`](crate::reactor) turns when its descriptors are ready or its deadline comes:
//! no thread per job.

use crate::job::{EventSink, Launched};
use crate::logfile::LogFollower;
use crate::reactor::{Followed, Next, Wake};
use crate::status::ExitInfo;
use crate::utf8::Utf8Decoder;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

// Their home is `job`; re-exported where they were first published.
pub use crate::job::{DrainOptions, JobEvent};

/// Polling tick for the direct child when no pidfd exists.
const EXIT_TICK: Duration = Duration::from_millis(20);
/// How often a durable job's log file is first checked for growth; the tick doubles while
/// the job stays quiet, up to [`IDLE_TICK`] or, when inotify watches its directory, to
/// [`WATCHED_TICK`], and is back to this on news.
const TAIL_TICK: Duration = Duration::from_millis(15);
/// The longest tick of a quiet durable job whose directory nothing watches (no inotify, or
/// without a pidfd for its supervisor, whose end only a tick finds).
const IDLE_TICK: Duration = Duration::from_millis(120);
/// The longest tick of a quiet durable job whose directory inotify watches: a safety net
/// only, its writes turn it at once.
const WATCHED_TICK: Duration = Duration::from_secs(5);

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

/// Reads of [`BUFFER`](crate::reactor::BUFFER) bytes a job may make in one turn, so that one job flooding its pipe
/// cannot hold the reactor from the others.
const READS_PER_TURN: usize = 4;

/// A pipe (or PTY) job followed by the reactor: its output, its exit, the drain between.
pub(crate) struct PipeCapture {
  /// Non-blocking: the reactor reads until `EAGAIN`.
  file: File,
  child: Launched,
  pidfd: Option<OwnedFd>,
  /// No pidfd (old kernels, macOS), one the poller refused, or one that fired before the
  /// process could be reaped: the exit is polled on every turn, and turns come every
  /// [`EXIT_TICK`].
  exit_by_tick: bool,
  /// The output descriptor could not be registered: it is read on every tick.
  output_by_tick: bool,
  drain: DrainOptions,
  sink: EventSink,
  decoder: Utf8Decoder,
  exit: Option<ExitInfo>,
  exit_at: Instant,
  /// The last read after the exit (or the exit itself): the idle window starts here.
  quiet_since: Instant,
  after_exit: usize,
  eof: bool,
  published: bool,
}

impl PipeCapture {
  /// `pipe` must be non-blocking (its only other holder, a PTY master's input side, is).
  pub(crate) fn new(pipe: OwnedFd, child: Launched, pidfd: Option<OwnedFd>, drain: DrainOptions, sink: EventSink) -> Self {
    let now = Instant::now();
    PipeCapture {
      file: File::from(pipe),
      child,
      exit_by_tick: pidfd.is_none(),
      pidfd,
      output_by_tick: false,
      drain,
      sink,
      decoder: Utf8Decoder::new(),
      exit: None,
      exit_at: now,
      quiet_since: now,
      after_exit: 0,
      eof: false,
      published: false,
    }
  }

  /// Reads what the pipe holds, up to [`READS_PER_TURN`] chunks; true when it may hold more.
  fn read(&mut self, buf: &mut [u8], now: Instant) -> bool {
    for _ in 0..READS_PER_TURN {
      match self.file.read(buf) {
        Ok(0) => {
          self.eof = true;
          return false;
        }
        Ok(n) => {
          let text = self.decoder.decode(&buf[..n]);
          if !text.is_empty() {
            (self.sink)(JobEvent::Output { text, late: self.published });
          }
          if self.exit.is_some() && !self.published {
            self.after_exit += n;
            self.quiet_since = now;
            if self.after_exit >= self.drain.byte_cap {
              return true;
            }
          }
        }
        Err(e) if e.kind() == ErrorKind::Interrupted => {}
        Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
        // EIO: a PTY master whose slave side has no holder left.
        Err(_) => {
          self.eof = true;
          return false;
        }
      }
    }
    true
  }
}

impl Followed for PipeCapture {
  fn output_fd(&self) -> Option<RawFd> {
    Some(self.file.as_raw_fd())
  }

  fn exit_fd(&self) -> Option<RawFd> {
    self.pidfd.as_ref().map(AsRawFd::as_raw_fd)
  }

  fn close_exit(&mut self) {
    self.pidfd = None;
  }

  fn unwatched(&mut self, exit: bool) {
    if exit {
      self.exit_by_tick = true;
    } else {
      self.output_by_tick = true;
    }
  }

  fn turn(&mut self, wake: Wake, buf: &mut [u8]) -> Next {
    let now = wake.now;
    let mut more = false;
    // On an exit, read first: what the child wrote before it exited comes before its end.
    if !self.eof && (wake.output || self.output_by_tick || (wake.exit && self.exit.is_none())) {
      more = self.read(buf, now);
    }
    let mut exit_done = false;
    // Never from pipe EOF alone: a job may close its output and go on running.
    if self.exit.is_none() && (wake.exit || self.exit_by_tick) {
      if let Some(info) = reap(&mut self.child) {
        self.exit = Some(info);
        (self.exit_at, self.quiet_since) = (now, now);
        exit_done = self.pidfd.is_some();
      } else if wake.exit {
        // A pidfd fires once (edge-triggered); one that fired too early (a thread group
        // whose leader ended first, on kernels before 6.9) leaves the tick to find the end.
        self.exit_by_tick = true;
        exit_done = true;
      }
    }

    if let (Some(info), false) = (self.exit, self.published) {
      // Idle: a whole window passed after the exit (or the last read since) with nothing read.
      let idle = !more && now >= self.quiet_since + self.drain.idle;
      if self.eof || idle || self.after_exit >= self.drain.byte_cap || now >= self.exit_at + self.drain.max_wait {
        if self.eof {
          flush(&mut self.decoder, false, &mut self.sink);
        }
        (self.sink)(JobEvent::Exit(info));
        self.published = true;
      }
    }
    if self.published && self.eof {
      // The last holder of the pipe closed it: what the decoder holds is late output.
      flush(&mut self.decoder, true, &mut self.sink);
      return Next::Done;
    }

    let mut at = None;
    let mut soonest = |t: Instant| at = Some(at.map_or(t, |a: Instant| a.min(t)));
    if self.exit.is_none() && self.exit_by_tick || self.output_by_tick && !self.eof {
      soonest(now + EXIT_TICK);
    }
    if self.exit.is_some() && !self.published {
      soonest((self.quiet_since + self.drain.idle).min(self.exit_at + self.drain.max_wait));
    }
    Next::Keep { more, at, exit_done }
  }
}

/// A durable job followed by the reactor: its log (across rotations) while the supervisor
/// runs. The job's end is published as soon as the supervisor has written the exit file,
/// even when the supervisor stays on because a grandchild still holds the job's output
/// pipe; output after that is late output. A supervisor that ended without an exit file
/// (SIGKILL, a full disk) gives an unknown end (no code, no signal), never its own status.
pub(crate) struct LogCapture {
  follower: LogFollower,
  exit_path: PathBuf,
  child: Launched,
  pidfd: Option<OwnedFd>,
  sink: EventSink,
  decoder: Utf8Decoder,
  published: bool,
  /// The session directory (the log's and the exit file's), watched by the reactor.
  dir: Option<PathBuf>,
  dir_watched: bool,
  /// The wait before the next look without news (see [`TAIL_TICK`]).
  tick: Duration,
}

impl LogCapture {
  pub(crate) fn new(log_path: PathBuf, exit_path: PathBuf, child: Launched, pidfd: Option<OwnedFd>, sink: EventSink) -> Self {
    let dir = log_path.parent().filter(|d| exit_path.parent() == Some(*d)).map(PathBuf::from);
    LogCapture {
      follower: LogFollower::new(&log_path),
      exit_path,
      child,
      pidfd,
      sink,
      decoder: Utf8Decoder::new(),
      published: false,
      dir,
      dir_watched: false,
      tick: TAIL_TICK,
    }
  }

  /// Hands what the log gained to the sink; true when it gained bytes.
  fn pump(&mut self, late: bool, buf: &mut [u8]) -> bool {
    let (decoder, sink) = (&mut self.decoder, &mut self.sink);
    let mut news = false;
    self.follower.read_new(buf, &mut |bytes| {
      news = true;
      let text = decoder.decode(bytes);
      if !text.is_empty() {
        sink(JobEvent::Output { text, late });
      }
    });
    news
  }
}

impl Followed for LogCapture {
  fn output_fd(&self) -> Option<RawFd> {
    None
  }

  fn exit_fd(&self) -> Option<RawFd> {
    self.pidfd.as_ref().map(AsRawFd::as_raw_fd)
  }

  fn close_exit(&mut self) {
    self.pidfd = None;
  }

  /// The log and the exit file are looked at on every tick anyway.
  fn unwatched(&mut self, _exit: bool) {}

  fn watch_dir(&self) -> Option<PathBuf> {
    self.dir.clone()
  }

  fn dir_watched(&mut self, watched: bool) {
    self.dir_watched = watched;
    self.tick = TAIL_TICK;
  }

  fn turn(&mut self, wake: Wake, buf: &mut [u8]) -> Next {
    let news = self.pump(self.published, buf);
    let gone = reap(&mut self.child);
    if !self.published {
      let recorded = std::fs::read_to_string(&self.exit_path).ok().and_then(|t| ExitInfo::from_json(&t));
      // Without an exit file the job's end is unknown: the supervisor's own status says
      // nothing about the job (SIGKILLed alone, it leaves the job running).
      if let Some(info) = recorded.or(gone.map(|_| ExitInfo { code: None, signal: None })) {
        self.pump(false, buf);
        if gone.is_some() {
          flush(&mut self.decoder, false, &mut self.sink);
        }
        (self.sink)(JobEvent::Exit(info));
        self.published = true;
      }
    }
    if gone.is_some() {
      self.pump(true, buf);
      flush(&mut self.decoder, true, &mut self.sink);
      return Next::Done;
    }
    // The log is a regular file (epoll cannot watch it): it is checked on a tick that
    // slows while nothing changes, and at once when inotify reports its directory changed.
    // A pidfd that fired without a reapable supervisor is closed; the tick finds the end.
    let longest = if self.dir_watched && self.pidfd.is_some() && !wake.exit { WATCHED_TICK } else { IDLE_TICK };
    self.tick = if news || wake.output { TAIL_TICK } else { (self.tick * 2).min(longest) };
    Next::Keep { more: false, at: Some(wake.now + self.tick), exit_done: wake.exit }
  }
}

/// Hands what the decoder still holds (a truncated character becomes U+FFFD) to the sink.
fn flush(decoder: &mut Utf8Decoder, late: bool, sink: &mut EventSink) {
  let rest = decoder.finish();
  if !rest.is_empty() {
    sink(JobEvent::Output { text: rest, late });
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use std::process::{Command, Stdio};
  use std::sync::mpsc;

  /// `sh -c cmd` writing stdout and stderr into one pipe; the read end is non-blocking.
  #[allow(clippy::zombie_processes)]
  fn start(cmd: &str) -> (OwnedFd, Launched) {
    // pipe + fcntl, not pipe2, which macOS lacks. A child another test forks between the
    // calls may inherit the write end; this test holds the pipe open on purpose anyway.
    let (r, w) = nix::unistd::pipe().unwrap();
    for fd in [&r, &w] {
      nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC)).unwrap();
    }
    nix::fcntl::fcntl(&r, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK)).unwrap();
    let w2 = w.try_clone().unwrap();
    let child =
      Command::new("/bin/sh").args(["-c", cmd]).stdin(Stdio::null()).stdout(Stdio::from(w)).stderr(Stdio::from(w2)).spawn().unwrap();
    // The write ends went to the child and closed here with `Command`'s copies. The
    // capture reaps the child (a `Child` does not wait when dropped).
    (r, Launched::new(child.id() as i32))
  }

  #[test]
  fn without_a_pidfd_the_exit_comes_from_the_tick_while_a_grandchild_holds_the_pipe() {
    let (pipe, child) = start("echo hi; sleep 30 & echo bg=$!; exit 3");
    let (tx, rx) = mpsc::channel();
    let sink: EventSink = Box::new(move |ev| drop(tx.send(ev)));
    let started = Instant::now();
    crate::reactor::follow(Box::new(PipeCapture::new(pipe, child, None, DrainOptions::default(), sink))).unwrap();
    let mut out = String::new();
    let exit = loop {
      match rx.recv_timeout(Duration::from_secs(10)).expect("no exit within 10 s") {
        JobEvent::Output { text, late } => {
          assert!(!late, "output before the exit is not late");
          out.push_str(&text);
        }
        JobEvent::Exit(info) => break info,
      }
    };
    assert_eq!(exit, ExitInfo::exited(3));
    assert!(started.elapsed() < Duration::from_secs(5), "the grandchild held the exit back: {:?}", started.elapsed());
    let bg: i32 = out.lines().nth(1).and_then(|l| l.strip_prefix("bg=")).and_then(|p| p.parse().ok()).expect(&out);
    assert!(out.starts_with("hi\n"), "{out:?}");
    // The grandchild is our test's own (unreaped by anyone but init): end it.
    unsafe { libc::kill(bg, libc::SIGKILL) };
    // Its end closes the pipe: the capture finishes (dropping its sink) without another event.
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Err(mpsc::RecvTimeoutError::Disconnected));
  }
}
