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
}

impl From<core::terminal::Screen> for TerminalScreen {
  fn from(s: core::terminal::Screen) -> Self {
    TerminalScreen {
      lines: s.lines,
      cursor: ScreenCursor { row: s.cursor_row.into(), col: s.cursor_col.into(), visible: s.cursor_visible },
      cols: s.cols.into(),
      rows: s.rows.into(),
      alternate_screen: s.alternate_screen,
    }
  }
}
