//! The job's end as a copy loop follows it, and when its exit file is written: once the
//! output pipe closed, or was idle `drain.idle` since the end or the last read, or
//! `drain.byte_cap` bytes came after the end, or `drain.max_wait` passed (the rule of the
//! host's own reader, `DrainOptions`). Shared by the Unix and the Windows copy loop.

use crate::files;
use procward_core::job::DrainOptions;
use procward_core::status::ExitInfo;
use std::path::Path;
use std::time::{Duration, Instant};

/// The job's end and how the output has gone since.
struct Ended {
  info: ExitInfo,
  /// When it ended, in milliseconds since the Unix epoch (the exit file's `exitedAt`).
  at_ms: u128,
  at: Instant,
  /// The last read after the end (or the end itself): the idle window starts here.
  quiet_since: Instant,
  after: usize,
}

/// Where a copy loop is with the job's end: running, ended and draining, or written.
#[derive(Default)]
pub struct End {
  drain: DrainOptions,
  ended: Option<Ended>,
  written: bool,
  /// The job's deadline fell before its end (see `deadline`): the exit file says so.
  timed_out: bool,
}

impl End {
  /// Whether the job's end is known.
  pub fn known(&self) -> bool {
    self.ended.is_some()
  }

  /// Whether the exit file is written.
  pub fn written(&self) -> bool {
    self.written
  }

  /// The job ended now, as `info` says (only the first end counts).
  pub fn ended(&mut self, info: ExitInfo) {
    if self.ended.is_none() {
      let at_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
      let now = Instant::now();
      self.ended = Some(Ended { info, at_ms, at: now, quiet_since: now, after: 0 });
    }
  }

  /// The job's deadline fell while it ran: its end, whatever it is, is recorded as timed out.
  pub fn timed_out(&mut self) {
    if self.ended.is_none() {
      self.timed_out = true;
    }
  }

  /// `n` bytes of output were read.
  pub fn read(&mut self, n: usize) {
    if let (Some(e), false) = (&mut self.ended, self.written) {
      e.after += n;
      e.quiet_since = Instant::now();
    }
  }

  /// While draining, how long until the rule lets the exit be written if nothing is read
  /// meanwhile; `None` before the end and once written.
  pub fn left(&self) -> Option<Duration> {
    let e = self.ended.as_ref().filter(|_| !self.written)?;
    Some(self.drain.idle.saturating_sub(e.quiet_since.elapsed()).min(self.drain.max_wait.saturating_sub(e.at.elapsed())))
  }

  /// Writes the exit file once the rule allows (`pipe_open`: someone still holds the output
  /// pipe). False only when it could not be written because the session directory is gone
  /// (see `files::write_exit`).
  pub fn settle(&mut self, pipe_open: bool, exit: &Path) -> bool {
    let (Some(e), false) = (&self.ended, self.written) else { return true };
    let d = &self.drain;
    if pipe_open && e.quiet_since.elapsed() < d.idle && e.after < d.byte_cap && e.at.elapsed() < d.max_wait {
      return true;
    }
    self.written = files::write_exit(exit, &exit_text(&e.info.to_json_at(e.at_ms), self.timed_out));
    self.written
  }
}

/// The exit file's text: `json` (one object and a newline), with `"timedOut":true` as its
/// last key when the deadline ended the job.
fn exit_text(json: &str, timed_out: bool) -> String {
  match json.trim_end().strip_suffix('}') {
    Some(head) if timed_out => format!("{head},\"timedOut\":true}}\n"),
    _ => json.to_owned(),
  }
}

#[cfg(test)]
mod tests {
  use super::exit_text;

  #[test]
  fn a_timed_out_end_says_so_as_its_last_key() {
    let json = "{\"code\":null,\"signal\":15,\"exitedAt\":7}\n";
    assert_eq!(exit_text(json, true), "{\"code\":null,\"signal\":15,\"exitedAt\":7,\"timedOut\":true}\n");
    assert_eq!(exit_text(json, false), json);
  }
}
