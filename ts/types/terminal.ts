/** A PTY session's terminal: its size and what it shows. */
import type { SessionStatus } from '../session/record.js';

/** A terminal's size in cells (columns and rows). */
export interface TerminalSize {
  cols?: number;
  rows?: number;
}

/**
 * What a PTY session's terminal shows now (`ProcessRegistry.screen`): the text a person would
 * see on it, kept by procward's terminal emulator from every byte of the session's output
 * (which also answers the program's terminal queries, such as the cursor position).
 */
export interface TerminalScreen {
  id: string;
  /** `running`, or `exited`: an ended session's screen is the one it left. */
  status: SessionStatus;
  /**
   * The rows' text, top to bottom, without trailing blanks (a wide character is one
   * character for its two cells). Redacted as one text like all output, so a private-key
   * block on screen is masked as one line and there are fewer lines than `rows`.
   */
  lines: string[];
  /**
   * For each of `lines`, whether its line goes on in the next row (a soft wrap: the line
   * was wider than the terminal). Redaction sees the rows of one line joined, so a token
   * wrapped over rows is masked on each of them.
   */
  wrapped: boolean[];
  /** The cursor, in cells, 0-based from the top left (`col` equals `cols` while it waits to wrap); `visible` unless the program hid it. */
  cursor: { row: number; col: number; visible: boolean };
  /** Width in cells: the PTY's, at most 512 (a wider PTY shows its left 512 columns). */
  cols: number;
  /** Height in cells: the PTY's, at most 256 (a taller PTY shows its top 256 rows). */
  rows: number;
  /** The program draws on the alternate screen (`ESC[?1049h`), as full-screen TUIs do. */
  alternateScreen: boolean;
  /**
   * Bytes of output read but not drawn yet: 0 when the screen shows all output so far.
   * Drawing is bounded by work per call, so a job flooding its terminal (costly sequences
   * such as REP or erase in display) is shown as drawn so far and this says how far behind.
   */
  pendingBytes: number;
}
