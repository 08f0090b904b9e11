//! The terminal a PTY job writes to: a headless emulator that keeps its screen and answers
//! the queries programs send a terminal.
//!
//! A program on a PTY may ask its terminal for the cursor position (`ESC[6n`) or for the
//! terminal's attributes (`ESC[c`) and wait for the answer, as line editors and TUIs do
//! before they draw a prompt. With nobody to answer, it waits forever. So every byte a PTY
//! job writes also goes through this emulator, which answers into the job's input (the PTY
//! master; the answers never reach the recorded output) and keeps the screen a person
//! would see now ([`Screen`]), which is what an agent driving a TUI needs.
//!
//! The emulator is the `vt100` crate: it parses with `vte` (the state machine of
//! alacritty, which keeps a sequence split across reads), keeps the grid, cursor and modes,
//! and hands what it does not draw to callbacks, where the queries are answered
//! (`terminal/queries.rs` lists them). `alacritty_terminal` answers the same queries
//! itself but brings its own PTY, event loop and config layers (polling, signal-hook,
//! rustix-openpty, parking_lot, serde, miow on Windows) that procward has already;
//! `vt100` is the grid and the parser only (`vte`, `itoa`, `unicode-width`).
//!
//! Drawing is far slower than reading, so it happens on a thread of its own, not on the
//! reactor that reads every job's output (`terminal/feed.rs`: the queue, its cap, the
//! thread).
//!
//! Limits: the emulated screen is at most [`MAX_COLS`] × [`MAX_ROWS`] cells (a larger PTY
//! is emulated at that size; its screen shows the top-left part) and keeps no scrollback,
//! so one session costs at most 4 MiB here whatever size a caller asks for, plus at most
//! [`MAX_BACKLOG`] of output waiting to be drawn. A panic in the emulator (hostile output)
//! resets it instead of ending the job's output capture.

mod cost;
mod feed;
mod queries;
mod repeat;

pub(crate) use feed::answering_sink;
pub use feed::{PtyTerminal, SharedTerminal, MAX_BACKLOG, SCREEN_CATCH_UP, TURN_WORK};

use crate::job::{PtySize, WriteDone};
use cost::CostMeter;
use queries::Answers;
use repeat::RepeatGuard;
use std::num::NonZeroU16;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Widest screen emulated, in columns.
pub const MAX_COLS: u16 = 512;
/// Tallest screen emulated, in rows.
pub const MAX_ROWS: u16 = 256;

/// What a PTY's screen shows now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen {
  /// The text of each row, top to bottom (`rows` of them), without trailing blanks; a wide
  /// character takes one `char` for its two cells.
  pub lines: Vec<String>,
  /// The cursor's row, 0-based from the top.
  pub cursor_row: u16,
  /// The cursor's column, 0-based from the left (`cols` when it waits to wrap after the
  /// last column).
  pub cursor_col: u16,
  /// Height in cells (the PTY's, at most [`MAX_ROWS`]).
  pub rows: u16,
  /// Width in cells (the PTY's, at most [`MAX_COLS`]).
  pub cols: u16,
  /// The program has not hidden the cursor (DECTCEM, `CSI ? 25 l` hides it).
  pub cursor_visible: bool,
  /// The program switched to the alternate screen (`CSI ? 1049 h`, as full-screen TUIs do).
  pub alternate_screen: bool,
  /// For each row, whether its text goes on in the next row (a soft wrap: the line was
  /// longer than the width), so `lines[i]` and `lines[i + 1]` are one logical line.
  pub wrapped: Vec<bool>,
  /// Bytes of output read but not drawn yet (0 when the screen shows all of it; more when
  /// the job writes faster than its screen is drawn and `screen` did not wait for it all).
  pub pending_bytes: usize,
}

/// A PTY job's terminal emulator: fed with the job's output, it keeps the screen and
/// collects the answers to the job's queries.
pub struct Terminal {
  parser: vt100::Parser<Answers>,
  /// Keeps REP from drawing more than the screen holds (`terminal/repeat.rs`).
  repeat: RepeatGuard,
  /// Counts the work the fed output costs (`terminal/cost.rs`).
  cost: CostMeter,
}

impl std::fmt::Debug for Terminal {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str("Terminal")
  }
}

fn cells(size: PtySize) -> (NonZeroU16, NonZeroU16) {
  let clamp = |v: u16, max: u16| NonZeroU16::new(v.clamp(1, max)).expect("clamped to at least 1");
  (clamp(size.rows, MAX_ROWS), clamp(size.cols, MAX_COLS))
}

impl Terminal {
  /// A blank screen of `size` (clamped to 1..=[`MAX_COLS`] × 1..=[`MAX_ROWS`]), the cursor
  /// at the top left.
  pub fn new(size: PtySize) -> Self {
    let (rows, cols) = cells(size);
    Terminal {
      parser: vt100::Parser::new_with_callbacks(rows, cols, 0, Answers::default()),
      repeat: RepeatGuard::default(),
      cost: CostMeter::default(),
    }
  }

  /// Takes the job's output (any bytes, any split) and returns the answers to the queries
  /// it completed, in order: the bytes to write to the job's input (at most 4 KiB a feed;
  /// queries past that go unanswered).
  pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
    let (rows, cols) = self.parser.screen().size();
    let bytes = self.repeat.filter(bytes, rows.get(), cols.get());
    let parser = &mut self.parser;
    if catch_unwind(AssertUnwindSafe(|| parser.process(&bytes))).is_err() {
      // The emulator's state is suspect after a panic: start over with a blank screen.
      let (rows, cols) = self.parser.screen().size();
      *self = Terminal::new(PtySize { rows: rows.get(), cols: cols.get() });
      return Vec::new();
    }
    self.parser.callbacks_mut().take()
  }

  /// Feeds the first of `bytes` that fit in `budget` cells of work (at least one byte;
  /// `terminal/cost.rs`) and returns how many it fed, the work spent, and the answers as
  /// [`Terminal::feed`] does.
  pub fn feed_bounded(&mut self, bytes: &[u8], budget: u64) -> (usize, u64, Vec<u8>) {
    let (rows, cols) = self.parser.screen().size();
    let (n, spent) = self.cost.take(bytes, rows.get(), cols.get(), budget);
    (n, spent, self.feed(&bytes[..n]))
  }

  /// Follows a resize of the PTY (clamped as in [`Terminal::new`]).
  pub fn resize(&mut self, size: PtySize) {
    let (rows, cols) = cells(size);
    self.parser.set_size(rows, cols);
  }

  /// What the screen shows now.
  pub fn screen(&self) -> Screen {
    let s = self.parser.screen();
    let (rows, cols) = s.size();
    let (cursor_row, cursor_col) = s.cursor_position();
    Screen {
      lines: s.rows(0, cols.get()).collect(),
      cursor_row,
      cursor_col,
      rows: rows.get(),
      cols: cols.get(),
      cursor_visible: !s.hide_cursor(),
      alternate_screen: s.alternate_screen(),
      wrapped: (0..rows.get()).map(|r| s.row_wrapped(r)).collect(),
      pending_bytes: 0,
    }
  }
}

/// Writes answers to the job's input, after the writes before them, and reports through
/// the [`WriteDone`] (see `JobInput::answerer`).
pub(crate) type Answerer = Box<dyn Fn(Vec<u8>, WriteDone) + Send + Sync>;

#[cfg(test)]
mod tests;
