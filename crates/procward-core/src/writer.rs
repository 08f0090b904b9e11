//! The core's writer: one thread finishes every write to a job's input (stdin pipe or PTY
//! master) that the job could not take at once.
//!
//! A write goes to the descriptor at once, on the caller's thread, as far as the kernel's
//! buffer takes it (a pipe holds 64 KiB, a terminal a few KiB): most writes end there. What
//! is left waits in the input's queue, in order, and this thread writes it as the job reads:
//! it waits with `poll(2)` for the descriptors of every input with bytes waiting, and tries
//! again on a short tick too (a terminal's master does not always report room as the job
//! reads). The caller is told through its [`WriteDone`], so the JS thread never blocks.
//!
//! Rules:
//! - writes reach the job in the order they were made: one queue per input, and a write is
//!   tried on the caller's thread only when nothing waits before it;
//! - a write fails with [`WriteFailure::TimedOut`] once the job has taken none of the
//!   input's bytes for its timeout (counted from the write, or from the last byte taken,
//!   whichever is later): a job that reads slowly is waited for as long as it reads. The
//!   writes queued behind it fail with [`WriteFailure::Dropped`] and nothing of them is
//!   sent, so what the job got is a prefix of what was written;
//! - `EPIPE` (or `EIO` from a terminal) fails every waiting write with
//!   [`WriteFailure::Exited`], each with the bytes it got through;
//! - while an input is followed here, only this thread closes its descriptor (a pipe's EOF
//!   asked for while writes wait comes after them; a released input fails what waits with
//!   [`WriteFailure::Closed`]), so a descriptor is never closed under a `poll`.

use crate::job::{WriteDone, WriteError, WriteFailure};
use nix::errno::Errno;
use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often waiting writes are tried without an event (see the module docs).
const TICK: Duration = Duration::from_millis(50);

/// One write waiting in an input's queue.
struct Pending {
  data: Vec<u8>,
  written: usize,
  since: Instant,
  timeout: Duration,
  done: WriteDone,
}

/// An outcome to hand to a write's [`WriteDone`] once the input's lock is released.
type Finished = (WriteDone, Result<usize, WriteError>);

struct State {
  fd: Option<OwnedFd>,
  queue: VecDeque<Pending>,
  /// Close the descriptor once the queue is empty (a pipe's EOF asked for while writes wait).
  close_when_drained: bool,
  /// The host let go of the input: what waits fails, and the descriptor closes.
  released: bool,
  /// No write is taken any more, though the descriptor stays open (a terminal's end of
  /// input was sent: closing its master would hang the job up).
  ended: bool,
  /// Followed by the writer thread (which alone closes the descriptor meanwhile).
  followed: bool,
  /// When the job last took a byte.
  progress_at: Instant,
  /// No event is awaited from the descriptor before this (it reported room the write could
  /// not use); the tick tries it meanwhile.
  quiet_until: Option<Instant>,
}

/// A job's input as the writer sees it: the descriptor (non-blocking) and its queue.
pub(crate) struct Input {
  state: Mutex<State>,
}

impl Input {
  pub fn new(fd: OwnedFd) -> Arc<Self> {
    Arc::new(Input {
      state: Mutex::new(State {
        fd: Some(fd),
        queue: VecDeque::new(),
        close_when_drained: false,
        released: false,
        ended: false,
        followed: false,
        progress_at: Instant::now(),
        quiet_until: None,
      }),
    })
  }

  fn lock(&self) -> MutexGuard<'_, State> {
    self.state.lock().unwrap_or_else(|p| p.into_inner())
  }

  /// Writes `data` after every write made before it: at once as far as the descriptor
  /// takes it, the rest from the writer thread. `done` gets the outcome, on this thread when
  /// the write ends here.
  pub fn write(self: &Arc<Self>, data: Vec<u8>, timeout: Duration, done: WriteDone) {
    let mut s = self.lock();
    if s.fd.is_none() || s.close_when_drained || s.released || s.ended {
      drop(s);
      return done(Err(WriteError { written: 0, failure: WriteFailure::Closed }));
    }
    let now = Instant::now();
    let idle = s.queue.is_empty();
    s.queue.push_back(Pending { data, written: 0, since: now, timeout, done });
    let mut finished = Vec::new();
    if idle {
      s.pump(now, &mut finished);
    }
    let hand_over = !s.queue.is_empty() && !s.followed;
    if hand_over {
      s.followed = true;
    }
    drop(s);
    if hand_over {
      if let Err(e) = follow(self.clone()) {
        let mut s = self.lock();
        s.followed = false;
        s.fail_all(|| WriteFailure::Io(std::io::Error::new(e.kind(), format!("starting the writer thread: {e}"))), &mut finished);
      }
    }
    for (done, result) in finished {
      done(result);
    }
  }

  /// Ends a pipe's input: closes the descriptor now, or after the writes that wait.
  /// `false` when it was closed already.
  pub fn close(&self) -> bool {
    let mut s = self.lock();
    if s.fd.is_none() || s.close_when_drained || s.released {
      return false;
    }
    if s.followed {
      s.close_when_drained = true;
      drop(s);
      wake();
    } else {
      s.fd = None;
    }
    true
  }

  /// Takes no write from now on (they fail as [`WriteFailure::Closed`]); those made before
  /// still go through, and the descriptor stays open. `false` when the input was closed or
  /// ended already.
  pub fn end(&self) -> bool {
    let mut s = self.lock();
    if s.fd.is_none() || s.close_when_drained || s.released || s.ended {
      return false;
    }
    s.ended = true;
    true
  }

  /// The host lets go: waiting writes fail with [`WriteFailure::Closed`], the descriptor closes.
  pub fn release(&self) {
    let mut s = self.lock();
    s.released = true;
    if s.followed {
      drop(s);
      wake();
    } else {
      s.fd = None;
    }
  }

  /// Runs `f` on the descriptor while it is open. Errors: `EBADF` once closed.
  pub fn with_fd<T>(&self, f: impl FnOnce(BorrowedFd<'_>) -> std::io::Result<T>) -> std::io::Result<T> {
    let s = self.lock();
    match s.fd.as_ref() {
      Some(fd) if !s.released => f(fd.as_fd()),
      _ => Err(std::io::Error::from_raw_os_error(libc::EBADF)),
    }
  }
}

impl State {
  /// Writes from the queue until the descriptor is full or the queue empty; finished writes
  /// go to `finished`.
  fn pump(&mut self, now: Instant, finished: &mut Vec<Finished>) {
    let Some(fd) = self.fd.as_ref().map(|f| f.as_raw_fd()) else { return };
    while let Some(head) = self.queue.front_mut() {
      if head.written == head.data.len() {
        let p = self.queue.pop_front().expect("a head");
        finished.push((p.done, Ok(p.data.len())));
        continue;
      }
      // SAFETY: the descriptor is ours and open while the lock is held.
      let fd = unsafe { BorrowedFd::borrow_raw(fd) };
      match nix::unistd::write(fd, &head.data[head.written..]) {
        Ok(0) => return,
        Ok(n) => {
          head.written += n;
          self.progress_at = now;
          self.quiet_until = None;
        }
        Err(Errno::EINTR) => {}
        Err(Errno::EAGAIN) => return,
        Err(Errno::EPIPE | Errno::EIO) => return self.fail_all(|| WriteFailure::Exited, finished),
        Err(e) => {
          let p = self.queue.pop_front().expect("a head");
          finished.push((p.done, Err(WriteError { written: p.written, failure: WriteFailure::Io(e.into()) })));
          return self.drop_rest(finished);
        }
      }
    }
  }

  /// Fails every waiting write with `failure`, each with what it got through.
  fn fail_all(&mut self, failure: impl Fn() -> WriteFailure, finished: &mut Vec<Finished>) {
    for p in self.queue.drain(..) {
      finished.push((p.done, Err(WriteError { written: p.written, failure: failure() })));
    }
  }

  /// Fails the writes that wait behind a failed one: none of their bytes were sent.
  fn drop_rest(&mut self, finished: &mut Vec<Finished>) {
    self.fail_all(|| WriteFailure::Dropped, finished);
  }

  /// When the head write times out, if one waits.
  fn deadline(&self) -> Option<Instant> {
    self.queue.front().map(|h| h.since.max(self.progress_at) + h.timeout)
  }

  /// One turn of the writer thread: what the descriptor takes, the head's timeout, a close
  /// or release asked for. Returns whether the input is still to be followed.
  fn turn(&mut self, now: Instant, writable: bool, finished: &mut Vec<Finished>) -> bool {
    if self.released {
      self.fail_all(|| WriteFailure::Closed, finished);
      self.fd = None;
    } else {
      let before = self.progress_at;
      self.pump(now, finished);
      if writable && self.progress_at == before && !self.queue.is_empty() {
        // Room reported that the write could not use: leave it to the tick for a while.
        self.quiet_until = Some(now + TICK);
      }
      if self.deadline().is_some_and(|d| d <= now) {
        let p = self.queue.pop_front().expect("a head");
        finished.push((p.done, Err(WriteError { written: p.written, failure: WriteFailure::TimedOut(p.timeout) })));
        self.drop_rest(finished);
      }
      if self.queue.is_empty() && self.close_when_drained {
        self.fd = None;
      }
    }
    let keep = !self.queue.is_empty() && self.fd.is_some();
    if !keep {
      self.fail_all(|| WriteFailure::Closed, finished);
      self.followed = false;
    }
    keep
  }
}

/// The writer thread's handle: where inputs are handed to it, and its wake-up pipe.
struct Handle {
  tx: Sender<Arc<Input>>,
  wake: OwnedFd,
}

static WRITER: Mutex<Option<Handle>> = Mutex::new(None);

/// Hands `input` (with writes waiting) to the writer thread, starting it on first use.
fn follow(input: Arc<Input>) -> std::io::Result<()> {
  let mut slot = WRITER.lock().unwrap_or_else(|p| p.into_inner());
  if let Some(h) = slot.as_ref() {
    match h.tx.send(input) {
      Ok(()) => {
        poke(&h.wake);
        return Ok(());
      }
      Err(back) => return start(&mut slot, back.0),
    }
  }
  start(&mut slot, input)
}

fn start(slot: &mut Option<Handle>, input: Arc<Input>) -> std::io::Result<()> {
  let (wake_r, wake_w) = crate::unixpipe::pipe_cloexec()?;
  for fd in [&wake_r, &wake_w] {
    crate::unixpipe::nonblocking(fd)?;
  }
  let (tx, rx) = channel();
  let _ = tx.send(input);
  std::thread::Builder::new().name("procward-writer".into()).stack_size(128 * 1024).spawn(move || run(rx, wake_r))?;
  *slot = Some(Handle { tx, wake: wake_w });
  Ok(())
}

/// Wakes the writer thread (a close or release to act on).
fn wake() {
  if let Some(h) = WRITER.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
    poke(&h.wake);
  }
}

fn poke(fd: &OwnedFd) {
  // A full pipe is a wake-up already pending.
  let _ = nix::unistd::write(fd, &[1]);
}

fn run(rx: Receiver<Arc<Input>>, wake: OwnedFd) {
  let mut inputs: Vec<Arc<Input>> = Vec::new();
  let mut finished: Vec<Finished> = Vec::new();
  let mut drain = [0u8; 64];
  loop {
    // Nothing waits: sleep until an input is handed over (its sender pokes the pipe too).
    if inputs.is_empty() {
      match rx.recv() {
        Ok(input) => inputs.push(input),
        Err(_) => return,
      }
    }
    while let Ok(input) = rx.try_recv() {
      inputs.push(input);
    }
    // What to wait for: each input's descriptor (unless it is quiet), and the soonest of the
    // heads' timeouts and quiet ends.
    let now = Instant::now();
    let mut fds: Vec<(usize, RawFd)> = Vec::new();
    let mut until = now + TICK;
    for (i, input) in inputs.iter().enumerate() {
      let s = input.lock();
      if let Some(d) = s.deadline() {
        until = until.min(d);
      }
      match (s.fd.as_ref(), s.quiet_until) {
        (Some(_), Some(q)) if q > now => until = until.min(q),
        (Some(fd), _) => fds.push((i, fd.as_raw_fd())),
        (None, _) => {}
      }
    }
    let mut polled: Vec<libc::pollfd> = std::iter::once(wake.as_raw_fd())
      .chain(fds.iter().map(|&(_, fd)| fd))
      .enumerate()
      .map(|(k, fd)| libc::pollfd { fd, events: if k == 0 { libc::POLLIN } else { libc::POLLOUT }, revents: 0 })
      .collect();
    let ms = until.saturating_duration_since(now).as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `polled` is a valid array; the descriptors stay open (only this thread closes
    // the descriptors of the inputs it follows).
    let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, ms) };
    if n < 0 && Errno::last() != Errno::EINTR {
      // A poll that fails cannot wait: the tick still drives the writes.
      std::thread::sleep(TICK);
    }
    while matches!(nix::unistd::read(&wake, &mut drain), Ok(n) if n > 0) {}
    let now = Instant::now();
    let mut writable = vec![false; inputs.len()];
    for (&(i, _), p) in fds.iter().zip(&polled[1..]) {
      writable[i] = p.revents != 0;
    }
    let mut keep = Vec::with_capacity(inputs.len());
    for (input, w) in inputs.drain(..).zip(writable) {
      if input.lock().turn(now, w, &mut finished) {
        keep.push(input);
      }
      for (done, result) in finished.drain(..) {
        done(result);
      }
    }
    inputs = keep;
  }
}
