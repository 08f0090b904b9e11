//! The supervisor's one loop: copies the job's output into the log, reaps the job (and the
//! orphans it adopted as a subreaper) when SIGCHLD says so, and writes the exit file once
//! the output has settled after the job's end.

use crate::deadline::{kill_descendants, sooner, Deadline};
use crate::ended::End;
use crate::output::Output;
use crate::unix::{close_stdin, Args};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use procward_core::status::ExitInfo;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// Write end of the SIGCHLD self-pipe (-1 before it exists).
static CHILD_PIPE: AtomicI32 = AtomicI32::new(-1);

/// SIGCHLD: one byte into the self-pipe (write(2) is async-signal-safe; a full pipe already
/// says "a child changed state"). errno is kept for the code the signal interrupted, through
/// nix's `Errno` (the thread's errno lives at `__errno_location` on Linux, `__error` on macOS).
extern "C" fn child_changed(_: libc::c_int) {
  let saved = nix::errno::Errno::last_raw();
  let fd = CHILD_PIPE.load(Ordering::SeqCst);
  if fd >= 0 {
    unsafe { libc::write(fd, b"c".as_ptr().cast(), 1) };
  }
  nix::errno::Errno::set_raw(saved);
}

/// The read end of the SIGCHLD self-pipe, readable once a child may be reaped.
pub struct Children {
  read: File,
}

impl Children {
  /// Creates the self-pipe (close-on-exec, non-blocking) and installs the SIGCHLD handler.
  /// Must run before the job starts, so that no exit goes unnoticed.
  pub fn watch() -> std::io::Result<Self> {
    let (r, w) = procward_core::spawn::pipe_cloexec()?;
    for fd in [&r, &w] {
      nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK))?;
    }
    CHILD_PIPE.store(std::os::fd::IntoRawFd::into_raw_fd(w), Ordering::SeqCst);
    unsafe {
      let mut sa: libc::sigaction = std::mem::zeroed();
      sa.sa_sigaction = child_changed as *const () as libc::sighandler_t;
      sa.sa_flags = libc::SA_RESTART | libc::SA_NOCLDSTOP;
      libc::sigaction(libc::SIGCHLD, &sa, std::ptr::null_mut());
    }
    Ok(Children { read: File::from(r) })
  }

  /// Empties the self-pipe and reaps every child that ended; the job's end when it is one.
  fn reap(&mut self, job: libc::pid_t) -> Option<ExitInfo> {
    let mut buf = [0u8; 64];
    while matches!(self.read.read(&mut buf), Ok(n) if n > 0) {}
    let mut ended = None;
    loop {
      let mut status = 0;
      let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
      if pid <= 0 {
        return ended;
      }
      if pid == job {
        ended = Some(if libc::WIFSIGNALED(status) {
          ExitInfo::signalled(libc::WTERMSIG(status))
        } else {
          ExitInfo::exited(libc::WEXITSTATUS(status))
        });
      }
    }
  }
}

fn ready(fd: &PollFd) -> bool {
  fd.revents().is_some_and(|r| !r.is_empty())
}

/// Runs until the job has ended, its exit file is written and the last holder of the output
/// pipe has closed it. With a `deadline` that falls before the job's end, the job's tree is
/// killed (see `deadline`). Returns the supervisor's exit code: 0, or 70 when the exit file
/// could not be written because the session directory is gone.
pub fn run(args: &Args, job: libc::pid_t, pipe: OwnedFd, mut children: Children, mut out: Output, mut deadline: Option<Deadline>) -> i32 {
  let mut pipe = Some(File::from(pipe));
  let mut buf = vec![0u8; 256 * 1024];
  let mut end = End::default();
  loop {
    let due = deadline.as_ref().filter(|_| !end.known()).and_then(Deadline::left);
    let wait = match sooner(end.left(), due) {
      // Rounded up: a wake-up just before the deadline would spin until it.
      Some(left) => PollTimeout::try_from(left.as_millis().saturating_add(1).min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::ZERO),
      None => PollTimeout::NONE,
    };
    let (mut pipe_ready, mut child_ready) = (false, false);
    {
      let mut fds = vec![PollFd::new(children.read.as_fd(), PollFlags::POLLIN)];
      if let Some(p) = &pipe {
        fds.push(PollFd::new(p.as_fd(), PollFlags::POLLIN));
      }
      match poll(&mut fds, wait) {
        Ok(_) => {
          child_ready = ready(&fds[0]);
          pipe_ready = fds.get(1).is_some_and(ready);
        }
        Err(nix::errno::Errno::EINTR) => {}
        // A failed poll: let the read below report the pipe's error.
        Err(_) => pipe_ready = pipe.is_some(),
      }
    }
    if let Some(d) = deadline.as_mut().filter(|_| !end.known()) {
      if d.due() {
        end.timed_out();
        kill_descendants(d.grace);
      }
    }
    if child_ready && !end.known() {
      if let Some(info) = children.reap(job) {
        // The job's stdin closes with it (as a host's pipe does): a background reader of
        // the same stdin gets EOF instead of waiting for a writer that will never come.
        close_stdin(libc::SIGUSR1);
        end.ended(info);
      }
    } else if child_ready {
      // Orphans we adopted: reap them so they do not stay zombies.
      children.reap(job);
    }
    if let (true, Some(p)) = (pipe_ready, &mut pipe) {
      match p.read(&mut buf) {
        Ok(0) => pipe = None,
        Ok(n) => {
          out.write(&buf[..n]);
          end.read(n);
        }
        Err(e) if e.kind() == ErrorKind::Interrupted => {}
        Err(_) => pipe = None,
      }
    }
    if !end.settle(pipe.is_some(), &args.exit) {
      return 70;
    }
    if end.written() && pipe.is_none() {
      out.finish();
      return 0;
    }
  }
}
