//! The supervisor's one loop: copies the job's output into the log, reaps the job (and the
//! orphans it adopted as a subreaper) when SIGCHLD says so, and writes the exit file once
//! the output has settled after the job's end.

use crate::files;
use crate::unix::{close_stdin, Args};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use procward_core::job::DrainOptions;
use procward_core::logfile::RotatingLog;
use procward_core::status::ExitInfo;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Instant;

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

/// Where the job's output goes: the log, created with the first byte of output or the
/// first note of the supervisor's own (a job that writes nothing has no log: readers take a
/// missing log for an empty one, and the disk is spared an inode per silent job).
pub struct Output<'a> {
  args: &'a Args,
  log: Option<RotatingLog>,
  /// The log could not be created: output is read and dropped, never retried per read.
  failed: bool,
  notes: Vec<String>,
}

impl<'a> Output<'a> {
  /// Creates the log at once when there are notes to keep.
  pub fn new(args: &'a Args, notes: Vec<String>) -> Self {
    let mut out = Output { args, log: None, failed: false, notes };
    if !out.notes.is_empty() {
      out.open_log();
    }
    out
  }

  /// Creates the log (0600, appended), makes it our stderr and writes the notes kept so far.
  /// A log that cannot be created leaves the output unkept (it is still read, so the job
  /// never blocks on a full pipe); the exit file is still written.
  pub fn open_log(&mut self) {
    if self.log.is_some() || self.failed {
      return;
    }
    match RotatingLog::open(&self.args.log, self.args.part_bytes) {
      Ok(mut log) => {
        log.capture_stderr();
        for note in self.notes.drain(..) {
          log.note(&note);
        }
        self.log = Some(log);
      }
      Err(e) => {
        self.failed = true;
        self.notes.push(format!("cannot open {}: {e}", self.args.log.display()));
      }
    }
  }

  fn write(&mut self, data: &[u8]) {
    self.open_log();
    if let Some(log) = &mut self.log {
      log.write(data);
    }
  }

  fn finish(&mut self) {
    if let Some(log) = &mut self.log {
      log.finish();
    }
  }
}

fn ready(fd: &PollFd) -> bool {
  fd.revents().is_some_and(|r| !r.is_empty())
}

/// The job's end and how the output has gone since.
struct Ended {
  info: ExitInfo,
  at_ms: u128,
  at: Instant,
  /// The last read after the end (or the end itself): the idle window starts here.
  quiet_since: Instant,
  after: usize,
}

/// Runs until the job has ended, its exit file is written and the last holder of the output
/// pipe has closed it. Returns the supervisor's exit code: 0, or 70 when the exit file could
/// not be written because the session directory is gone.
pub fn run(args: &Args, job: libc::pid_t, pipe: OwnedFd, mut children: Children, mut out: Output) -> i32 {
  let drain = DrainOptions::default();
  let mut pipe = Some(File::from(pipe));
  let mut buf = vec![0u8; 256 * 1024];
  let mut ended: Option<Ended> = None;
  let mut written = false;
  loop {
    let wait = match &ended {
      Some(e) if !written => {
        let left = drain.idle.saturating_sub(e.quiet_since.elapsed()).min(drain.max_wait.saturating_sub(e.at.elapsed()));
        PollTimeout::try_from(left.as_millis() as i32).unwrap_or(PollTimeout::ZERO)
      }
      _ => PollTimeout::NONE,
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
    if child_ready && ended.is_none() {
      if let Some(info) = children.reap(job) {
        // The job's stdin closes with it (as a host's pipe does): a background reader of
        // the same stdin gets EOF instead of waiting for a writer that will never come.
        close_stdin(libc::SIGUSR1);
        let now = Instant::now();
        let at_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        ended = Some(Ended { info, at_ms, at: now, quiet_since: now, after: 0 });
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
          if let (Some(e), false) = (&mut ended, written) {
            e.after += n;
            e.quiet_since = Instant::now();
          }
        }
        Err(e) if e.kind() == ErrorKind::Interrupted => {}
        Err(_) => pipe = None,
      }
    }
    if let (Some(e), false) = (&ended, written) {
      let settled =
        pipe.is_none() || e.quiet_since.elapsed() >= drain.idle || e.after >= drain.byte_cap || e.at.elapsed() >= drain.max_wait;
      if settled {
        if !files::write_exit(&args.exit, &e.info.to_json_at(e.at_ms)) {
          return 70;
        }
        written = true;
      }
    }
    if written && pipe.is_none() {
      out.finish();
      return 0;
    }
  }
}
