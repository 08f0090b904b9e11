//! Where a durable job's output goes: the log, created lazily (see [`Output`]). Shared by
//! the Unix and the Windows supervisor.

use crate::Args;
use procward_core::logfile::RotatingLog;

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

  pub fn write(&mut self, data: &[u8]) {
    self.open_log();
    if let Some(log) = &mut self.log {
      log.write(data);
    }
  }

  pub fn finish(&mut self) {
    if let Some(log) = &mut self.log {
      log.finish();
    }
  }
}
