//! What drawing a job's output costs, in cells touched, so drawing is bounded by work and
//! not by bytes.
//!
//! Most bytes draw one cell, but some sequences touch far more than their length: REP
//! (`CSI Ps b`, up to the whole screen for nine bytes), erase in display (`CSI J`), insert
//! and delete lines (`CSI L`, `CSI M`), scroll (`CSI S`, `CSI T`), scroll regions and
//! mode switches that clear or swap the screen (`CSI r`, `CSI ? 1049 h`), a reset
//! (`ESC c`); a line feed may scroll (a new row of `cols` cells); erase, insert and delete
//! characters (`CSI X`, `CSI @`, `CSI P`, `CSI K`) touch a row. Every byte counts one, and
//! each of these counts what it may touch at most (`vt100` bounds every count by the screen
//! or the row): a job flooding with them spends its budget of work per turn, not its
//! budget of bytes (`terminal/feed.rs`).

/// Where the meter is in a control sequence.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
  #[default]
  Ground,
  /// After ESC.
  Escape,
  /// After `ESC [`: the first parameter so far (saturating as vte's u16 does).
  Csi { first: u32, in_first: bool },
}

/// Counts the cost of output as it is fed, keeping its place in a sequence split across
/// feeds.
#[derive(Debug, Default)]
pub(super) struct CostMeter {
  state: State,
}

impl CostMeter {
  /// How many of `bytes` fit in `budget` cells of work on a `rows` × `cols` screen (at
  /// least one when `bytes` is not empty, so drawing always goes on), and what they cost.
  pub(super) fn take(&mut self, bytes: &[u8], rows: u16, cols: u16, budget: u64) -> (usize, u64) {
    let (cells, cols) = (u64::from(rows) * u64::from(cols), u64::from(cols));
    let mut spent = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
      spent += 1 + self.step(b, cells, cols);
      if spent >= budget {
        return (i + 1, spent);
      }
    }
    (bytes.len(), spent)
  }

  /// The cells one byte may touch beyond its own.
  fn step(&mut self, b: u8, cells: u64, cols: u64) -> u64 {
    match self.state {
      State::Ground => {
        if b == 0x1b {
          self.state = State::Escape;
        }
        // LF, VT, FF may scroll the screen or region up.
        if (0x0a..=0x0c).contains(&b) {
          cols
        } else {
          0
        }
      }
      State::Escape => {
        self.state = State::Ground;
        match b {
          b'[' => {
            self.state = State::Csi { first: 0, in_first: true };
            0
          }
          0x1b => {
            self.state = State::Escape;
            0
          }
          // IND, NEL, RI scroll; RIS clears everything.
          b'D' | b'E' | b'M' => cols,
          b'c' => cells,
          _ => 0,
        }
      }
      State::Csi { first, in_first } => match b {
        b'0'..=b'9' if in_first => {
          self.state = State::Csi { first: (first * 10 + u32::from(b - b'0')).min(u32::from(u16::MAX)), in_first };
          0
        }
        b'0'..=b'9' | b';' | b':' | b'<'..=b'?' | 0x20..=0x2f => {
          self.state = State::Csi { first, in_first: false };
          0
        }
        0x1b => {
          self.state = State::Escape;
          0
        }
        // C0 controls run inside a sequence and leave it open.
        0x00..=0x1a | 0x1c..=0x1f => {
          if (0x0a..=0x0c).contains(&b) {
            cols
          } else {
            0
          }
        }
        final_byte => {
          self.state = State::Ground;
          match final_byte {
            b'b' => u64::from(first.max(1)).min(cells),
            b'J' | b'L' | b'M' | b'S' | b'T' | b'r' | b'h' | b'l' => cells,
            b'@' | b'P' | b'X' | b'K' => cols,
            _ => 0,
          }
        }
      },
    }
  }
}

#[cfg(test)]
mod tests {
  use super::CostMeter;

  #[test]
  fn plain_text_costs_its_length_and_a_line_feed_a_row() {
    let mut m = CostMeter::default();
    assert_eq!(m.take(b"hello", 24, 80, u64::MAX), (5, 5));
    assert_eq!(m.take(b"a\n", 24, 80, u64::MAX), (2, 2 + 80));
  }

  #[test]
  fn a_rep_costs_its_count_up_to_the_screen_even_split_across_feeds() {
    let mut m = CostMeter::default();
    assert_eq!(m.take(b"x\x1b[65535b", 256, 512, u64::MAX).1, 9 + 65535);
    assert_eq!(m.take(b"x\x1b[655", 24, 80, u64::MAX).1, 6);
    assert_eq!(m.take(b"35b", 24, 80, u64::MAX).1, 3 + 24 * 80);
    assert_eq!(m.take(b"\x1b[7b", 24, 80, u64::MAX).1, 4 + 7);
  }

  #[test]
  fn screen_wide_sequences_cost_the_screen_and_row_ones_a_row() {
    for seq in [&b"\x1b[2J"[..], b"\x1b[999L", b"\x1b[5M", b"\x1b[9S", b"\x1b[T", b"\x1b[1;5r", b"\x1b[?1049h", b"\x1bc"] {
      let (_, cost) = CostMeter::default().take(seq, 10, 20, u64::MAX);
      assert!(cost >= 200, "{seq:?} cost {cost}");
    }
    for seq in [&b"\x1b[999X"[..], b"\x1b[5@", b"\x1b[P", b"\x1b[K"] {
      let (_, cost) = CostMeter::default().take(seq, 10, 20, u64::MAX);
      assert!((20..200).contains(&cost), "{seq:?} cost {cost}");
    }
  }

  #[test]
  fn the_budget_stops_the_take_after_the_byte_that_spends_it() {
    let flood = b"x\x1b[65535b".repeat(100);
    let mut m = CostMeter::default();
    let (n, cost) = m.take(&flood, 256, 512, 3 * (9 + 65535));
    assert_eq!(n, 27, "three REPs fit");
    assert_eq!(cost, 3 * (9 + 65535));
    assert_eq!(m.take(b"", 256, 512, 1), (0, 0));
    assert_eq!(CostMeter::default().take(b"abc", 1, 1, 0).0, 1, "always one byte");
  }
}
