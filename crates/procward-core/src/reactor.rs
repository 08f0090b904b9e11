//! One thread follows every live job: the reactor.
//!
//! A thread per job costs a thread, a stack and a wake-up per job; at 10 000 jobs that is a
//! wall. Instead one thread, started with the first job, waits on one `mio::Poll` (epoll on
//! Linux, kqueue on macOS) for every job's output descriptor (pipe or PTY master) and its
//! pidfd (exit), and on a timer for the deadlines jobs ask for (the drain window after an
//! exit, the exit tick where no pidfd exists, a durable job's log tick). What to do with a
//! ready descriptor is the job's business ([`Followed`], implemented in `reader`); this
//! module only registers, waits and dispatches.
//!
//! A durable job's log and exit file are regular files, which epoll cannot watch. On Linux
//! the job's session directory is watched with inotify instead (one instance for all jobs,
//! in the same poll): a write, a create or a rename in it turns the job at once, so an idle
//! durable job costs no turns but a slow safety tick (a 15 ms tick per job kept the reactor
//! at 24% of a core with 1000 idle durable jobs). A directory inotify refuses
//! (`max_user_watches`, no inotify instance left) is looked at on the job's own tick.
//!
//! Rules that keep one job from hurting the others:
//! - descriptors are edge-triggered and a job reads a bounded amount per turn; a job that
//!   still has data is turned again after the others (no starvation under an output flood);
//! - a job that panics is dropped alone (its descriptors are closed), the loop goes on;
//! - sinks run on this thread: a sink that blocks (the binding's bounded event queue when
//!   JS is behind) delays every job, which is the back-pressure a flood needs, but a sink
//!   must never wait for anything that waits for the reactor.
//!
//! Descriptors are deregistered explicitly before they are closed: epoll keys a
//! registration by open file description, and a PTY master is shared with the job's input
//! side, so closing only our copy would leave the registration (and its events) alive.

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use std::collections::HashSet;
use std::os::fd::RawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

mod dirwatch;
use dirwatch::DirWatch;
#[cfg(any(target_os = "linux", target_os = "android"))]
use dirwatch::DIRS;

/// Bytes a job may read in one turn: the reactor's one shared buffer.
pub(crate) const BUFFER: usize = 256 * 1024;

/// Why a job is turned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wake {
  /// Its output descriptor reported readable (or may still hold data).
  pub output: bool,
  /// Its exit descriptor (pidfd) reported readable.
  pub exit: bool,
  /// The time of this turn (deadlines compare against it).
  pub now: Instant,
}

/// What a job wants after a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
  /// Keep following it. `more`: its output may hold more data (turn it again soon);
  /// `at`: turn it at this time even without an event; `exit_done`: its exit descriptor is
  /// no longer needed (the reactor deregisters it, then calls [`Followed::close_exit`]).
  Keep { more: bool, at: Option<Instant>, exit_done: bool },
  /// Finished: the reactor deregisters its descriptors and drops it.
  Done,
}

/// A live job as the reactor sees it.
pub(crate) trait Followed: Send {
  /// The output descriptor to watch, if any (constant for the job's life).
  fn output_fd(&self) -> Option<RawFd>;
  /// The exit descriptor (pidfd) to watch, if any, until [`Followed::close_exit`].
  fn exit_fd(&self) -> Option<RawFd>;
  /// Handles a wake-up; `buf` is scratch space for reads.
  fn turn(&mut self, wake: Wake, buf: &mut [u8]) -> Next;
  /// Closes the exit descriptor (already deregistered).
  fn close_exit(&mut self);
  /// Called once, before the first turn, for a descriptor the poller refused (a kqueue
  /// that refuses a terminal, epoll's `max_user_watches` reached): `exit` tells which. The
  /// job must then look at it on a deadline of its own.
  fn unwatched(&mut self, exit: bool);
  /// A directory whose changes (files written, created, renamed into it) should turn the
  /// job, if any (constant for the job's life).
  fn watch_dir(&self) -> Option<PathBuf> {
    None
  }
  /// Called before the first turn of a job with a [`Followed::watch_dir`], and again with
  /// `false` if the watch ends before the job (the directory was removed): whether changes
  /// in it turn the job. Without a watch the job must look on a deadline of its own.
  fn dir_watched(&mut self, _watched: bool) {}
}

/// The handle jobs are handed to.
struct Handle {
  tx: Sender<Box<dyn Followed>>,
  waker: Arc<Waker>,
}

static REACTOR: Mutex<Option<Handle>> = Mutex::new(None);

/// Hands `job` to the reactor (starting it on first use). Errors: the reactor could not be
/// created (`EMFILE` for its epoll or waker, `EAGAIN` for its thread); `job` is dropped then.
pub(crate) fn follow(job: Box<dyn Followed>) -> std::io::Result<()> {
  let mut slot = REACTOR.lock().unwrap_or_else(|e| e.into_inner());
  if let Some(h) = slot.as_ref() {
    match h.tx.send(job) {
      Ok(()) => return h.waker.wake(),
      // The loop is gone (it only ends on a failed poll): start a new one for this job.
      Err(back) => return start(&mut slot, back.0),
    }
  }
  start(&mut slot, job)
}

fn start(slot: &mut Option<Handle>, job: Box<dyn Followed>) -> std::io::Result<()> {
  let poll = Poll::new()?;
  let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
  let (tx, rx) = channel();
  let _ = tx.send(job);
  std::thread::Builder::new().name("procward-reactor".into()).stack_size(STACK).spawn(move || run(poll, rx))?;
  *slot = Some(Handle { tx, waker });
  Ok(())
}

/// Stack of the reactor thread (its buffer lives on the heap).
const STACK: usize = 256 * 1024;
const WAKER: Token = Token(usize::MAX);
/// Events taken from the kernel per wait.
const EVENTS: usize = 1024;

/// A job in the table, and what the reactor knows about its descriptors.
struct Entry {
  job: Box<dyn Followed>,
  output: Option<RawFd>,
  exit: Option<RawFd>,
  at: Option<Instant>,
  more: bool,
  /// Its directory's watch, if it has one.
  #[cfg(any(target_os = "linux", target_os = "android"))]
  dir: Option<nix::sys::inotify::WatchDescriptor>,
  /// Its directory did not exist yet when last tried: it is tried again on each turn (a
  /// supervisor creates its job's directory after the job is handed here).
  #[cfg(any(target_os = "linux", target_os = "android"))]
  dir_missing: bool,
}

/// Tokens: slot * 2 for the output descriptor, slot * 2 + 1 for the exit descriptor.
fn token(slot: usize, exit: bool) -> Token {
  Token(slot * 2 + usize::from(exit))
}

struct Table {
  entries: Vec<Option<Entry>>,
  free: Vec<usize>,
  /// Slots with a deadline or more data: the only ones the timer looks at.
  timed: HashSet<usize>,
  #[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
  dirs: DirWatch,
}

impl Table {
  fn add(&mut self, registry: &Registry, mut job: Box<dyn Followed>) {
    let slot = self.free.pop().unwrap_or_else(|| {
      self.entries.push(None);
      self.entries.len() - 1
    });
    let watch = |job: &mut dyn Followed, exit: bool| {
      let fd = if exit { job.exit_fd() } else { job.output_fd() }?;
      if registry.register(&mut SourceFd(&fd), token(slot, exit), Interest::READABLE).is_ok() {
        return Some(fd);
      }
      job.unwatched(exit);
      None
    };
    let output = watch(job.as_mut(), false);
    let exit = watch(job.as_mut(), true);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let mut dir_missing = false;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let dir = job.watch_dir().and_then(|d| self.dirs.add(registry, &d, slot, &mut dir_missing));
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let watched = dir.is_some();
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let watched = false;
    if job.watch_dir().is_some() {
      job.dir_watched(watched);
    }
    // First turn at once: a descriptor that was ready before its registration (or a file
    // written before its directory's watch) is reported too, but a refused one is not.
    self.entries[slot] = Some(Entry {
      job,
      output,
      exit,
      at: Some(Instant::now()),
      more: false,
      #[cfg(any(target_os = "linux", target_os = "android"))]
      dir,
      #[cfg(any(target_os = "linux", target_os = "android"))]
      dir_missing,
    });
    self.timed.insert(slot);
  }

  fn remove(&mut self, registry: &Registry, slot: usize) {
    if let Some(e) = self.entries[slot].take() {
      for fd in [e.output, e.exit].into_iter().flatten() {
        let _ = registry.deregister(&mut SourceFd(&fd));
      }
      #[cfg(any(target_os = "linux", target_os = "android"))]
      if let Some(wd) = e.dir {
        self.dirs.remove(wd);
      }
      self.free.push(slot);
      self.timed.remove(&slot);
      // Dropping the job closes its descriptors and its sink, after the deregistration.
      drop(e);
    }
  }

  fn turn(&mut self, registry: &Registry, slot: usize, output: bool, exit: bool, now: Instant, buf: &mut [u8]) {
    let Some(e) = self.entries[slot].as_mut() else { return };
    let wake = Wake { output: output || e.more, exit, now };
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if e.dir_missing {
      if let Some(dir) = e.job.watch_dir() {
        e.dir = self.dirs.add(registry, &dir, slot, &mut e.dir_missing);
        if e.dir.is_some() {
          e.job.dir_watched(true);
        }
      }
    }
    let next = catch_unwind(AssertUnwindSafe(|| e.job.turn(wake, buf))).unwrap_or(Next::Done);
    match next {
      Next::Done => self.remove(registry, slot),
      Next::Keep { more, at, exit_done } => {
        if exit_done {
          if let Some(fd) = e.exit.take() {
            let _ = registry.deregister(&mut SourceFd(&fd));
          }
          e.job.close_exit();
        }
        e.more = more;
        e.at = at;
        if more || at.is_some() {
          self.timed.insert(slot);
        } else {
          self.timed.remove(&slot);
        }
      }
    }
  }
}

fn run(mut poll: Poll, rx: Receiver<Box<dyn Followed>>) {
  let mut events = Events::with_capacity(EVENTS);
  let mut buf = vec![0u8; BUFFER];
  let mut table = Table { entries: Vec::new(), free: Vec::new(), timed: HashSet::new(), dirs: DirWatch::default() };
  let mut woken: Vec<(usize, bool, bool)> = Vec::new();
  loop {
    while let Ok(job) = rx.try_recv() {
      table.add(poll.registry(), job);
    }
    let now = Instant::now();
    let timeout = if table.timed.iter().any(|&s| table.entries[s].as_ref().is_some_and(|e| e.more)) {
      Some(std::time::Duration::ZERO)
    } else {
      table.timed.iter().filter_map(|&s| table.entries[s].as_ref().and_then(|e| e.at)).min().map(|at| at.saturating_duration_since(now))
    };
    if let Err(e) = poll.poll(&mut events, timeout) {
      if e.kind() == std::io::ErrorKind::Interrupted {
        continue;
      }
      // A broken epoll cannot follow anything: the jobs' sinks are dropped (their hosts
      // see no exit event); the next spawn starts a new reactor.
      return;
    }
    woken.clear();
    for ev in events.iter() {
      if ev.token() == WAKER {
        continue;
      }
      #[cfg(any(target_os = "linux", target_os = "android"))]
      if ev.token() == DIRS {
        table.dir_changes(&mut woken);
        continue;
      }
      let (slot, is_exit) = (ev.token().0 / 2, ev.token().0 % 2 == 1);
      // Errors and hang-ups count as readable: the read or the reap reports them.
      woken.push((slot, !is_exit, is_exit));
    }
    // One turn per job, with both of its readinesses.
    woken.sort_unstable_by_key(|w| w.0);
    woken.dedup_by(|later, first| {
      let same = later.0 == first.0;
      if same {
        first.1 |= later.1;
        first.2 |= later.2;
      }
      same
    });
    let now = Instant::now();
    for &(slot, output, exit) in &woken {
      table.turn(poll.registry(), slot, output, exit, now, &mut buf);
    }
    // A job turned just now may be turned again here: a turn without news is harmless.
    let due: Vec<usize> = table
      .timed
      .iter()
      .copied()
      .filter(|&s| table.entries[s].as_ref().is_some_and(|e| e.more || e.at.is_some_and(|at| at <= now)))
      .collect();
    for slot in due {
      table.turn(poll.registry(), slot, false, false, now, &mut buf);
    }
  }
}
