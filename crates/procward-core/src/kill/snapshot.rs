//! The tree a kill is about: the root's own process group, the members of the job's cgroup,
//! and the walk again from the survivors before SIGKILL (processes born since the snapshot).

use super::run::{Run, Target};
use crate::guard::session_of;
use crate::probe::ProcessInfo;
#[cfg(target_os = "linux")]
use crate::sys;
use crate::tree::{descendants_in, group_members_in};

impl Run<'_> {
  /// Members of the root's own process group that started no earlier than the root, only
  /// when that group is the root's session (`sid == pgid == root`): a job's group lives in
  /// the session `setsid` made for it, and any other group is not the job's.
  pub(super) fn own_group(&self, table: &[ProcessInfo]) -> Vec<Target> {
    group_members_in(table, self.root.pid, self.root.start_time)
      .iter()
      .filter(|p| !p.is_dead() && session_of(p.pid) == Some(self.root.pid))
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

  /// Adds processes that appeared under the survivors (or in the group) since the snapshot,
  /// as `table` (read after the grace period) shows them.
  pub(super) fn rewalk(&mut self, table: &[ProcessInfo], survivors: &[Target]) {
    let mut found = Vec::new();
    for s in survivors {
      found.extend(descendants_in(table, s.pid, s.start_time).iter().map(Target::from));
    }
    found.extend(self.own_group(table));
    found.extend(cgroup_members(self.cgroup.as_deref(), table));
    for t in found {
      self.add(t);
    }
  }
}

/// Live members of the job's cgroup, as targets (a process in the job's cgroup is the job's).
pub(super) fn cgroup_members(dir: Option<&std::path::Path>, table: &[ProcessInfo]) -> Vec<Target> {
  #[cfg(target_os = "linux")]
  if let Some(dir) = dir {
    let pids = crate::cgroup::members(dir);
    return table.iter().filter(|p| pids.contains(&p.pid) && !p.is_dead()).map(Target::from).collect();
  }
  let _ = (dir, table);
  Vec::new()
}
