//! The reactor's watch on durable jobs' directories (Linux: one inotify instance in the
//! reactor's poll, see the reactor's module doc): which job a directory's change turns, and
//! the jobs whose directory went away. Elsewhere it holds nothing and no job is watched.

#[cfg(any(target_os = "linux", target_os = "android"))]
use mio::{unix::SourceFd, Interest, Registry, Token};

/// The inotify instance watching durable jobs' directories.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) const DIRS: Token = Token(usize::MAX - 1);

/// The inotify watches on durable jobs' directories: watch → slot. Empty, with no
/// instance, until a job asks for one (and where inotify does not exist).
#[derive(Default)]
pub(super) struct DirWatch {
  #[cfg(any(target_os = "linux", target_os = "android"))]
  inotify: Option<nix::sys::inotify::Inotify>,
  /// The instance could not be made (`EMFILE`, `max_user_instances`): no more tries.
  #[cfg(any(target_os = "linux", target_os = "android"))]
  failed: bool,
  #[cfg(any(target_os = "linux", target_os = "android"))]
  slots: std::collections::HashMap<nix::sys::inotify::WatchDescriptor, usize>,
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl DirWatch {
  /// Watches `dir` for `slot`; `None` when it cannot (the job then ticks), with `missing`
  /// set when that is because `dir` does not exist (yet).
  pub(super) fn add(
    &mut self,
    registry: &Registry,
    dir: &std::path::Path,
    slot: usize,
    missing: &mut bool,
  ) -> Option<nix::sys::inotify::WatchDescriptor> {
    use nix::sys::inotify::{AddWatchFlags as F, InitFlags, Inotify};
    use std::os::fd::{AsFd, AsRawFd};
    if self.inotify.is_none() && !self.failed {
      let made = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
        .ok()
        .filter(|i| registry.register(&mut SourceFd(&i.as_fd().as_raw_fd()), DIRS, Interest::READABLE).is_ok());
      self.failed = made.is_none();
      self.inotify = made;
    }
    *missing = false;
    let inotify = self.inotify.as_ref()?;
    // Writes to the log, the log and exit file created or renamed into place (rotation,
    // the exit file's temporary file), and the directory itself going away.
    let mask = F::IN_MODIFY | F::IN_CREATE | F::IN_MOVED_TO | F::IN_CLOSE_WRITE | F::IN_ONLYDIR;
    let added = inotify.add_watch(dir, mask);
    *missing = added == Err(nix::errno::Errno::ENOENT);
    let wd = added.ok()?;
    // One directory per job: a second job on the same directory ticks.
    if self.slots.contains_key(&wd) {
      return None;
    }
    self.slots.insert(wd, slot);
    Some(wd)
  }

  pub(super) fn remove(&mut self, wd: nix::sys::inotify::WatchDescriptor) {
    if self.slots.remove(&wd).is_some() {
      if let Some(i) = self.inotify.as_ref() {
        // EINVAL when the kernel dropped it already (the directory was removed).
        let _ = i.rm_watch(wd);
      }
    }
  }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl super::Table {
  /// Reads every pending inotify event (the descriptor is edge-triggered) and adds the
  /// jobs whose directory changed to `woken`; on a queue overflow, every watched job.
  pub(super) fn dir_changes(&mut self, woken: &mut Vec<(usize, bool, bool)>) {
    use nix::sys::inotify::AddWatchFlags as F;
    let Some(inotify) = self.dirs.inotify.as_ref() else { return };
    let mut gone = Vec::new();
    loop {
      match inotify.read_events() {
        Ok(events) => {
          for ev in events {
            if ev.mask.contains(F::IN_Q_OVERFLOW) {
              woken.extend(self.dirs.slots.values().map(|&s| (s, true, false)));
            } else if let Some(&slot) = self.dirs.slots.get(&ev.wd) {
              woken.push((slot, true, false));
              if ev.mask.contains(F::IN_IGNORED) {
                gone.push((ev.wd, slot));
              }
            }
          }
        }
        Err(nix::errno::Errno::EINTR) => {}
        // EAGAIN: drained.
        Err(_) => break,
      }
    }
    // The directory was removed (or its file system unmounted): the job ticks from now on.
    for (wd, slot) in gone {
      self.dirs.slots.remove(&wd);
      if let Some(e) = self.entries[slot].as_mut() {
        e.dir = None;
        e.job.dir_watched(false);
      }
    }
  }
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
  use crate::reactor::{follow, Followed, Next, Wake};
  use std::os::fd::RawFd;
  use std::path::PathBuf;
  use std::sync::mpsc;
  use std::time::Duration;

  /// A job with no descriptor and, without a `tick`, no deadline after its first turn: only
  /// its directory's changes can turn it again. Reports each turn and each `dir_watched`.
  struct DirJob {
    dir: PathBuf,
    tx: mpsc::Sender<&'static str>,
    tick: Option<Duration>,
  }

  impl Followed for DirJob {
    fn output_fd(&self) -> Option<RawFd> {
      None
    }
    fn exit_fd(&self) -> Option<RawFd> {
      None
    }
    fn turn(&mut self, wake: Wake, _buf: &mut [u8]) -> Next {
      let _ = self.tx.send(if wake.output { "changed" } else { "turn" });
      if self.dir.join("done").exists() {
        return Next::Done;
      }
      Next::Keep { more: false, at: self.tick.map(|t| wake.now + t), exit_done: false }
    }
    fn close_exit(&mut self) {}
    fn unwatched(&mut self, _exit: bool) {}
    fn watch_dir(&self) -> Option<PathBuf> {
      Some(self.dir.clone())
    }
    fn dir_watched(&mut self, watched: bool) {
      let _ = self.tx.send(if watched { "watched" } else { "unwatched" });
    }
  }

  fn next(rx: &mpsc::Receiver<&'static str>) -> &'static str {
    rx.recv_timeout(Duration::from_secs(10)).expect("no report within 10 s")
  }

  #[test]
  fn a_job_without_a_deadline_is_turned_by_writes_renames_and_the_removal_of_its_directory() {
    let dir = std::env::temp_dir().join(format!("procward-dirwatch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (tx, rx) = mpsc::channel();
    follow(Box::new(DirJob { dir: dir.clone(), tx, tick: None })).unwrap();
    assert_eq!(next(&rx), "watched");
    assert_eq!(next(&rx), "turn");
    // A log created and appended to, as a supervisor does.
    std::fs::write(dir.join("output.log"), "hi\n").unwrap();
    assert_eq!(next(&rx), "changed");
    while rx.try_recv().is_ok() {}
    // An exit file renamed into place.
    let outside = dir.with_extension("exit.tmp");
    std::fs::write(&outside, "{}").unwrap();
    std::fs::rename(&outside, dir.join("exit.json")).unwrap();
    assert_eq!(next(&rx), "changed");
    while rx.try_recv().is_ok() {}
    // The directory removed: the job is told nothing watches it any more.
    std::fs::remove_dir_all(&dir).unwrap();
    let mut seen = Vec::new();
    while !seen.contains(&"unwatched") {
      seen.push(next(&rx));
    }
  }

  #[test]
  fn a_job_whose_directory_appears_later_is_watched_once_it_exists() {
    let dir = std::env::temp_dir().join(format!("procward-dirwatch-late-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (tx, rx) = mpsc::channel();
    // Not there yet: the job ticks on a deadline of its own until it is.
    follow(Box::new(DirJob { dir: dir.clone(), tx, tick: Some(Duration::from_millis(20)) })).unwrap();
    assert_eq!(next(&rx), "unwatched");
    std::fs::create_dir_all(&dir).unwrap();
    let mut seen = Vec::new();
    while !seen.contains(&"watched") {
      seen.push(next(&rx));
    }
    std::fs::write(dir.join("done"), "").unwrap();
    let _ = std::fs::remove_dir_all(&dir);
  }
}
