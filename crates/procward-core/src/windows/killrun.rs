//! One Windows tree kill in progress: its root's verdict, its Job Object, the processes it
//! holds (its targets) and its report, and the steps that act on them.

use super::killjob::KillJob;
use super::killprocess::{open, Opened, Process};
use super::{KillReport, Refused};
use crate::guard::{check_pid, Host, Refusal};
use crate::identity::Identity;

/// A process the kill holds.
#[derive(Debug)]
pub(super) struct Target {
  pub(super) process: Process,
  /// In the root's Job Object when it was found: `TerminateJobObject` reaches it.
  pub(super) in_job: bool,
}

impl Target {
  pub(super) fn pid(&self) -> i32 {
    self.process.pid
  }
  pub(super) fn start_time(&self) -> u64 {
    self.process.start_time
  }
}

/// The state of one kill.
pub(super) struct Run<'a> {
  pub(super) root: &'a Identity,
  pub(super) job: Option<KillJob>,
  /// Whether `TerminateJobObject` may end the job: no member was refused by the guard and
  /// the host is not in it. Otherwise members are terminated one by one.
  pub(super) job_trusted: bool,
  /// The root's process while it runs (`targets[0]`).
  pub(super) root_current: bool,
  pub(super) targets: Vec<Target>,
  /// Members of the job this user may not open: reported as survivors while the job lists
  /// them.
  pub(super) unopened: Vec<i32>,
  /// Whether the graceful step reached the job's console.
  pub(super) delivered: bool,
  pub(super) report: KillReport,
}

impl<'a> Run<'a> {
  pub(super) fn new(root: &'a Identity) -> Self {
    Run {
      root,
      job: None,
      job_trusted: false,
      root_current: false,
      targets: Vec::new(),
      unopened: Vec::new(),
      delivered: false,
      report: KillReport::default(),
    }
  }

  /// Judges the root before anything is done. False: this kill is over (refused, or
  /// unknown: the report says which). True: go on to the snapshot, with the root as the
  /// first target when it runs, and with its Job Object when one exists (a root that is
  /// gone, or whose PID was reused, may have left members in it: the job's name is the
  /// root's identity, so they are the job's own).
  pub(super) fn begin(&mut self, host: &Host, boot_id: &str, require_job: bool) -> bool {
    let root = self.root;
    if let Err(reason) = check_pid(root.pid) {
      self.refuse(root.pid, reason);
      return false;
    }
    if root.boot_id != boot_id {
      self.report.already_gone.push(root.pid);
      return false;
    }
    let process = match open(root.pid) {
      Opened::Process(p) if p.start_time != root.start_time => {
        self.report.refused_reused.push(root.pid);
        None
      }
      Opened::Process(p) if p.running() => Some(p),
      Opened::Process(_) | Opened::Missing => {
        self.report.already_gone.push(root.pid);
        None
      }
      Opened::Unreadable => {
        self.report.survivors.push(root.pid);
        self.report.survivor_identities.push(root.clone());
        return false;
      }
    };
    self.job = KillJob::open(root.pid, root.start_time).ok().flatten();
    self.job_trusted = self.job.as_ref().is_some_and(|j| !j.holds_host());
    let Some(p) = process else { return self.job.is_some() };
    if let Err(reason) = host.check_process(p.pid, p.start_time) {
      self.refuse(root.pid, reason);
      return false;
    }
    let in_job = self.job.as_ref().is_some_and(|j| j.holds(&p));
    if require_job && !in_job {
      self.refuse(root.pid, Refusal::NotSessionLeader);
      return false;
    }
    if !in_job {
      // procward puts a root in its Job Object before it runs: a job of that name without
      // the live root in it was made by someone else, and its members are not the root's.
      (self.job, self.job_trusted) = (None, false);
    }
    self.targets.push(Target { process: p, in_job });
    self.root_current = true;
    true
  }

  /// The graceful step reached the job's console: the root, and every target attached to
  /// that console when the event went out, count as signalled.
  pub(super) fn mark_delivered(&mut self, console: &[i32]) {
    self.delivered = true;
    let reached: Vec<i32> =
      self.targets.iter().map(Target::pid).filter(|p| console.contains(p) || (self.root_current && *p == self.root.pid)).collect();
    for pid in reached {
      Self::note(&mut self.report.signalled, pid);
    }
  }

  /// Termination: `TerminateJobObject` when the job may be trusted with the whole tree, then
  /// `TerminateProcess` of every target still running outside it (the job may not hold
  /// them: escapees started outside it, or a job that was not trusted). Each target is held
  /// by the handle opened at its snapshot, which is its identity check: that handle can
  /// reach no other process. `escalation` marks the report escalated.
  pub(super) fn terminate(&mut self, escalation: bool) {
    self.report.escalated |= escalation;
    let running: Vec<bool> = self.targets.iter().map(|t| t.process.running()).collect();
    let mut by_job = false;
    if let Some(job) = self.job.as_ref().filter(|j| self.job_trusted && !j.holds_host()) {
      by_job = job.terminate().is_ok();
    }
    for (t, was_running) in self.targets.iter().zip(running) {
      if !was_running {
        if !self.report.signalled.contains(&t.pid()) {
          Self::note(&mut self.report.already_gone, t.pid());
        }
      } else if (by_job && t.in_job) || t.process.terminate().is_ok() {
        Self::note(&mut self.report.signalled, t.pid());
      }
    }
  }

  /// Targets that did not get the graceful event and are gone by now were gone when their
  /// turn came.
  pub(super) fn note_gone_unsignalled(&mut self) {
    for t in &self.targets {
      if !t.process.running() && !self.report.signalled.contains(&t.pid()) {
        Self::note(&mut self.report.already_gone, t.pid());
      }
    }
  }

  /// The report's survivors: targets still running, and members of the job still listed
  /// that the kill could not open or never saw (born after its last walk): a kill never
  /// reports success for a process it did not see die. Refused members stay out.
  pub(super) fn finish(&mut self) {
    for t in self.targets.iter().filter(|t| t.process.running()) {
      Self::note(&mut self.report.survivors, t.pid());
      self.report.survivor_identities.push(Identity { pid: t.pid(), start_time: t.start_time(), boot_id: self.root.boot_id.clone() });
    }
    let listed = self.job.as_ref().and_then(|j| j.members().ok()).unwrap_or_default();
    let unseen: Vec<i32> = listed.into_iter().filter(|&p| self.unopened.contains(&p) || !self.knows(p)).collect();
    for pid in unseen {
      Self::note(&mut self.report.survivors, pid);
    }
  }

  /// How many processes this kill has seen (targets, refusals, unopened members).
  pub(super) fn known(&self) -> usize {
    self.targets.len() + self.report.refused.len() + self.report.refused_reused.len() + self.unopened.len()
  }

  pub(super) fn note(list: &mut Vec<i32>, pid: i32) {
    if !list.contains(&pid) {
      list.push(pid);
    }
  }

  /// Lists a refusal; the PID is never acted on.
  pub(super) fn refuse(&mut self, pid: i32, reason: Refusal) {
    if !self.report.refused.iter().any(|r| r.pid == Some(pid)) {
      self.report.refused.push(Refused { pid: Some(pid), cgroup: None, reason });
    }
  }
}
