//! The in-memory rolling tail of a job's output, kept natively: the reader thread appends
//! to it and the host reads it only when it needs text (a poll, a page), so an output flood
//! costs the JS side nothing and its memory is bounded by the cap.

use std::sync::{Arc, Mutex};

/// The last `limit` bytes of a job's (UTF-8) output, and counters.
#[derive(Debug)]
pub struct Tail {
  buf: Vec<u8>,
  start: usize,
  limit: usize,
  total: u64,
}

/// A tail shared between the reader thread and the host.
pub type SharedTail = Arc<Mutex<Tail>>;

impl Tail {
  pub fn new(limit: usize) -> Self {
    Tail { buf: Vec::new(), start: 0, limit, total: 0 }
  }

  pub fn shared(limit: usize) -> SharedTail {
    Arc::new(Mutex::new(Tail::new(limit)))
  }

  /// Appends text, dropping the oldest bytes beyond the limit.
  pub fn append(&mut self, text: &str) {
    self.total += text.len() as u64;
    if text.len() >= self.limit {
      self.buf.clear();
      self.buf.extend_from_slice(&text.as_bytes()[text.len() - self.limit..]);
      self.start = 0;
      return;
    }
    self.buf.extend_from_slice(text.as_bytes());
    let held = self.buf.len() - self.start;
    if held > self.limit {
      self.start += held - self.limit;
    }
    // Compact once the dropped prefix outweighs what is kept.
    if self.start > self.limit.max(64 * 1024) {
      self.buf.drain(..self.start);
      self.start = 0;
    }
  }

  /// The retained text, starting at a whole character.
  pub fn text(&self) -> String {
    let mut s = &self.buf[self.start..];
    while let Some(&b) = s.first() {
      if b & 0xC0 != 0x80 {
        break;
      }
      s = &s[1..];
    }
    String::from_utf8_lossy(s).into_owned()
  }

  /// Bytes held now.
  pub fn held(&self) -> usize {
    self.buf.len() - self.start
  }

  /// Bytes ever appended.
  pub fn total(&self) -> u64 {
    self.total
  }

  /// Bytes dropped from the front by the limit.
  pub fn dropped(&self) -> u64 {
    self.total - self.held() as u64
  }

  pub fn limit(&self) -> usize {
    self.limit
  }

  /// Changes the limit, trimming at once when it shrinks.
  pub fn set_limit(&mut self, limit: usize) {
    self.limit = limit;
    let held = self.held();
    if held > limit {
      self.start += held - limit;
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn keeps_the_last_bytes_and_counts_the_rest() {
    let mut t = Tail::new(10);
    for _ in 0..100 {
      t.append("abc");
    }
    assert_eq!(t.text(), "cabcabcabc");
    assert_eq!(t.total(), 300);
    assert_eq!(t.dropped(), 290);
  }

  #[test]
  fn never_starts_inside_a_character() {
    let mut t = Tail::new(5);
    t.append("ééé");
    assert_eq!(t.text(), "éé");
    t.set_limit(3);
    assert_eq!(t.text(), "é");
  }
}
