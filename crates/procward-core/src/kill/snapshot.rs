//! The tree a kill is about, before the first signal: the root's descendants (walked
//! through the kernel's children lists, or found in one read of the process table), the
//! root's own process group and the members of the job's cgroup; and the walk again from the
//! survivors before SIGKILL (processes born since the snapshot).

use super::run::{Run, Target};
use crate::guard::session_of;
use crate::probe::ProcessInfo;
use crate::sys;
use crate::tree::{descendants_in, group_members_in};

impl Run<'_> {
  /// The targets before the first signal, without reading the whole process table: the
  /// root (`root`, just judged current), its tree as the kernel's children lists show it
  /// (descendants, and the session's orphans adopted by the root's ancestors; see
  /// `children`) and the cgroup's members. Returns false, with nothing done, when the tree
  /// cannot be walked (no children lists, or lists that kept changing): the caller reads
  /// the table instead.
  pub(super) fn snapshot_walk(&mut self, root: &ProcessInfo) -> bool {
    self.add_walked(root, &[])
  }

  /// Adds the root, its tree walked through the children lists (and the trees below
  /// `tops`, see `children::tree_of`) and the cgroup's members. Returns false, with nothing
  /// added, when the walk gives up.
  fn add_walked(&mut self, root: &ProcessInfo, tops: &[ProcessInfo]) -> bool {
    #[cfg(target_os = "linux")]
    {
      let Some(tree) = super::children::tree_of(root, tops) else { return false };
      self.add(self.root_target());
      for p in &tree {
        self.add(Target::from(p));
      }
      for t in self.cgroup_members() {
        self.add(t);
      }
      for t in self.marked() {
        self.add(t);
      }
      true
    }
    #[cfg(not(target_os = "linux"))]
    {
      let _ = (root, tops);
      false
    }
  }

  /// The targets before the first signal, from one read of the whole process table. When
  /// the leader is already gone (a zombie, or reaped), what is left of its process group is
  /// still provably its own: a PID cannot be reused while a process group of that id exists,
  /// so a member of group `root.pid` (in session `root.pid`) that started after the leader
  /// belongs to the group the leader created.
  pub(super) fn snapshot(&mut self, table: &[ProcessInfo], root_current: bool) {
    let root = self.root;
    if root_current {
      self.targets.push(self.root_target());
      for p in descendants_in(table, root.pid, root.start_time) {
        if !p.is_dead() {
          self.add(Target::from(&p));
        }
      }
    }
    for t in self.own_group(table) {
      self.add(t);
    }
    for t in self.cgroup_members() {
      self.add(t);
    }
    for t in self.marked() {
      self.add(t);
    }
  }

  /// The processes of the batch's scan (see [`scan_marked`]) that carry this session's mark,
  /// started no earlier than the root, that are not targets yet: what the job has outside
  /// its tree and group (a daemon that called `setsid` and whose parent ended).
  pub(super) fn marked(&self) -> Vec<Target> {
    self.marked.iter().copied().filter(|t| t.start_time >= self.root.start_time && !self.knows(t.pid)).collect()
  }

  /// Live members of the root's own process group that started no earlier than the root
  /// and are not targets yet, only when that group is the root's session
  /// (`sid == pgid == root`): a job's group lives in the session `setsid` made for it, and
  /// any other group is not the job's.
  pub(super) fn own_group(&self, table: &[ProcessInfo]) -> Vec<Target> {
    if !self.group_is_jobs {
      return Vec::new();
    }
    group_members_in(table, self.root.pid, self.root.start_time)
      .iter()
      .filter(|p| !p.is_dead() && !self.knows(p.pid) && session_of(p.pid) == Some(self.root.pid))
      .filter(|p| !self.members_need_proof || self.proven(p.pid))
      .map(Target::from)
      .collect()
  }

  /// Whether `cgroup.kill` may be written: every member must pass the guard (a member the
  /// guard refuses, say the host moved into it, would be SIGKILLed with the rest).
  #[cfg(target_os = "linux")]
  pub(super) fn cgroup_kill_allowed(&mut self, dir: &std::path::Path) -> bool {
    let mut allowed = true;
    for pid in crate::cgroup::members(dir) {
      let Ok(Some(info)) = sys::read_stat(pid) else { continue };
      if let Err(reason) = self.host.check_process(&info, session_of(pid)) {
        self.refuse(pid, reason);
        allowed = false;
      }
    }
    allowed
  }

  /// Before SIGKILL, without reading the table: when the root survives, its tree walked
  /// again as at the snapshot (see `snapshot_walk`), the tree below every other survivor,
  /// and the cgroup's members. Returns false, with nothing done, when the root is not among
  /// the survivors (what is left of its group is found only in the table) or the walk gives
  /// up: the caller then uses [`Run::rewalk`].
  pub(super) fn rewalk_children(&mut self, survivors: &[Target]) -> bool {
    let root = self.root_target();
    if !survivors.iter().any(|s| s.pid == root.pid) {
      return false;
    }
    let Ok(Some(info)) = sys::read_stat(root.pid) else { return false };
    if info.start_time != root.start_time || info.is_dead() {
      return false;
    }
    // The walk reads only a top's PID and start time.
    let tops: Vec<ProcessInfo> = survivors
      .iter()
      .filter(|s| s.pid != root.pid)
      .map(|s| ProcessInfo { pid: s.pid, ppid: 0, pgid: s.pgid, state: 'S', start_time: s.start_time })
      .collect();
    self.add_walked(&info, &tops)
  }

  /// Adds processes that appeared under the survivors (or in the group) since the snapshot,
  /// as `table` (read after the grace period) shows them.
  pub(super) fn rewalk(&mut self, table: &[ProcessInfo], survivors: &[Target]) {
    let mut found = Vec::new();
    // Only below a survivor that still holds its PID: another process that got it since
    // has children of its own, none of them the job's.
    for s in survivors.iter().filter(|s| table.iter().any(|p| p.pid == s.pid && p.start_time == s.start_time && !p.is_dead())) {
      found.extend(descendants_in(table, s.pid, s.start_time).iter().map(Target::from));
    }
    found.extend(self.own_group(table));
    found.extend(self.cgroup_members());
    for t in found {
      self.add(t);
    }
  }

  /// Whether the root's process group still exists: `kill(-root, 0)` succeeds (or is
  /// refused with `EPERM`) while any process is in it, a zombie included. Sends nothing.
  /// False when the group may not be the job's (see `Run::group_is_jobs`).
  pub(super) fn group_exists(&self) -> bool {
    if !self.group_is_jobs {
      return false;
    }
    // SAFETY: signal 0 only checks that the group exists; the root's PID is above 1 (`begin`).
    unsafe { libc::kill(-self.root.pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
  }

  /// Live members of the root's group (in its session) that no walk found, as `table` shows
  /// them: say a member whose parent left the session (`setsid`) before the snapshot, so
  /// neither the children lists below the root nor its ancestors' orphans led to it. Taken
  /// as the job's while the root still holds its PID (a zombie included), which keeps the
  /// group's number the job's; otherwise each needs a proof of its own (the mark or the
  /// cgroup): the group may have emptied and its number gone to a stranger's group.
  pub(super) fn unfound_members(&self, table: &[ProcessInfo]) -> Vec<Target> {
    let root = self.root_target();
    let found = self.own_group(table);
    if table.iter().any(|p| p.pid == root.pid && p.start_time == root.start_time) {
      found
    } else {
      found.into_iter().filter(|t| self.proven(t.pid)).collect()
    }
  }

  /// Live members of the job's cgroup that are not targets yet (a process in the job's
  /// cgroup is the job's): a stat read each, only for those.
  fn cgroup_members(&self) -> Vec<Target> {
    #[cfg(target_os = "linux")]
    if let Some(dir) = self.cgroup.as_deref() {
      return crate::cgroup::members(dir)
        .into_iter()
        .filter(|&pid| !self.knows(pid))
        .filter_map(|pid| sys::read_stat(pid).ok().flatten())
        .filter(|p| !p.is_dead())
        .map(|p| Target::from(&p))
        .collect();
    }
    Vec::new()
  }
}

/// For each run of `live` whose targets are all dead (`survivors[k]` empty) but whose group
/// still exists, the members no walk found (see [`Run::unfound_members`]) become targets
/// and survivors, from one pass over the process table shared by those runs (see
/// [`groups_table`]). Returns whether any were found. A zombie left in the group (the root
/// not reaped yet) costs that pass and finds nothing.
pub(super) fn add_unfound(runs: &mut [Run], live: &[usize], survivors: &mut [Vec<Target>]) -> bool {
  let asking: Vec<usize> =
    live.iter().zip(survivors.iter()).filter(|(&i, left)| left.is_empty() && runs[i].group_exists()).map(|(&i, _)| i).collect();
  if asking.is_empty() {
    return false;
  }
  let groups: Vec<i32> = asking.iter().map(|&i| runs[i].root.pid).collect();
  let Ok(table) = groups_table(&groups) else { return false };
  let mut any = false;
  for (&i, left) in live.iter().zip(survivors.iter_mut()) {
    if !asking.contains(&i) {
      continue;
    }
    for t in runs[i].unfound_members(&table) {
      runs[i].add(t);
      left.push(t);
      any = true;
    }
  }
  any
}

/// Fills the `marked` of each run of `asking` that has a mark with the processes that carry
/// it, from one pass over `/proc` for them all (see
/// [`crate::membership::marked_processes_except`]), reading nothing of the processes the
/// runs already target.
pub(super) fn scan_marked(runs: &mut [Run], asking: &[usize]) {
  let asking: Vec<usize> = asking.iter().copied().filter(|&i| runs[i].mark.is_some()).collect();
  if asking.is_empty() {
    return;
  }
  let marks: Vec<&str> = asking.iter().filter_map(|&i| runs[i].mark).collect();
  let known: std::collections::HashSet<i32> = asking.iter().flat_map(|&i| runs[i].targets.iter().map(|t| t.pid)).collect();
  for (k, p) in crate::membership::marked_processes_except(&marks, &known) {
    runs[asking[k]].marked.push(Target::from(&p));
  }
}

/// For each run of `asking` whose root was live at the snapshot, the processes carrying its
/// mark that its walk did not reach (a daemon that left the tree): found after the first
/// signal, so the scan of `/proc` does not delay it, and signalled at once.
pub(super) fn signal_marked(runs: &mut [Run], asking: &[usize], sig: nix::sys::signal::Signal) {
  scan_marked(runs, asking);
  for &i in asking {
    let found = runs[i].marked();
    for t in found {
      runs[i].add(t);
      runs[i].signal_one(t, sig);
    }
  }
}

/// For each run of `live` with its own cgroup, the members still alive there after the
/// first wait that are not targets yet (one that the job forked while it died, say a TERM
/// trap's `setsid sleep &`) become targets and survivors: the kill goes on to escalate, and
/// `cgroup.kill` ends the cgroup's processes, so a contained job's kill ends with its cgroup
/// empty whether or not a snapshotted process survived. Returns whether any were found.
pub(super) fn add_cgroup_left(runs: &mut [Run], live: &[usize], survivors: &mut [Vec<Target>]) -> bool {
  let mut any = false;
  for (&i, left) in live.iter().zip(survivors.iter_mut()) {
    for t in runs[i].cgroup_members() {
      runs[i].add(t);
      left.push(t);
      any = true;
    }
  }
  any
}

/// The processes of the process groups `pgids`, from one listing of `/proc` with one
/// `getpgid` per PID and a stat read only for the groups' members: a pass over thousands of
/// processes (a loop of `setsid` children leaves that many) reads no file of theirs.
/// Processes that exit during the pass are skipped. Elsewhere: the process table, filtered.
fn groups_table(pgids: &[i32]) -> std::io::Result<Vec<ProcessInfo>> {
  #[cfg(target_os = "linux")]
  {
    let mut table = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
      let Ok(entry) = entry else { continue };
      let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
      // SAFETY: getpgid only reads the kernel's record of `pid`.
      if !pgids.contains(&unsafe { libc::getpgid(pid) }) {
        continue;
      }
      if let Ok(Some(info)) = sys::read_stat(pid) {
        table.push(info);
      }
    }
    Ok(table)
  }
  #[cfg(not(target_os = "linux"))]
  {
    Ok(sys::process_table()?.into_iter().filter(|p| pgids.contains(&p.pgid)).collect())
  }
}
