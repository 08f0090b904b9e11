//! Bounding REP (`CSI Ps b`: repeat the last character Ps times) before the emulator sees it.
//!
//! REP is the one control sequence whose cost is not bounded by the screen: eight bytes
//! (`ESC[65535b`) draw 65 535 characters, so a job could make its host's terminal thread
//! (and a `screen` call) draw billions of characters with a few megabytes. Past the
//! screen's cell count every cell shows the repeated character, and what is left to tell
//! is where the cursor ends, which repeats with the width: so a count over `rows × cols` is
//! lowered to `rows × cols + (count − rows × cols) mod cols`, which draws the same screen
//! and leaves the cursor where the full count would. (In a scroll region smaller than the
//! screen the rows outside it would have been left alone either way.)
//!
//! Only `ESC [` digits `b` with no private marker or intermediate is REP (vt100 takes the
//! first parameter as the count). Bytes pass through as they come, except the parameters of
//! a control sequence, held until its final byte (at most [`MAX_HELD`] of them, then they
//! are passed on as they are): a sequence cannot take effect before its final byte anyway,
//! so nothing is delayed. C1 CSI (U+009B) is not a control sequence to this emulator.

use std::borrow::Cow;

/// Most bytes of an unfinished control sequence held back between feeds.
const MAX_HELD: usize = 64;

/// Where the filter is in a control sequence.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
  #[default]
  Ground,
  /// After ESC.
  Escape,
  /// After `ESC [`, in the parameters (held).
  Parameters,
}

/// The parameters of a control sequence not finished yet, held (see the module docs).
#[derive(Debug, Default)]
pub(super) struct RepeatGuard {
  state: State,
  held: Vec<u8>,
}

/// The count to draw instead of `count` on a screen of `rows` × `cols` cells.
fn bounded(count: u32, rows: u16, cols: u16) -> u32 {
  let (cells, cols) = (u32::from(rows) * u32::from(cols), u32::from(cols));
  if count <= cells {
    count
  } else {
    cells + (count - cells) % cols
  }
}

impl RepeatGuard {
  /// `bytes` as the emulator should see them: every REP over the screen's cell count lowered
  /// (see the module docs), the parameters of an unfinished control sequence held back.
  pub(super) fn filter<'a>(&mut self, bytes: &'a [u8], rows: u16, cols: u16) -> Cow<'a, [u8]> {
    if self.state == State::Ground && !bytes.contains(&0x1b) {
      return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + self.held.len());
    for &b in bytes {
      match self.state {
        State::Ground | State::Escape => {
          out.push(b);
          self.state = match (self.state, b) {
            (_, 0x1b) => State::Escape,
            (State::Escape, b'[') => State::Parameters,
            _ => State::Ground,
          };
        }
        State::Parameters => match b {
          b'0'..=b'9' | b';' | b':' if self.held.len() < MAX_HELD => self.held.push(b),
          // Too long a list to hold: handed on now, its first parameter bounded as a REP's
          // would be (no other sequence without a private marker counts past the screen).
          b'0'..=b'9' | b';' | b':' => {
            self.held.push(b);
            self.emit(None, &mut out, rows, cols);
            self.state = State::Ground;
          }
          0x40..=0x7e => {
            self.emit(Some(b), &mut out, rows, cols);
            self.state = State::Ground;
          }
          // C0 controls take effect inside a sequence (vte executes them) and leave it open.
          0x00..=0x1a | 0x1c..=0x1f => out.push(b),
          // ESC starts another sequence; a private marker, an intermediate or too long a
          // parameter list make this one something other than REP.
          _ => {
            out.append(&mut self.held);
            out.push(b);
            self.state = if b == 0x1b { State::Escape } else { State::Ground };
          }
        },
      }
    }
    Cow::Owned(out)
  }

  /// Hands on the held parameters and the final byte (`None`: the list goes on unheld),
  /// the first parameter bounded for a REP, or for a list too long to hold.
  fn emit(&mut self, last: Option<u8>, out: &mut Vec<u8>, rows: u16, cols: u16) {
    let params = std::mem::take(&mut self.held);
    let first_len = params.iter().position(|&c| c == b';' || c == b':').unwrap_or(params.len());
    let mut first = params[..first_len].to_vec();
    if matches!(last, None | Some(b'b')) && first_len > 0 {
      // vte keeps a parameter in a u16, saturating.
      let count = first.iter().fold(0u32, |n, d| (n * 10 + u32::from(d - b'0')).min(u32::from(u16::MAX)));
      let lowered = bounded(count, rows, cols);
      if lowered != count {
        first = lowered.to_string().into_bytes();
      }
    }
    out.extend_from_slice(&first);
    out.extend_from_slice(&params[first_len..]);
    out.extend(last);
  }
}
