//! The answers a terminal gives to the queries a program writes to it.
//!
//! `vt100` draws the screen and hands every control sequence it does not draw to its
//! [`Callbacks`](vt100::Callbacks); the queries among them are answered here, into a buffer
//! the terminal takes after each feed. Its parser (`vte`) keeps its state between feeds, so
//! a query split across reads (`ESC` in one, `[6n` in the next) is answered once whole.
//!
//! Answered, as xterm words them (ctlseqs), with 1-based rows and columns:
//!
//! | query | what | answer |
//! |---|---|---|
//! | `CSI 5 n` | DSR, operating status | `CSI 0 n` (no malfunction) |
//! | `CSI 6 n` | DSR, cursor position (CPR) | `CSI row ; col R` |
//! | `CSI ? 6 n` | DECXCPR, cursor position | `CSI ? row ; col ; 1 R` (page 1) |
//! | `CSI c`, `CSI 0 c` | primary device attributes (DA1) | `CSI ? 62 ; 22 c`: a VT220-class terminal with ANSI colour |
//! | `CSI > c`, `CSI > 0 c` | secondary device attributes (DA2) | `CSI > 1 ; 0 ; 0 c`: VT220, firmware 0 |
//! | `CSI = c`, `CSI = 0 c` | tertiary device attributes (DA3) | `DCS ! \| 00000000 ST` (unit id 0) |
//! | `CSI > q`, `CSI > 0 q` | XTVERSION, name and version | `DCS > \| procward(<version>) ST` |
//! | `CSI ? mode $ p` | DECRQM, a DEC private mode | `CSI ? mode ; state $ y` |
//! | `CSI mode $ p` | DECRQM, an ANSI mode | `CSI mode ; 0 $ y` (none is implemented) |
//! | `CSI 18 t`, `CSI 19 t` | text area / screen size in cells | `CSI 8 ; rows ; cols t`, `CSI 9 ; rows ; cols t` |
//! | `OSC 10 ; ?`, `OSC 11 ; ?` | default foreground / background colour | `OSC 10 ; rgb:0000/0000/0000 ST`, `OSC 11 ; rgb:ffff/ffff/ffff ST` (xterm's defaults, black on white: the screen has no colours of its own to report) |
//!
//! DECRQM states: 1 set, 2 reset, 3 permanently set (autowrap, 7), 0 not recognised. The
//! private modes the emulator keeps are reported as they stand: 1 (application cursor
//! keys), 25 (cursor visible), 47/1047/1049 (alternate screen), 66 (application keypad),
//! 9/1000/1002/1003 (mouse reporting), 1005/1006 (mouse encodings), 2004 (bracketed paste).
//!
//! Not answered, on purpose: queries whose honest answer does not exist here (pixel sizes,
//! `CSI 14 t`; the kitty keyboard protocol, `CSI ? u`; termcap strings, `DCS + q`), and the
//! ones xterm itself disables as unsafe because the answer echoes text the job chose (the
//! window title, `CSI 21 t`; the clipboard, `OSC 52`). A program probing those fences its
//! query with DA1, as the convention is, and reads the DA1 answer as "not supported".
//! Nothing in an answer comes from the job's output but numbers the emulator parsed, so
//! job output cannot make the terminal type text of its choosing into the job's input.
//!
//! Cursor reports are the absolute position on the screen, also under origin mode (DECOM).

use std::fmt::Write as _;

/// Most bytes of answers one feed collects: a chunk made of queries (`yes $'\e[6n'`) must
/// not make the host build megabytes of answers; a terminal whose input is that full would
/// not get them to the program either.
pub(crate) const MAX_ANSWER_BYTES: usize = 4096;

/// String terminator (`ESC \`), which ends DCS and OSC answers.
const ST: &str = "\x1b\\";

/// The callbacks `vt100` calls for what it does not draw: collects the answers.
#[derive(Debug, Default)]
pub(crate) struct Answers {
  out: Vec<u8>,
}

impl Answers {
  /// The answers collected since the last call.
  pub(crate) fn take(&mut self) -> Vec<u8> {
    std::mem::take(&mut self.out)
  }

  fn push(&mut self, answer: &str) {
    if self.out.len() + answer.len() <= MAX_ANSWER_BYTES {
      self.out.extend_from_slice(answer.as_bytes());
    }
  }
}

/// The first parameter of a sequence (0 when absent, as the standards default it).
fn first(params: &[&[u16]]) -> u16 {
  params.first().and_then(|p| p.first()).copied().unwrap_or(0)
}

/// The cursor as a 1-based `(row, col)`; a cursor waiting to wrap past the last column
/// reports the last column, as xterm does.
fn cursor(screen: &vt100::Screen) -> (u32, u32) {
  let (row, col) = screen.cursor_position();
  let cols = screen.size().1.get();
  (u32::from(row) + 1, u32::from(col.min(cols - 1)) + 1)
}

/// The DECRQM state of a DEC private mode: 1 set, 2 reset, 3 permanently set, 0 unknown.
fn private_mode(screen: &vt100::Screen, mode: u16) -> u8 {
  use vt100::{MouseProtocolEncoding as E, MouseProtocolMode as M};
  let flag = |on: bool| if on { 1 } else { 2 };
  match mode {
    1 => flag(screen.application_cursor()),
    7 => 3,
    25 => flag(!screen.hide_cursor()),
    47 | 1047 | 1049 => flag(screen.alternate_screen()),
    66 => flag(screen.application_keypad()),
    9 => flag(screen.mouse_protocol_mode() == M::Press),
    1000 => flag(screen.mouse_protocol_mode() == M::PressRelease),
    1002 => flag(screen.mouse_protocol_mode() == M::ButtonMotion),
    1003 => flag(screen.mouse_protocol_mode() == M::AnyMotion),
    1005 => flag(screen.mouse_protocol_encoding() == E::Utf8),
    1006 => flag(screen.mouse_protocol_encoding() == E::Sgr),
    2004 => flag(screen.bracketed_paste()),
    _ => 0,
  }
}

/// The answer to a control sequence `CSI i1 i2 params c`, if it is a query answered here.
fn answer_csi(screen: &vt100::Screen, i1: Option<u8>, i2: Option<u8>, params: &[&[u16]], c: char) -> Option<String> {
  let p = first(params);
  let (rows, cols) = (screen.size().0.get(), screen.size().1.get());
  let mut s = String::new();
  match (i1, i2, c, p) {
    (None, None, 'n', 5) => s.push_str("\x1b[0n"),
    (None, None, 'n', 6) => {
      let (r, c) = cursor(screen);
      let _ = write!(s, "\x1b[{r};{c}R");
    }
    (Some(b'?'), None, 'n', 6) => {
      let (r, c) = cursor(screen);
      let _ = write!(s, "\x1b[?{r};{c};1R");
    }
    (None, None, 'c', 0) => s.push_str("\x1b[?62;22c"),
    (Some(b'>'), None, 'c', 0) => s.push_str("\x1b[>1;0;0c"),
    (Some(b'='), None, 'c', 0) => {
      let _ = write!(s, "\x1bP!|00000000{ST}");
    }
    (Some(b'>'), None, 'q', 0) => {
      let _ = write!(s, "\x1bP>|procward({}){ST}", env!("CARGO_PKG_VERSION"));
    }
    (Some(b'?'), Some(b'$'), 'p', mode) => {
      let _ = write!(s, "\x1b[?{mode};{}$y", private_mode(screen, mode));
    }
    (Some(b'$'), None, 'p', mode) => {
      let _ = write!(s, "\x1b[{mode};0$y");
    }
    (None, None, 't', 18) => {
      let _ = write!(s, "\x1b[8;{rows};{cols}t");
    }
    (None, None, 't', 19) => {
      let _ = write!(s, "\x1b[9;{rows};{cols}t");
    }
    _ => return None,
  }
  Some(s)
}

impl vt100::Callbacks for Answers {
  fn unhandled_csi(&mut self, screen: &mut vt100::Screen, i1: Option<u8>, i2: Option<u8>, params: &[&[u16]], c: char) {
    if let Some(answer) = answer_csi(screen, i1, i2, params, c) {
      self.push(&answer);
    }
  }

  fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
    let answer = match params {
      [b"10", b"?"] => "\x1b]10;rgb:0000/0000/0000",
      [b"11", b"?"] => "\x1b]11;rgb:ffff/ffff/ffff",
      _ => return,
    };
    self.push(&format!("{answer}{ST}"));
  }
}
