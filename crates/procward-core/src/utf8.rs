//! Incremental UTF-8 decoding of output chunks.
//!
//! Reads split the byte stream anywhere, including inside a character. The decoder keeps
//! an incomplete trailing sequence (at most 3 bytes) for the next chunk, replaces each
//! invalid sequence with U+FFFD (maximal subparts, as WHATWG and `from_utf8_lossy` do), and
//! turns a sequence still incomplete at EOF into one U+FFFD.

/// Stateful decoder; feed it chunks in order.
#[derive(Debug, Default)]
pub struct Utf8Decoder {
  pending: Vec<u8>,
}

impl Utf8Decoder {
  pub fn new() -> Self {
    Self::default()
  }

  /// Decodes `chunk`, keeping an incomplete trailing sequence for the next call.
  pub fn decode(&mut self, chunk: &[u8]) -> String {
    let joined;
    let mut bytes = if self.pending.is_empty() {
      chunk
    } else {
      self.pending.extend_from_slice(chunk);
      joined = std::mem::take(&mut self.pending);
      &joined[..]
    };
    let mut out = String::with_capacity(bytes.len());
    loop {
      match std::str::from_utf8(bytes) {
        Ok(s) => {
          out.push_str(s);
          return out;
        }
        Err(e) => {
          let (valid, rest) = bytes.split_at(e.valid_up_to());
          // SAFETY-free: `valid` was just validated by from_utf8.
          out.push_str(std::str::from_utf8(valid).unwrap_or_default());
          match e.error_len() {
            Some(n) => {
              out.push('\u{FFFD}');
              bytes = &rest[n..];
            }
            None => {
              self.pending = rest.to_vec();
              return out;
            }
          }
        }
      }
    }
  }

  /// Ends the stream: an incomplete sequence left over becomes one U+FFFD.
  pub fn finish(&mut self) -> String {
    if self.pending.is_empty() {
      String::new()
    } else {
      self.pending.clear();
      "\u{FFFD}".to_string()
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn reassembles_a_character_split_across_chunks() {
    let mut d = Utf8Decoder::new();
    let mut s = d.decode(b"caf\xc3");
    s += &d.decode(b"\xa9 ok\n");
    s += &d.finish();
    assert_eq!(s, "café ok\n");
  }

  #[test]
  fn splits_at_every_byte_of_a_four_byte_char() {
    let text = "a😀b".as_bytes();
    for cut in 0..=text.len() {
      let mut d = Utf8Decoder::new();
      let s = d.decode(&text[..cut]) + &d.decode(&text[cut..]) + &d.finish();
      assert_eq!(s, "a😀b", "cut at {cut}");
    }
  }

  #[test]
  fn invalid_byte_becomes_replacement_and_decoding_goes_on() {
    let mut d = Utf8Decoder::new();
    assert_eq!(d.decode(b"a\xffb"), "a\u{FFFD}b");
  }

  #[test]
  fn truncated_sequence_at_eof_is_one_replacement() {
    let mut d = Utf8Decoder::new();
    assert_eq!(d.decode(b"x\xe2\x82"), "x");
    assert_eq!(d.finish(), "\u{FFFD}");
    assert_eq!(d.finish(), "");
  }
}
