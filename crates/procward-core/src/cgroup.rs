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

/// Creates the cgroup for a job (named after its session) and returns its directory.
pub fn create(name: &str) -> Option<PathBuf> {
  if name.is_empty() || name.contains('/') || name.starts_with('.') {
    return None;
  }
  let dir = base()?.join(name);
  match fs::create_dir(&dir) {
    Ok(()) => Some(dir),
    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Some(dir),
    Err(_) => None,
  }
}

/// PIDs currently in the cgroup (`cgroup.procs`); empty when it cannot be read.
pub fn members(dir: &Path) -> Vec<i32> {
  fs::read_to_string(dir.join("cgroup.procs")).map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect()).unwrap_or_default()
}

/// SIGKILLs every process in the cgroup at once. Returns whether the kernel accepted it.
pub fn kill_all(dir: &Path) -> bool {
  fs::OpenOptions::new().write(true).open(dir.join("cgroup.kill")).and_then(|mut f| f.write_all(b"1")).is_ok()
}

/// Removes the cgroup if it is empty (the kernel refuses otherwise). Returns whether it is gone.
pub fn remove(dir: &Path) -> bool {
  fs::remove_dir(dir).is_ok() || !dir.exists()
}

/// Removes every empty job cgroup under [`base`] (jobs that ended, whatever host started
/// them). The kernel refuses to remove a cgroup that still has members, so a running job's
/// cgroup is never touched. Returns how many were removed.
pub fn sweep_empty() -> usize {
  let Some(base) = base() else { return 0 };
  let Ok(entries) = fs::read_dir(base) else { return 0 };
  entries
    .filter_map(Result::ok)
    .filter(|e| e.path().is_dir() && members(&e.path()).is_empty())
    .filter(|e| fs::remove_dir(e.path()).is_ok())
    .count()
}
