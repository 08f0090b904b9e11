//! A PTY job's screen, as the core's terminal emulator keeps it.

use napi_derive::napi;
use procward_core as core;

/// The cursor on a PTY's screen, in cells, 0-based from the top left.
#[napi(object)]
pub struct ScreenCursor {
  /// Row, 0-based from the top.
  pub row: u32,
  /// Column, 0-based from the left (`cols` while it waits to wrap after the last column).
  pub col: u32,
  /// The program has not hidden it (`CSI ? 25 l` hides it).
  pub visible: bool,
}

/// What a PTY's screen shows now: the text a person would see on the terminal.
#[napi(object)]
pub struct TerminalScreen {
  /// Each row's text, top to bottom (`rows` of them), without trailing blanks; a wide
  /// character is one character for its two cells.
  pub lines: Vec<String>,
  pub cursor: ScreenCursor,
  /// Width in cells: the PTY's, at most 512.
  pub cols: u32,
  /// Height in cells: the PTY's, at most 256.
  pub rows: u32,
  /// The program draws on the alternate screen (`CSI ? 1049 h`), as full-screen TUIs do.
  pub alternate_screen: bool,
  /// For each row, whether its text goes on in the next row (a soft wrap: the line was
  /// longer than the width), so `lines[i]` and `lines[i + 1]` are one logical line.
  pub wrapped: Vec<bool>,
  /// Bytes of output read but not drawn yet: 0 when the screen shows all of it; more when
  /// the job writes faster than its screen is drawn (the screen is as drawn so far).
  pub pending_bytes: u32,
}

impl From<core::terminal::Screen> for TerminalScreen {
  fn from(s: core::terminal::Screen) -> Self {
    TerminalScreen {
      lines: s.lines,
      cursor: ScreenCursor { row: s.cursor_row.into(), col: s.cursor_col.into(), visible: s.cursor_visible },
      cols: s.cols.into(),
      rows: s.rows.into(),
      alternate_screen: s.alternate_screen,
      wrapped: s.wrapped,
      pending_bytes: u32::try_from(s.pending_bytes).unwrap_or(u32::MAX),
    }
  }
}
