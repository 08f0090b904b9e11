//! Redaction's token engine (`procward_core::redact`): the spans it finds, as positions of
//! the JavaScript string.

use napi_derive::napi;
use procward_core as core;

/// The secrets the core's rule set (gitleaks, see `procward_core::redact`) finds in `text`:
/// `[start, end, start, end, …]` in UTF-16 code units of `text` (JavaScript string indices),
/// sorted by start. Ranges of two rules may overlap. Blocks for the length of `text` (one
/// Aho–Corasick pass, then the regexes of the rules whose keywords occur).
#[napi]
pub fn token_spans(text: String) -> Vec<u32> {
  let spans = core::redact::token_spans(text.as_bytes());
  if spans.is_empty() {
    return Vec::new();
  }
  // Byte offsets to UTF-16 indices, in one pass over the text up to the last offset.
  let mut offsets: Vec<usize> = spans.iter().flat_map(|s| [s.start, s.end]).collect();
  offsets.sort_unstable();
  offsets.dedup();
  let mut units = Vec::with_capacity(offsets.len());
  let (mut byte, mut unit) = (0usize, 0u32);
  let mut chars = text.char_indices().peekable();
  for &want in &offsets {
    while byte < want {
      match chars.next() {
        Some((_, c)) => {
          byte += c.len_utf8();
          unit += c.len_utf16() as u32;
        }
        None => break,
      }
    }
    units.push(unit);
  }
  let at = |b: usize| units[offsets.binary_search(&b).unwrap_or(0)];
  spans.iter().flat_map(|s| [at(s.start), at(s.end)]).collect()
}

/// The rule set the core redacts with: its name and version (`gitleaks v8.30.1`).
#[napi]
pub fn token_rule_set() -> String {
  core::redact::rule_set_name()
}
