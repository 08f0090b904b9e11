//! Pseudo-terminals for interactive jobs, and the job's input side (stdin pipe or PTY).
//!
//! A PTY job's stdin, stdout and stderr are the slave side; procward keeps the master, reads
//! the output from it and writes input to it. Input writes never block the caller: the
//! write end is non-blocking, what the job cannot take at once is finished by the core's
//! writer thread as the job reads (`writer`), and a job that does not read its input gets a
//! clear error once the write's timeout passes, instead of a stalled host.

use crate::error::{Error, Result};
use crate::job::{WriteDone, WriteError, WriteFailure, DEFAULT_WRITE_TIMEOUT};
use crate::terminal::{Answerer, SharedTerminal};
use crate::writer::Input;
use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::pty::{openpty, Winsize};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

// Its home is `job` (Windows shares it); re-exported where it was first published.
pub use crate::job::PtySize;

fn winsize(size: PtySize) -> Winsize {
  Winsize { ws_row: size.rows, ws_col: size.cols, ws_xpixel: 0, ws_ypixel: 0 }
}

fn cloexec(fd: &OwnedFd) -> std::io::Result<()> {
  fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
  Ok(())
}

/// Opens a PTY pair of the given size; both ends close-on-exec. Returns `(master, slave)`.
pub fn open(size: PtySize) -> Result<(OwnedFd, OwnedFd)> {
  let pty = openpty(&winsize(size), None).map_err(|e| Error::io("opening a pseudo-terminal", e.into()))?;
  cloexec(&pty.master).and_then(|_| cloexec(&pty.slave)).map_err(|e| Error::io("setting close-on-exec on the PTY", e))?;
  Ok((pty.master, pty.slave))
}

/// Makes the slave (already on fd 0) the controlling terminal of the new session. Runs in
/// the child between fork and exec: async-signal-safe calls only.
#[cfg(not(target_os = "linux"))]
pub(crate) fn take_controlling_terminal() -> std::io::Result<()> {
  if unsafe { libc::ioctl(0, libc::TIOCSCTTY as _, 0) } < 0 {
    return Err(std::io::Error::last_os_error());
  }
  Ok(())
}

/// The kind of input a job has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
  /// A pipe to the job's stdin; closing it is EOF.
  Pipe,
  /// The PTY master; EOF is the terminal's EOF character (Ctrl-D).
  Pty,
}

/// The host's side of a job's input. Dropping it ends the input (waiting writes fail with
/// [`WriteFailure::Closed`](crate::job::WriteFailure::Closed)).
#[derive(Debug)]
pub struct JobInput {
  input: Arc<Input>,
  kind: InputKind,
  /// A PTY's line holds characters not sent yet: the last write did not end with a line
  /// break (so its end of input takes two EOF characters, see [`JobInput::close`]).
  line_open: std::sync::atomic::AtomicBool,
  /// A PTY's emulator, resized with it (see `terminal`).
  terminal: Option<SharedTerminal>,
}

impl std::fmt::Debug for Input {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str("Input")
  }
}

impl JobInput {
  pub(crate) fn new(fd: OwnedFd, kind: InputKind) -> Result<Self> {
    crate::unixpipe::nonblocking(&fd).map_err(|e| Error::io("making the input non-blocking", e))?;
    Ok(JobInput { input: Input::new(fd), kind, terminal: None, line_open: std::sync::atomic::AtomicBool::new(false) })
  }

  /// The emulator that follows this PTY's size from now on.
  pub(crate) fn attach_terminal(&mut self, terminal: SharedTerminal) {
    self.terminal = Some(terminal);
  }

  /// Writes a terminal's answers to this input, after the writes before them, without
  /// keeping the input open: once the host released it, they fail as `Closed`.
  pub(crate) fn answerer(&self) -> Answerer {
    let input = Arc::downgrade(&self.input);
    Box::new(move |data, done| match input.upgrade() {
      Some(input) => input.write(data, DEFAULT_WRITE_TIMEOUT, done),
      None => done(Err(WriteError { written: 0, failure: WriteFailure::Closed })),
    })
  }

  pub fn kind(&self) -> InputKind {
    self.kind
  }

  /// Writes all of `data` after every earlier write, never blocking the caller: what the
  /// pipe or terminal takes now is written now, the rest by the core's writer thread as the
  /// job reads (see `writer`). `done` gets `Ok(data.len())`, or a
  /// [`WriteError`](crate::job::WriteError) with how many bytes got through: `Exited`
  /// (`EPIPE`, or `EIO` from a terminal), `TimedOut` once the job took none of the input's
  /// bytes for `timeout` (the writes queued behind it are `Dropped`), `Closed` after
  /// [`JobInput::close`] or when the input is dropped.
  pub fn write_all(&self, data: Vec<u8>, timeout: Duration, done: WriteDone) {
    if let Some(&last) = data.last() {
      self.line_open.store(!matches!(last, b'\n' | b'\r' | 0x04), std::sync::atomic::Ordering::Relaxed);
    }
    self.input.write(data, timeout, done)
  }

  /// Writes all of `data` as [`JobInput::write_all`] does with the default timeout (30 s),
  /// blocking until it is written. Errors: `Io` with `EPIPE` when the job no longer reads,
  /// `ETIMEDOUT` when it does not read, the message saying how many bytes were written;
  /// `InvalidInput` once stdin is closed. Never call it from a [`WriteDone`].
  pub fn write(&self, data: &[u8]) -> Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    self.write_all(data.to_vec(), DEFAULT_WRITE_TIMEOUT, Box::new(move |r| drop(tx.send(r))));
    match rx.recv() {
      Ok(Ok(_)) => Ok(()),
      Ok(Err(e)) => Err(e.into()),
      Err(_) => Err(Error::io("writing to the job's input", std::io::ErrorKind::BrokenPipe.into())),
    }
  }

  /// Ends the input: closes the pipe (after the writes that wait), or, on a PTY in
  /// canonical mode, sends the end of input as the terminal defines it (its `VEOF`
  /// character, Ctrl-D by default; twice when the line holds characters not sent yet, since
  /// the first only sends them), after the writes that wait too; the terminal stays open (its
  /// job is not hung up), and later writes fail as the input is closed. Errors:
  /// `InvalidInput` when the input is closed already; `NotPossible` (`ENOTSUP`) for a
  /// terminal in raw mode (`ICANON` off: no end of input there) or with `VEOF` disabled,
  /// and nothing is sent or changed.
  pub fn close(&mut self) -> Result<()> {
    let closed = || Error::InvalidInput("stdin is closed".into());
    match self.kind {
      InputKind::Pipe => self.input.close().then_some(()).ok_or_else(closed),
      InputKind::Pty => {
        let eof = self.eof_char()?;
        let n = if self.line_open.load(std::sync::atomic::Ordering::Relaxed) { 2 } else { 1 };
        let (tx, rx) = std::sync::mpsc::channel();
        self.write_all(vec![eof; n], DEFAULT_WRITE_TIMEOUT, Box::new(move |r| drop(tx.send(r))));
        // Refused at once when closed; otherwise it is queued, and ends on its own.
        let sent = match rx.try_recv() {
          Ok(Err(WriteError { failure: WriteFailure::Closed, .. })) => Err(closed()),
          Ok(Err(e)) => Err(e.into()),
          _ => Ok(()),
        };
        self.input.end();
        sent
      }
    }
  }

  /// The terminal's foreground process group (`tcgetpgrp` on the master: the group a
  /// terminal's Ctrl-C reaches), for a PTY; `None` for a pipe, a closed input or when the
  /// terminal has none.
  pub fn foreground_group(&self) -> Option<i32> {
    if self.kind != InputKind::Pty {
      return None;
    }
    // SAFETY: tcgetpgrp only reads the terminal's state through a descriptor we hold.
    self.input.with_fd(|fd| Ok(unsafe { libc::tcgetpgrp(fd.as_raw_fd()) })).ok().filter(|&g| g > 0)
  }

  /// The terminal's end-of-input character (`VEOF`), when its line discipline has one.
  fn eof_char(&self) -> Result<u8> {
    let termios =
      self.input.with_fd(|fd| nix::sys::termios::tcgetattr(fd).map_err(std::io::Error::from)).map_err(|e| match e.raw_os_error() {
        Some(libc::EBADF) => Error::InvalidInput("stdin is closed".into()),
        _ => Error::io("reading the terminal's settings", e),
      })?;
    if !termios.local_flags.contains(nix::sys::termios::LocalFlags::ICANON) {
      return Err(Error::NotPossible(
        "the terminal is in raw mode (the program reads keys, not lines): it has no end of input; send the program's own quit keys with write instead; nothing was sent".into(),
      ));
    }
    match termios.control_chars[nix::sys::termios::SpecialCharacterIndices::VEOF as usize] {
      0 => Err(Error::NotPossible("the terminal's end-of-input character (VEOF) is disabled; nothing was sent".into())),
      c => Ok(c),
    }
  }

  /// Resizes the terminal (PTY only), and its emulator with it (`TIOCSWINSZ`: the job gets
  /// `SIGWINCH`).
  pub fn resize(&self, size: PtySize) -> Result<()> {
    if self.kind != InputKind::Pty {
      return Err(Error::InvalidInput("resize needs a PTY session".into()));
    }
    let ws = winsize(size);
    self
      .input
      .with_fd(|fd| match unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ as _, &ws) } {
        r if r < 0 => Err(std::io::Error::last_os_error()),
        _ => Ok(()),
      })
      .map_err(|e| match e.raw_os_error() {
        Some(libc::EBADF) => Error::InvalidInput("stdin is closed".into()),
        _ => Error::io("resizing the terminal", e),
      })?;
    if let Some(t) = &self.terminal {
      t.resize(size);
    }
    Ok(())
  }
}

impl Drop for JobInput {
  fn drop(&mut self) {
    self.input.release();
  }
}
