//! The in-memory rolling tail of a job's output, kept natively: the reader thread appends
//! to it and the host reads it only when it needs text (a poll, a page), so an output flood
//! costs the JS side nothing and its memory is bounded by the cap.
//!
//! The tail also remembers whether the bytes it dropped ended inside a private-key block
//! (`starts_in_key_block`), so redaction can mask a block whose BEGIN line has fallen off
//! the front (`ts/policy/redact/keyblock.ts` has the same rules: a BEGIN marker opens a
//! block only when it ends its line, an END marker closes it; PEM, OpenPGP and SSH2
//! markers, `cat -A` line ends). Dropped bytes are scanned once, as they are dropped.

use std::sync::{Arc, Mutex};

/// The last `limit` bytes of a job's (UTF-8) output, and counters.
#[derive(Debug)]
pub struct Tail {
  buf: Vec<u8>,
  start: usize,
  limit: usize,
  total: u64,
  /// Whether `buf[..scanned]` ended inside a private-key block.
  in_key: bool,
  /// Markers starting before this index of `buf` have been taken into `in_key`.
  scanned: usize,
}

const NEEDLE: &[u8] = b"PRIVATE KEY";
/// The longest marker: dashes, a 50-byte label, the needle, ` BLOCK-----`.
const MARKER_MAX: usize = 5 + 50 + 11 + 11;

/// The kind and start of the key marker whose `PRIVATE KEY` sits at `at`: `Some((true, start))`
/// for a BEGIN that ends its line, `Some((false, start))` for an END, `None` for prose.
fn marker_at(buf: &[u8], at: usize) -> Option<(bool, usize)> {
  let after = at + NEEDLE.len();
  let rest = &buf[after..];
  // PEM's `-----` or OpenPGP's ` BLOCK-----`, and the SSH2 / RFC 4716 form's ` ----`
  // (`---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`): ` BLOCK`, a space, then 4 or 5 dashes.
  let mut close = if rest.starts_with(b" BLOCK") { 6 } else { 0 };
  if rest[close..].starts_with(b" ") {
    close += 1;
  }
  let dashes = rest[close..].iter().take(5).take_while(|&&b| b == b'-').count();
  if dashes < 4 {
    return None;
  }
  let end = after + close + dashes;
  // Back over the label (`BEGIN RSA `, `END `: capitals, digits, spaces) to the dashes.
  let lo = at.saturating_sub(50);
  let mut i = at;
  while i > lo && matches!(buf[i - 1], b'A'..=b'Z' | b'0'..=b'9' | b' ') {
    i -= 1;
  }
  let mut label = &buf[i..at];
  // `---- BEGIN` (SSH2): the space after the dashes is not the label's.
  if let [b' ', rest @ ..] = label {
    label = rest;
  }
  let open = buf[..i].iter().rev().take(5).take_while(|&&b| b == b'-').count();
  if open < 4 {
    return None;
  }
  let begin = if label.starts_with(b"BEGIN ") {
    true
  } else if label.starts_with(b"END ") {
    false
  } else {
    return None;
  };
  let start = i - open;
  // A marker ends its line (an END also its quoted string), or it is prose.
  // Trailing blanks and colour codes (`grep --color`) do not count.
  let mut tail = &buf[end..];
  loop {
    if let [b' ' | b'\t', rest @ ..] = tail {
      tail = rest;
    } else if let Some(n) = invisible_len(tail) {
      // A NUL, DEL or zero-width character shows as nothing: the marker still ends its line.
      tail = &tail[n..];
    } else if let [0x1b, b'[', rest @ ..] = tail {
      // CSI: parameter and intermediate bytes, then one final byte.
      let n = rest.iter().position(|b| (0x40..=0x7e).contains(b)).map_or(rest.len(), |p| p + 1);
      tail = &rest[n..];
    } else if let [b'^', b'M', rest @ ..] = tail {
      // `cat -A` shows a carriage return as `^M` and the line end as `$`.
      tail = rest;
    } else if tail.starts_with(b"$") && matches!(tail.get(1), None | Some(b'\n' | b'\r')) {
      tail = &tail[1..];
    } else {
      break;
    }
  }
  let ends_line =
    tail.is_empty() || matches!(tail[0], b'\n' | b'\r') || tail.starts_with(b"\\n") || (!begin && matches!(tail[0], b'"' | b'\''));
  if !ends_line {
    return None;
  }
  Some((begin, start))
}

/// The length of the invisible character `bytes` starts with, if it does: a C0 control other
/// than a line break, tab or ESC, DEL, or a zero-width format character (U+200B-U+200D,
/// U+2060, U+FEFF). Same set as `INVISIBLE` in `ts/policy/redact/keyblock.ts`.
fn invisible_len(bytes: &[u8]) -> Option<usize> {
  match bytes {
    [c, ..] if (*c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r' | 0x1b)) || *c == 0x7f => Some(1),
    [0xe2, 0x80, 0x8b..=0x8d, ..] | [0xe2, 0x81, 0xa0, ..] | [0xef, 0xbb, 0xbf, ..] => Some(3),
    _ => None,
  }
}

/// A tail shared between the reader thread and the host.
pub type SharedTail = Arc<Mutex<Tail>>;

impl Tail {
  pub fn new(limit: usize) -> Self {
    Tail { buf: Vec::new(), start: 0, limit, total: 0, in_key: false, scanned: 0 }
  }

  pub fn shared(limit: usize) -> SharedTail {
    Arc::new(Mutex::new(Tail::new(limit)))
  }

  /// Appends text, dropping the oldest bytes beyond the limit.
  pub fn append(&mut self, text: &str) {
    self.total += text.len() as u64;
    self.buf.extend_from_slice(text.as_bytes());
    let held = self.buf.len() - self.start;
    if held > self.limit {
      self.drop_to(self.start + held - self.limit);
    }
    // Compact once the dropped prefix outweighs what is kept; a few dropped bytes stay so a
    // key marker cut by the front is still recognised.
    let keep = self.start.min(4 * MARKER_MAX);
    if self.start - keep > self.limit.max(64 * 1024) {
      let cut = self.start - keep;
      self.buf.drain(..cut);
      self.start -= cut;
      self.scanned -= cut;
    }
  }

  /// Moves the front to `start`, or past it to the next whole character (a UTF-8 sequence
  /// is kept whole or dropped whole, so `dropped` counts every byte the text no longer
  /// holds), taking the key markers of the dropped bytes into the state.
  fn drop_to(&mut self, mut start: usize) {
    while start < self.buf.len() && self.buf[start] & 0xC0 == 0x80 {
      start += 1;
    }
    self.start = start;
    // A marker whose end has not arrived yet is decided on a later append.
    let decided = start.min(self.buf.len().saturating_sub(MARKER_MAX + 2));
    if decided > self.scanned {
      self.in_key = self.key_state(decided);
      self.scanned = decided;
    }
  }

  /// The key-block state at `upto`, from the state at `scanned`: the last marker starting
  /// in between decides.
  fn key_state(&self, upto: usize) -> bool {
    let mut state = self.in_key;
    let from = self.scanned.saturating_sub(MARKER_MAX);
    let to = (upto + MARKER_MAX).min(self.buf.len());
    let mut at = from;
    while at < to {
      let Some(p) = self.buf[at..to].windows(NEEDLE.len()).position(|w| w == NEEDLE) else { break };
      let n = at + p;
      if let Some((begin, m)) = marker_at(&self.buf, n) {
        if m >= self.scanned && m < upto {
          state = begin;
        }
      }
      at = n + NEEDLE.len();
    }
    state
  }

  /// Whether the retained text starts inside a private-key block whose BEGIN line was
  /// dropped (see the module docs).
  pub fn starts_in_key_block(&self) -> bool {
    if self.start > self.scanned {
      self.key_state(self.start)
    } else {
      self.in_key
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
      self.drop_to(self.start + held - limit);
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

  /// Issue 28, kind 3: what was dropped is counted in the bytes the text no longer holds,
  /// whole characters included: never fewer than the bytes gone.
  #[test]
  fn counts_a_character_cut_by_the_limit_as_dropped() {
    for (input, limit, kept, dropped) in
      [("a🎉bc", 3, "bc", 5), ("éééxy", 3, "xy", 6), ("日本語", 4, "語", 6), ("x🎉", 2, "", 5), ("abc", 3, "abc", 0)]
    {
      let mut t = Tail::new(limit);
      t.append(input);
      assert_eq!(
        (t.text().as_str(), t.dropped(), t.held() as u64 + t.dropped()),
        (kept, dropped, input.len() as u64),
        "{input:?} at {limit}"
      );
    }
    // Chunk by chunk, the same.
    let mut t = Tail::new(3);
    for part in ["a", "🎉", "b", "c"] {
      t.append(part);
    }
    assert_eq!((t.text().as_str(), t.dropped()), ("bc", 5));
  }

  const KEY: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA44AKKB/PRg0UpksGh9iiRlcFmgZvEgvSvrblBKb5KqMxsOGl\nJU7XLI2pRLkr0ZctDLig/N94yOky2YalQXv8M57zrQIRXrUAIfOibj4KXRr7XUdM\n-----END RSA PRIVATE KEY-----\n";

  #[test]
  fn knows_when_its_front_was_dropped_inside_a_key_block() {
    // Every cut through the block, in pieces of every size: inside between the end of the
    // BEGIN marker's start and the END marker's start, outside elsewhere.
    let text = format!("log line\n{KEY}after\n");
    let begin = text.find("-----BEGIN").unwrap();
    let end = text.find("-----END").unwrap();
    for piece in [1, 3, 7, 64, 1000] {
      for keep in 1..text.len() {
        let mut t = Tail::new(keep);
        let mut at = 0;
        while at < text.len() {
          let to = (at + piece).min(text.len());
          t.append(&text[at..to]);
          at = to;
        }
        let cut = text.len() - keep;
        assert_eq!(t.starts_in_key_block(), cut > begin && cut <= end, "piece {piece}, cut {cut}");
      }
    }
  }

  #[test]
  fn ssh2_markers_and_cat_a_line_ends_open_and_close_blocks() {
    let body = "AAAAB3NzaC1yc2EAAAADAQABAAABAQC7vbqajDhA2Pw3uG5yRbBJXpO9xVdZr3Kh\n";
    for (begin, end) in [
      ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n", "---- END SSH2 ENCRYPTED PRIVATE KEY ----\n"),
      ("-----BEGIN RSA PRIVATE KEY-----$\n", "-----END RSA PRIVATE KEY-----$\n"),
      ("-----BEGIN RSA PRIVATE KEY-----^M$\n", "-----END RSA PRIVATE KEY-----^M$\n"),
    ] {
      let mut t = Tail::new(body.len());
      t.append(&format!("log\n{begin}{body}{body}"));
      assert!(t.starts_in_key_block(), "inside after {begin:?}");
      let mut t = Tail::new(4);
      t.append(&format!("log\n{begin}{body}{end}after\n"));
      assert!(!t.starts_in_key_block(), "closed by {end:?}");
    }
    // Three dashes, or a `$` that does not end the line, are not markers.
    for prose in ["--- BEGIN SSH2 ENCRYPTED PRIVATE KEY ---\n", "-----BEGIN RSA PRIVATE KEY-----$ and more\n"] {
      let mut t = Tail::new(body.len());
      t.append(&format!("{prose}{body}{body}"));
      assert!(!t.starts_in_key_block(), "{prose:?}");
    }
  }

  #[test]
  fn a_coloured_begin_line_still_opens_a_block() {
    let mut t = Tail::new(8);
    t.append("\x1b[01;31m-----BEGIN RSA PRIVATE KEY-----\x1b[m\x1b[K\nMIIEpAIBAAKCAQEA44AKKB/PRg0UpksGh9iiRlcFmgZvEg\n");
    assert!(t.starts_in_key_block());
  }

  #[test]
  fn invisible_characters_after_a_marker_still_end_its_line() {
    for trailer in ["\0", "\u{7f}", "\u{200b}", "\u{feff}\0 "] {
      let mut t = Tail::new(64);
      t.append(&format!("-----BEGIN RSA PRIVATE KEY-----{trailer}\nMIIEpAIBAAKCAQEA44AKKB/PRg0UpksGh9iiRlcFmgZvEg{trailer}\n"));
      t.append(&"x".repeat(200));
      assert!(t.starts_in_key_block(), "trailer {trailer:?}");
    }
  }

  #[test]
  fn a_marker_quoted_in_prose_opens_no_block() {
    let mut t = Tail::new(8);
    t.append("The -----BEGIN RSA PRIVATE KEY----- header marks PKCS#1 keys.\n");
    assert!(!t.starts_in_key_block());
    let mut t = Tail::new(8);
    t.append("s = \"-----BEGIN PRIVATE KEY-----\\nMIIEvQ\"\n");
    assert!(t.starts_in_key_block());
  }

  #[test]
  fn a_key_larger_than_the_compaction_threshold_stays_masked() {
    let mut t = Tail::new(100);
    t.append("-----BEGIN OPENSSH PRIVATE KEY-----\n");
    for _ in 0..5000 {
      t.append("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n");
    }
    assert!(t.starts_in_key_block());
    t.append("-----END OPENSSH PRIVATE KEY-----\n");
    for _ in 0..10 {
      t.append("ordinary output after the key\n");
    }
    assert!(!t.starts_in_key_block());
  }
}
