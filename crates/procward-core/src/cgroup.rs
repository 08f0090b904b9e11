//! Containment through cgroup v2 (Linux), where the host may create cgroups (root, or a
//! delegated subtree): each job runs in its own cgroup, so a tree kill reaches every process
//! the job ever made — also a daemon that double-forked and called `setsid` after its parent
//! exited, which no process-tree walk can find. `cgroup.kill` (Linux 5.14+) SIGKILLs the
//! whole cgroup at once.
//!
//! Everything here is best effort: detection fails quietly and jobs then run without a
//! cgroup, contained by their session, process group and the snapshot rule only.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// The directory under which procward creates per-job cgroups, if this host may.
pub fn base() -> Option<&'static Path> {
  static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();
  BASE.get_or_init(detect).as_deref()
}

fn detect() -> Option<PathBuf> {
  if std::env::var_os("PROCWARD_NO_CGROUP").is_some() {
    return None;
  }
  // The cgroup2 mount point, from /proc/self/mountinfo (field 5 is the mount point; the
  // filesystem type follows the " - " separator).
  let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
  let mount = mountinfo.lines().find_map(|line| {
    let (left, right) = line.split_once(" - ")?;
    (right.split_whitespace().next()? == "cgroup2").then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
  })?;
  // Our own cgroup: the `0::<path>` line of /proc/self/cgroup.
  let own = fs::read_to_string("/proc/self/cgroup").ok()?;
  let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim_start_matches('/');
  let base = mount.join(rel).join("procward");
  fs::create_dir_all(&base).ok()?;
  // Prove we may create and join cgroups here before relying on it.
  let probe = base.join(format!("probe-{}", std::process::id()));
  fs::create_dir(&probe).ok()?;
  let ok = probe.join("cgroup.procs").exists() && probe.join("cgroup.kill").exists();
  let _ = fs::remove_dir(&probe);
  ok.then_some(base)
}

/// Whether `name` is a session id (`proc_` + 12 lowercase hex digits), the only names
/// procward gives its cgroups.
pub fn is_session_name(name: &str) -> bool {
  name.len() == 17 && name.starts_with("proc_") && name[5..].bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Creates the cgroup for a job, named after its session (`proc_` + 12 hex digits), and
/// returns its directory. `None` for any other name, or where this host has no containment.
pub fn create(name: &str) -> Option<PathBuf> {
  if !is_session_name(name) {
    return None;
  }
  let dir = base()?.join(name);
  match fs::create_dir(&dir) {
    Ok(()) => Some(dir),
    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => owned_dir(&dir).then_some(dir),
    Err(_) => None,
  }
}

/// What a recorded cgroup turns out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owned {
  /// procward's cgroup for the session: this directory, derived from [`base`] and the
  /// session id (never the recorded path).
  Ours(PathBuf),
  /// Named for the session and below our root, but no longer there (already removed).
  Absent,
  /// Not procward's: another name, another place, or a link. Never read, written or removed.
  NotOurs,
}

/// Judges a recorded cgroup: `recorded` is what a record says (the session id, or the
/// directory an earlier version stored), `session` the session it must be named for.
/// It is procward's only when `session` is a session id, `recorded` is that name or
/// exactly `base()/<session>`, and that entry is a real directory (not a symlink).
pub fn owned(recorded: &str, session: &str) -> Owned {
  let Some(base) = base() else { return Owned::NotOurs };
  if !is_session_name(session) {
    return Owned::NotOurs;
  }
  let dir = base.join(session);
  if recorded != session && Path::new(recorded) != dir {
    return Owned::NotOurs;
  }
  match fs::symlink_metadata(&dir) {
    Ok(m) if m.file_type().is_dir() => Owned::Ours(dir),
    Ok(_) => Owned::NotOurs,
    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Owned::Absent,
    Err(_) => Owned::NotOurs,
  }
}

/// A directory entry that is a directory itself, not a link to one.
fn owned_dir(dir: &Path) -> bool {
  fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_dir())
}

/// PIDs currently in the cgroup (`cgroup.procs`); empty when it cannot be read.
pub fn members(dir: &Path) -> Vec<i32> {
  fs::read_to_string(dir.join("cgroup.procs")).map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect()).unwrap_or_default()
}

/// SIGKILLs every process in the cgroup at once. Returns whether the kernel accepted it.
pub fn kill_all(dir: &Path) -> bool {
  fs::OpenOptions::new().write(true).open(dir.join("cgroup.kill")).and_then(|mut f| f.write_all(b"1")).is_ok()
}

/// Removes a job's cgroup if it is empty (the kernel refuses otherwise), judged by
/// [`owned`]: a cgroup that is not procward's is never removed. Returns whether it is gone
/// (false for one that is not ours).
pub fn remove(recorded: &str, session: &str) -> bool {
  match owned(recorded, session) {
    Owned::Ours(dir) => fs::remove_dir(&dir).is_ok() || !dir.exists(),
    Owned::Absent => true,
    Owned::NotOurs => false,
  }
}

/// How old an empty job cgroup must be before a sweep removes it: a start makes the cgroup
/// first and moves its job in right after, so a younger empty one may belong to a start
/// under way on another host (removing it would leave that job uncontained).
pub const SWEEP_MIN_AGE: Duration = Duration::from_secs(60);

/// Whether the directory at `path` was last modified at least [`SWEEP_MIN_AGE`] ago (its
/// `lstat` mtime); false when that cannot be read or lies in the future.
fn old_enough(path: &Path) -> bool {
  fs::symlink_metadata(path).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age >= SWEEP_MIN_AGE)
}

/// Removes every empty job cgroup directly below [`base`] (jobs that ended, whatever host
/// started them) that is at least [`SWEEP_MIN_AGE`] old: only directories named for a
/// session, never through a link. The kernel refuses to remove a cgroup that still has
/// members, so a running job's cgroup is never touched. Returns how many were removed.
pub fn sweep_empty() -> usize {
  let Some(base) = base() else { return 0 };
  let Ok(entries) = fs::read_dir(base) else { return 0 };
  entries
    .filter_map(Result::ok)
    // `file_type` of a directory entry does not follow links.
    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && e.file_name().to_str().is_some_and(is_session_name))
    .filter(|e| members(&e.path()).is_empty() && old_enough(&e.path()))
    .filter(|e| fs::remove_dir(e.path()).is_ok())
    .count()
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn only_session_ids_name_a_cgroup() {
    assert!(is_session_name("proc_0123456789ab"));
    for bad in ["", "proc_", "proc_0123456789AB", "proc_0123456789abc", "proc_0123456789a/", "../procward", "probe-12", "proc_01234567890g"]
    {
      assert!(!is_session_name(bad), "{bad}");
      assert!(create(bad).is_none(), "{bad}");
    }
  }

  #[test]
  fn a_recorded_path_elsewhere_or_for_another_session_is_not_ours() {
    assert_eq!(owned("/tmp", "proc_0123456789ab"), Owned::NotOurs);
    assert_eq!(owned("/tmp/proc_0123456789ab", "proc_0123456789ab"), Owned::NotOurs);
    assert_eq!(owned("proc_0123456789ab", "proc_ba9876543210"), Owned::NotOurs);
    assert_eq!(owned("proc_0123456789ab", "/tmp"), Owned::NotOurs);
    assert!(!remove("/tmp", "proc_0123456789ab"));
    if let Some(base) = base() {
      assert_eq!(owned("proc_0123456789ab", "proc_0123456789ab"), Owned::Absent);
      let path = base.join("proc_0123456789ab");
      assert_eq!(owned(path.to_str().unwrap(), "proc_0123456789ab"), Owned::Absent);
      // `..` in a recorded path is compared as text, never resolved.
      let dotted = format!("{}/../procward/proc_0123456789ab", base.display());
      assert_eq!(owned(&dotted, "proc_0123456789ab"), Owned::NotOurs);
    }
  }

  #[test]
  fn a_fresh_empty_cgroup_is_left_for_a_later_sweep() {
    let name = format!("proc_{:012x}", 0xf7e5_0000_0000u64 + u64::from(std::process::id()));
    let Some(path) = create(&name) else { return };
    // A start on another host is between making it and moving its job in.
    sweep_empty();
    assert!(path.exists(), "a sweep removed a cgroup made a moment ago");
    assert!(!old_enough(&path));
    fs::remove_dir(&path).unwrap();
  }

  #[test]
  fn a_link_below_the_root_is_not_ours_and_is_never_swept() {
    let Some(base) = base() else { return };
    let name = format!("proc_{:012x}", 0xfeed_0000_0000u64 + u64::from(std::process::id()));
    let link = base.join(&name);
    let target = std::env::temp_dir().join(format!("procward-cg-target-{}", std::process::id()));
    fs::create_dir_all(&target).unwrap();
    // cgroupfs refuses symlinks; where it does, there is nothing to follow.
    if std::os::unix::fs::symlink(&target, &link).is_ok() {
      assert_eq!(owned(&name, &name), Owned::NotOurs);
      sweep_empty();
      assert!(target.exists());
      let _ = fs::remove_file(&link);
    }
    fs::remove_dir(&target).unwrap();
  }
}
