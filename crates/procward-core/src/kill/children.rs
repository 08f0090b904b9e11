//! The tree of a live root read from the kernel's list of each thread's children
//! (`/proc/<pid>/task/<tid>/children`, Linux 3.5+ built with `CONFIG_PROC_CHILDREN`): reads
//! in proportion to the tree, where one pass over `/proc` reads the stat of every process on
//! the machine (700 of them took 5 ms here, all before the first signal).
//!
//! The tree is the root's descendants, and the processes of the root's session that were
//! orphaned (their parent died) with their own descendants. An orphan is adopted by the
//! nearest ancestor that is a child subreaper, or else by its PID namespace's init
//! (`find_new_reaper` in `kernel/exit.c`): a tree member (whose list the walk reads anyway)
//! or an ancestor of the root, up to PID 1. So the walk also reads the children of the
//! root's ancestors (their leader thread's, where `find_alive_thread` puts orphans), and
//! keeps those in the root's session.
//!
//! The kernel does not promise the list exact while children come and go
//! (`Documentation/filesystems/proc.rst`, "children"): it resumes each step from the child
//! it printed last, and only when that child was reaped (or reparented) in between does it
//! fall back to counting positions, which can skip a sibling. That child was printed, so a
//! skip always shows afterwards as a listed child that is gone or no longer the parent's
//! when its stat is read; the list is then read again. A walk that cannot get a steady list
//! gives up, and the caller reads the whole process table instead.

use crate::guard::session_of;
use crate::probe::ProcessInfo;
use crate::sys;
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;

/// Reads of one parent's children before the walk gives up on a list that keeps changing.
const ATTEMPTS: usize = 4;

/// Longest ancestor chain read: a cycle (impossible in a sane /proc) must not hang a kill.
const MAX_ANCESTORS: usize = 4096;

/// Every live process of the tree of `root` (a live process, just read; not included),
/// parents before children: its descendants, and the processes of its session (`sid ==
/// root.pid`, so only when the root leads one) that started no earlier than it and were
/// adopted by one of its ancestors, with their descendants. As in
/// [`crate::tree::descendants_in`], a child that started before its parent is a reused PID
/// and is left out with its subtree; zombies are left out (their children were reparented
/// when they exited).
///
/// With `also_below` (live processes whose PID and start time are known; only those are
/// read), their descendants too, where the root's walk did not reach them.
///
/// `None` when the kernel keeps no children lists, a list kept changing under [`ATTEMPTS`]
/// reads, or a stat could not be read: the caller falls back to one pass over the table.
pub(super) fn tree_of(root: &ProcessInfo, also_below: &[ProcessInfo]) -> Option<Vec<ProcessInfo>> {
  if !supported() {
    return None;
  }
  let mut walk = Walk { seen: HashSet::from([root.pid]), out: Vec::new(), text: Vec::with_capacity(4096), pids: Vec::new() };
  walk.below(*root)?;
  for top in also_below {
    if walk.seen.insert(top.pid) {
      walk.below(*top)?;
    }
  }
  // Without a session of its own, the root has no orphans to tell from other processes.
  if session_of(root.pid) != Some(root.pid) {
    return Some(walk.out);
  }
  let mut ancestor = root.ppid;
  for _ in 0..MAX_ANCESTORS {
    if ancestor <= 0 {
      break;
    }
    let Ok(Some(reaper)) = sys::read_stat(ancestor) else { break };
    for orphan in walk.children(&reaper, Some(root))? {
      walk.below(orphan)?;
    }
    ancestor = reaper.ppid;
  }
  Some(walk.out)
}

struct Walk {
  /// PIDs already judged (the root included), so none is taken twice.
  seen: HashSet<i32>,
  /// The tree found so far.
  out: Vec<ProcessInfo>,
  /// Scratch space for the text of one list, and the PIDs read from it.
  text: Vec<u8>,
  pids: Vec<i32>,
}

impl Walk {
  /// Adds every live descendant of `top` (itself excluded).
  fn below(&mut self, top: ProcessInfo) -> Option<()> {
    let mut queue = vec![top];
    while let Some(parent) = queue.pop() {
      queue.extend(self.children(&parent, None)?);
    }
    Some(())
  }

  /// Adds the live children of `parent` not seen yet, and returns them; with `job`, only
  /// those in its session that started no earlier than it (an ancestor's children are
  /// mostly other processes: one getsid each spares their stat reads). Reads the lists
  /// again while they may have skipped one (see the module docs).
  fn children(&mut self, parent: &ProcessInfo, job: Option<&ProcessInfo>) -> Option<Vec<ProcessInfo>> {
    let mut found = Vec::new();
    for _ in 0..ATTEMPTS {
      // An orphan goes to the first thread of its reaper that is not exiting, its leader
      // unless that has exited (`find_alive_thread`): only the leader's list of a live
      // ancestor can hold one.
      let every_thread = job.is_none() || parent.is_dead();
      children_of(parent.pid, every_thread, &mut self.text, &mut self.pids).ok()?;
      let mut steady = true;
      for &pid in &self.pids {
        if self.seen.contains(&pid) {
          continue;
        }
        if let Some(job) = job {
          match session_of(pid) {
            Some(sid) if sid == job.pid => {}
            Some(_) => continue,
            None => {
              steady = false;
              continue;
            }
          }
        }
        match sys::read_stat(pid) {
          Ok(Some(info)) if info.ppid == parent.pid && info.start_time >= parent.start_time => {
            if job.is_none_or(|j| info.start_time >= j.start_time) {
              self.seen.insert(pid);
              if !info.is_dead() {
                self.out.push(info);
                found.push(info);
              }
            }
          }
          // Listed, then reaped or moved: the list may have skipped the sibling after it.
          Ok(_) => steady = false,
          Err(_) => return None,
        }
      }
      if steady {
        // The parent still holds its PID: the children read meanwhile name it, not a later
        // holder of its PID (a survivor that died before the walk below it, and whose PID a
        // stranger got, has the stranger's children in its list).
        if !found.is_empty() && sys::read_stat(parent.pid).ok().flatten().is_none_or(|now| now.start_time != parent.start_time) {
          return None;
        }
        return Some(found);
      }
    }
    None
  }
}

/// Whether this kernel keeps children lists (checked once, on our own main thread).
fn supported() -> bool {
  static SUPPORTED: OnceLock<bool> = OnceLock::new();
  *SUPPORTED.get_or_init(|| {
    let me = std::process::id();
    std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
  })
}

/// The PIDs in the children lists of every thread of `pid` (with `every_thread`), or of its
/// leader thread alone, into `pids` (cleared first). A process that is gone has none.
/// `text` is scratch space, kept between calls.
fn children_of(pid: i32, every_thread: bool, text: &mut Vec<u8>, pids: &mut Vec<i32>) -> io::Result<()> {
  pids.clear();
  text.clear();
  // A child's parent is the thread that forked it, so each thread has a list of its own.
  // `/proc/<pid>/task` counts 2 links plus one per thread (`proc_task_getattr`), so one
  // stat spares listing the directory of a process with a single thread.
  let threads = if !every_thread {
    1
  } else {
    match std::fs::metadata(format!("/proc/{pid}/task")) {
      Ok(m) => m.nlink().saturating_sub(2),
      Err(e) if gone(&e) => return Ok(()),
      Err(e) => return Err(e),
    }
  };
  if threads <= 1 {
    match read_into(format!("/proc/{pid}/task/{pid}/children"), text) {
      Err(e) if !gone(&e) => return Err(e),
      _ => {}
    }
  } else {
    let tasks = match std::fs::read_dir(format!("/proc/{pid}/task")) {
      Ok(t) => t,
      Err(e) if gone(&e) => return Ok(()),
      Err(e) => return Err(e),
    };
    for task in tasks {
      match read_into(task?.path().join("children"), text) {
        // The thread (or the whole process) ended since the directory was listed.
        Err(e) if !gone(&e) => return Err(e),
        _ => {}
      }
      text.push(b' ');
    }
  }
  pids.extend(text.split(u8::is_ascii_whitespace).filter_map(|w| std::str::from_utf8(w).ok()?.parse::<i32>().ok()));
  Ok(())
}

fn gone(e: &io::Error) -> bool {
  matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ESRCH))
}

/// Appends the whole file to `text`, in reads of a page (what the kernel fills per read).
fn read_into(path: impl AsRef<std::path::Path>, text: &mut Vec<u8>) -> io::Result<()> {
  let mut file = File::open(path)?;
  let mut chunk = [0u8; 4096];
  loop {
    match file.read(&mut chunk) {
      Ok(0) => return Ok(()),
      Ok(n) => text.extend_from_slice(&chunk[..n]),
      Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
      Err(e) => return Err(e),
    }
  }
}
