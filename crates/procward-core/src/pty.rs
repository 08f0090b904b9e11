//! Pseudo-terminals for interactive jobs, and the job's input side (stdin pipe or PTY).
//!
//! A PTY job's stdin, stdout and stderr are the slave side; procward keeps the master, reads
//! the output from it and writes input to it. Input writes never block the caller: the
//! write end is non-blocking, and a job that does not read its input gets a clear error
//! instead of a stalled host.

use crate::error::{Error, Result};
use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::pty::{openpty, Winsize};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

// Its home is `job` (Windows shares it); re-exported where it was first published.
pub use crate::job::PtySize;

fn winsize(size: PtySize) -> Winsize {
  Winsize { ws_row: size.rows, ws_col: size.cols, ws_xpixel: 0, ws_ypixel: 0 }
}

fn cloexec(fd: &OwnedFd) -> std::io::Result<()> {
  fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
  Ok(())
}

/// Sets `O_NONBLOCK` on a descriptor (for the host's input side).
pub(crate) fn nonblocking(fd: &OwnedFd) -> std::io::Result<()> {
  let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
  fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
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

/// The host's side of a job's input.
#[derive(Debug)]
pub struct JobInput {
  fd: Option<OwnedFd>,
  kind: InputKind,
}

impl JobInput {
  pub(crate) fn new(fd: OwnedFd, kind: InputKind) -> Result<Self> {
    nonblocking(&fd).map_err(|e| Error::io("making the input non-blocking", e))?;
    Ok(JobInput { fd: Some(fd), kind })
  }

  pub fn kind(&self) -> InputKind {
    self.kind
  }

  fn fd(&self) -> Result<BorrowedFd<'_>> {
    self.fd.as_ref().map(|f| f.as_fd()).ok_or_else(|| Error::InvalidInput("stdin is closed".into()))
  }

  /// Writes all of `data` or fails: `EPIPE` when the job no longer reads (it exited),
  /// `EAGAIN` (with how much was written) when it is not reading its input right now.
  pub fn write(&self, data: &[u8]) -> Result<()> {
    let fd = self.fd()?;
    let mut written = 0;
    while written < data.len() {
      match nix::unistd::write(fd, &data[written..]) {
        Ok(n) => written += n,
        Err(nix::errno::Errno::EINTR) => continue,
        Err(nix::errno::Errno::EAGAIN) => {
          return Err(Error::io(
            format!("the job is not reading its input ({written} of {} bytes written)", data.len()),
            std::io::Error::from_raw_os_error(libc::EAGAIN),
          ))
        }
        Err(e) => return Err(Error::io("writing to the job's input", e.into())),
      }
    }
    Ok(())
  }

  /// Ends the input: closes the pipe, or sends the terminal's EOF character to a PTY.
  pub fn close(&mut self) -> Result<()> {
    match self.kind {
      InputKind::Pipe => {
        self.fd()?;
        self.fd = None;
        Ok(())
      }
      InputKind::Pty => self.write(b"\x04"),
    }
  }

  /// Resizes the terminal (PTY only).
  pub fn resize(&self, size: PtySize) -> Result<()> {
    if self.kind != InputKind::Pty {
      return Err(Error::InvalidInput("resize needs a PTY session".into()));
    }
    let ws = winsize(size);
    if unsafe { libc::ioctl(self.fd()?.as_raw_fd(), libc::TIOCSWINSZ as _, &ws) } < 0 {
      return Err(Error::io("resizing the terminal", std::io::Error::last_os_error()));
    }
    Ok(())
  }
}
