//! Watch patterns: the limits, and a session's compiled pattern set.

use crate::map_error;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use procward_core as core;
use std::time::Duration;

/// Watch patterns a session may have.
#[napi]
pub const MAX_WATCH_PATTERNS: u32 = core::patterns::MAX_PATTERNS as u32;
/// Characters a watch pattern may have.
#[napi]
pub const MAX_WATCH_PATTERN_CHARS: u32 = core::patterns::MAX_PATTERN_CHARS as u32;
/// Bytes (UTF-8) at the start of a line that watch patterns are matched against, at most
/// (a set with many automaton states matches fewer: `WatchMatcher.lineBytes`).
#[napi]
pub const MAX_WATCH_LINE_BYTES: u32 = core::patterns::MAX_LINE_BYTES as u32;

/// A session's watch patterns, compiled into one linear-time `regex` set
/// (`procward_core::patterns`).
#[napi]
pub struct WatchMatcher {
  inner: core::patterns::WatchPatterns,
}

#[napi]
impl WatchMatcher {
  /// Compiles `patterns` (`regex` crate syntax). Throws `EINVAL` for more than
  /// `MAX_WATCH_PATTERNS` patterns, an empty one, one longer than `MAX_WATCH_PATTERN_CHARS`
  /// characters, one the engine rejects (look-around, backreferences, syntax: the engine's
  /// reason is in the message) or a set that compiles too big (1 MiB, 16 384 automaton states).
  #[napi(constructor)]
  pub fn new(patterns: Vec<String>) -> Result<Self> {
    Ok(WatchMatcher { inner: core::patterns::WatchPatterns::compile(&patterns).map_err(map_error)? })
  }

  /// Bytes at the start of a line that are matched (512 to `MAX_WATCH_LINE_BYTES`).
  #[napi(getter)]
  pub fn line_bytes(&self) -> u32 {
    self.inner.line_bytes() as u32
  }

  /// For each line, the index of the first pattern that matches in its first `lineBytes`
  /// bytes, -1 when none does, -2 when the line was skipped because `budgetMs` milliseconds
  /// were spent on the lines before it.
  #[napi]
  pub fn match_lines(&self, lines: Vec<String>, budget_ms: f64) -> Vec<i32> {
    // NaN would make `from_secs_f64` panic: no budget, no line.
    let budget = Duration::from_secs_f64(if budget_ms.is_nan() { 0.0 } else { budget_ms.clamp(0.0, 60_000.0) } / 1000.0);
    self
      .inner
      .match_lines(&lines, budget)
      .into_iter()
      .map(|m| match m {
        core::patterns::LineMatch::Pattern(i) => i as i32,
        core::patterns::LineMatch::None => -1,
        core::patterns::LineMatch::Skipped => -2,
      })
      .collect()
  }
}
