//! Watch patterns: the regular expressions a session's output lines are matched against.
//!
//! Patterns come from agents and from records in the state directory, so both are hostile
//! input. A backtracking engine (JavaScript's `RegExp`) can take exponential time on one
//! short line (`(a|a)*c` against 28 `a`s froze the host for 40 s), so patterns run in the
//! `regex` crate, whose time is linear in the line. Linear is not yet cheap: when its lazy
//! DFA gives up (a pattern set whose automaton has many states, such as 32 patterns
//! `x{1,500}y`), the crate falls back to simulating the automaton, at about 5 to 13 ns per
//! state and byte, 15 to 27 s for one 64 KiB line. So both factors are bounded:
//!
//! - at most [`MAX_PATTERNS`] patterns per session, each at most [`MAX_PATTERN_CHARS`]
//!   characters, compiling to at most [`COMPILED_SIZE_LIMIT`] bytes and
//!   [`MAX_STATES`] automaton states (Unicode classes such as `\w` and counted repetitions
//!   are what makes states);
//! - a line is matched on its first [`WatchPatterns::line_bytes`] bytes: [`MAX_LINE_BYTES`]
//!   for sets of up to [`LINE_WORK`] / [`MAX_LINE_BYTES`] states, less for bigger ones, so
//!   one line costs at most about [`LINE_WORK`] state-bytes (about 0.1 s) whatever happens;
//! - [`WatchPatterns::match_lines`] stops at a time budget, so a flood of lines cannot hold
//!   the caller either;
//! - all patterns of a session are one [`regex::RegexSet`]: a line costs one pass, however
//!   many patterns there are.
//!
//! The syntax is the `regex` crate's: look-around and backreferences are refused (they have
//! no linear-time algorithm), with the engine's reason in the error.

use crate::error::{Error, Result};
use regex::{RegexSet, RegexSetBuilder};
use regex_automata::nfa::thompson;
use std::time::{Duration, Instant};

/// Patterns a session may have.
pub const MAX_PATTERNS: usize = 32;
/// Characters (Unicode scalar values) a pattern may have.
pub const MAX_PATTERN_CHARS: usize = 512;
/// Bytes the compiled program of one session's patterns may take (`RegexSetBuilder::size_limit`).
pub const COMPILED_SIZE_LIMIT: usize = 1 << 20;
/// Bytes of the lazy DFA's cache per session: past it the engine falls back to a slower
/// automaton that is still linear, so this bounds memory, not correctness.
const DFA_CACHE_LIMIT: usize = 1 << 20;
/// Automaton (Thompson NFA) states one session's patterns may compile to.
pub const MAX_STATES: usize = 16384;
/// Bytes of a line that are matched at most; the rest of a longer line is never looked at.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// States times bytes one line may cost: about 0.1 s at the fallback's 13 ns per state-byte.
pub const LINE_WORK: usize = 8 << 20;

/// How one line fared in [`WatchPatterns::match_lines`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineMatch {
  /// The index of the first pattern that matched.
  Pattern(usize),
  /// No pattern matched.
  None,
  /// Not matched: the time budget was spent on earlier lines.
  Skipped,
}

/// A session's compiled watch patterns.
#[derive(Debug, Clone)]
pub struct WatchPatterns {
  set: RegexSet,
  line_bytes: usize,
}

impl WatchPatterns {
  /// Compiles `patterns` (in their order: the first match wins).
  ///
  /// Errors: [`Error::InvalidInput`] when there are more than [`MAX_PATTERNS`], when one is
  /// empty or longer than [`MAX_PATTERN_CHARS`], when the engine rejects one (look-around,
  /// backreferences, a syntax error: the engine's reason is in the message) or when the set
  /// compiles to more than [`COMPILED_SIZE_LIMIT`] bytes.
  pub fn compile<S: AsRef<str>>(patterns: &[S]) -> Result<Self> {
    if patterns.len() > MAX_PATTERNS {
      return Err(Error::InvalidInput(format!("{} watch patterns given, at most {MAX_PATTERNS} per session", patterns.len())));
    }
    for (i, p) in patterns.iter().enumerate() {
      let p = p.as_ref();
      if p.is_empty() {
        return Err(Error::InvalidInput(format!("watch pattern {} is empty (it would match every line)", i + 1)));
      }
      // Counting stops at the limit: a record may hold a pattern of any length.
      if p.chars().nth(MAX_PATTERN_CHARS).is_some() {
        return Err(Error::InvalidInput(format!("watch pattern {} is longer than {MAX_PATTERN_CHARS} characters", i + 1)));
      }
      // Parsed alone (cheap: nothing is compiled), so a syntax error names its pattern.
      regex_automata::util::syntax::parse(p).map_err(|e| {
        Error::InvalidInput(format!("watch pattern {} ({}) is not accepted: {}", i + 1, quoted(p), syntax_reason(&e.to_string())))
      })?;
    }
    let all: Vec<&str> = patterns.iter().map(AsRef::as_ref).collect();
    let set = RegexSetBuilder::new(&all).size_limit(COMPILED_SIZE_LIMIT).dfa_size_limit(DFA_CACHE_LIMIT).build().map_err(|e| {
      let which = if let [p] = all.as_slice() {
        format!("watch pattern 1 ({}) is", quoted(p))
      } else {
        "the watch patterns together are".to_string()
      };
      Error::InvalidInput(format!("{which} not accepted: {}", reason(&e)))
    })?;
    // The same syntax and NFA the set uses, built again only to count its states.
    let states = thompson::Compiler::new()
      .configure(thompson::Config::new().nfa_size_limit(Some(COMPILED_SIZE_LIMIT)))
      .build_many(&all)
      .map(|nfa| nfa.states().len())
      .unwrap_or(usize::MAX);
    if states > MAX_STATES {
      return Err(Error::InvalidInput(format!(
        "the watch patterns together compile to {} automaton states, at most {MAX_STATES} (Unicode classes such as \\w and counted repetitions such as {{1,500}} make states)",
        if states == usize::MAX { "too many".to_string() } else { states.to_string() }
      )));
    }
    Ok(WatchPatterns { set, line_bytes: (LINE_WORK / states.max(1)).min(MAX_LINE_BYTES) })
  }

  /// Bytes at the start of a line that are matched: `min(MAX_LINE_BYTES, LINE_WORK / states)`,
  /// at least 512 bytes.
  pub fn line_bytes(&self) -> usize {
    self.line_bytes
  }

  /// The number of patterns.
  pub fn len(&self) -> usize {
    self.set.len()
  }

  /// Whether there are no patterns (such a set never matches).
  pub fn is_empty(&self) -> bool {
    self.set.is_empty()
  }

  /// The index of the first pattern that matches somewhere in the first
  /// [`line_bytes`](Self::line_bytes) bytes of `line` (cut back to a character boundary).
  pub fn first_match(&self, line: &str) -> Option<usize> {
    let line = head(line, self.line_bytes);
    // Most lines match nothing: `is_match` may stop early, `matches` always reads the line.
    if !self.set.is_match(line) {
      return None;
    }
    self.set.matches(line).iter().next()
  }

  /// [`first_match`](Self::first_match) for each line until `budget` is spent; the lines
  /// after that are [`LineMatch::Skipped`]. The budget is checked before each line, so the
  /// call may exceed it by one line's cost (bounded by [`LINE_WORK`]).
  pub fn match_lines<S: AsRef<str>>(&self, lines: &[S], budget: Duration) -> Vec<LineMatch> {
    let start = Instant::now();
    lines
      .iter()
      .map(|l| {
        if start.elapsed() >= budget {
          return LineMatch::Skipped;
        }
        self.first_match(l.as_ref()).map_or(LineMatch::None, LineMatch::Pattern)
      })
      .collect()
  }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn head(s: &str, max: usize) -> &str {
  if s.len() <= max {
    return s;
  }
  let mut end = max;
  while !s.is_char_boundary(end) {
    end -= 1;
  }
  &s[..end]
}

/// A pattern as JSON-like quoted text, cut to 80 characters (the message must stay readable).
fn quoted(p: &str) -> String {
  let cut: String = p.chars().take(80).collect();
  format!("{:?}{}", cut, if cut.len() < p.len() { "…" } else { "" })
}

/// A parse error on one line: the parser draws the pattern with a caret above its reason.
fn syntax_reason(text: &str) -> String {
  text.lines().filter(|l| l.starts_with("error:")).map(|l| l.trim_start_matches("error:").trim()).collect::<Vec<_>>().join("; ")
}

/// The engine's error on one line.
fn reason(e: &regex::Error) -> String {
  match e {
    regex::Error::Syntax(text) => syntax_reason(text),
    regex::Error::CompiledTooBig(limit) => format!("it compiles to more than {limit} bytes"),
    other => other.to_string(),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn invalid(patterns: &[&str]) -> String {
    match WatchPatterns::compile(patterns) {
      Err(Error::InvalidInput(msg)) => msg,
      other => panic!("expected InvalidInput, got {other:?}"),
    }
  }

  #[test]
  fn the_first_matching_pattern_wins() {
    let set = WatchPatterns::compile(&["ready", "error", "err"]).unwrap();
    assert_eq!(set.first_match("an error here"), Some(1));
    assert_eq!(set.first_match("server ready, no error"), Some(0));
    assert_eq!(set.first_match("nothing"), None);
  }

  #[test]
  fn patterns_that_backtrack_in_javascript_answer_on_hostile_lines() {
    let set = WatchPatterns::compile(&["(a|a)*c", r"(\w|\d)*!x"]).unwrap();
    assert_eq!(set.first_match(&"a".repeat(28)), None);
    assert_eq!(set.first_match(&"a".repeat(MAX_LINE_BYTES)), None);
    assert_eq!(set.first_match(&format!("{}c", "a".repeat(28))), Some(0));
    assert_eq!(set.first_match(&format!("{}!x", "1a".repeat(14))), Some(1));
  }

  #[test]
  fn only_the_head_of_a_long_line_is_matched() {
    let set = WatchPatterns::compile(&["END"]).unwrap();
    assert_eq!(set.first_match(&format!("{}END", "x".repeat(MAX_LINE_BYTES - 3))), Some(0));
    assert_eq!(set.first_match(&format!("{}END", "x".repeat(MAX_LINE_BYTES))), None);
    // A cut inside a multi-byte character moves back to its start instead of panicking.
    let s = format!("{}é", "x".repeat(MAX_LINE_BYTES - 1));
    assert_eq!(head(&s, MAX_LINE_BYTES).len(), MAX_LINE_BYTES - 1);
  }

  #[test]
  fn look_around_and_backreferences_are_refused_with_the_engines_reason() {
    assert!(invalid(&["ok", "(?=a)b"]).contains("watch pattern 2"));
    assert!(invalid(&["(?<!a)b"]).contains("look-around"));
    assert!(invalid(&[r"(a)\1"]).contains("backreferences are not supported"));
    assert!(invalid(&["(unclosed"]).contains("unclosed group"));
  }

  #[test]
  fn count_length_and_compiled_size_are_capped() {
    let many = vec!["a"; MAX_PATTERNS + 1];
    assert!(invalid(&many).contains("at most 32"));
    assert!(WatchPatterns::compile(&vec!["a"; MAX_PATTERNS]).is_ok());
    assert!(invalid(&[&"a".repeat(MAX_PATTERN_CHARS + 1)]).contains("longer than 512"));
    assert!(WatchPatterns::compile(&[&"a".repeat(MAX_PATTERN_CHARS)]).is_ok());
    assert!(invalid(&[r"\w{500}{500}"]).contains("compiles to more than"));
    assert!(invalid(&[""]).contains("empty"));
  }

  #[test]
  fn sets_with_many_automaton_states_are_refused_and_big_sets_match_a_shorter_head() {
    // 32 patterns x{1,480+i}y: 31 811 states, 27 s for one 64 KiB line once the lazy DFA gives up.
    let heavy: Vec<String> = (0..32).map(|i| format!("x{{1,{}}}y", 480 + i)).collect();
    let refusal = invalid(&heavy.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(refusal.contains("the watch patterns together") && refusal.contains("compiles to more than"), "{refusal}");
    let many: Vec<String> = (0..20).map(|i| format!("x{{1,{}}}y", 480 + i)).collect();
    assert!(invalid(&many.iter().map(String::as_str).collect::<Vec<_>>()).contains("automaton states"));
    assert_eq!(WatchPatterns::compile(&["ERROR"]).unwrap().line_bytes(), MAX_LINE_BYTES);
    let big: Vec<String> = (0..7).map(|i| format!("x{{1,{}}}y", 480 + i)).collect();
    let set = WatchPatterns::compile(&big).unwrap();
    assert!(set.line_bytes() < MAX_LINE_BYTES && set.line_bytes() >= LINE_WORK / MAX_STATES, "{}", set.line_bytes());
  }

  #[test]
  fn match_lines_skips_the_lines_after_the_budget() {
    let set = WatchPatterns::compile(&["b"]).unwrap();
    assert_eq!(set.match_lines(&["a", "b"], Duration::from_secs(10)), vec![LineMatch::None, LineMatch::Pattern(0)]);
    assert_eq!(set.match_lines(&["b", "b"], Duration::ZERO), vec![LineMatch::Skipped, LineMatch::Skipped]);
  }
}
