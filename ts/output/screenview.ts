/**
 * Redaction of a PTY's screen: the rows a person sees, redacted as the logical lines they
 * show. A line longer than the terminal's width is drawn over several rows (a soft wrap),
 * so a token on it is cut into pieces none of which looks like a token; the redactor must
 * see the rows of one line joined.
 */

/** Rows of a screen and, for each, whether its line goes on in the next row. */
export interface ScreenRows {
  lines: string[];
  wrapped: boolean[];
}

/** `text` cut into pieces of `lengths` code points, the last piece taking whatever is left. */
function cutLike(text: string, lengths: number[]): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  let at = 0;
  lengths.forEach((len, i) => {
    const end = i === lengths.length - 1 ? chars.length : Math.min(chars.length, at + len);
    out.push(chars.slice(at, end).join(''));
    at = end;
  });
  return out;
}

/**
 * The screen's rows redacted by `clean` as logical lines: the rows of a soft-wrapped line
 * are joined without a line break, the whole screen is redacted as one text, and each line
 * is cut back into its rows at their old lengths (a mask longer or shorter than what it
 * hides moves the rest of its line; the last row of the line takes the difference), so a
 * masked token stays masked on every row it covered. When redaction changes the number of
 * lines (a private-key block masked as one line), the logical lines are returned as
 * redacted, none marked wrapped: fewer lines than rows.
 */
export function redactScreenRows(screen: ScreenRows, clean: (text: string) => string): ScreenRows {
  // The rows of each logical line.
  const groups: string[][] = [];
  let open: string[] | undefined;
  screen.lines.forEach((row, i) => {
    if (open === undefined) {
      open = [];
      groups.push(open);
    }
    open.push(row);
    if (screen.wrapped[i] !== true) open = undefined;
  });
  const logical = groups.map((g) => g.join(''));
  const redacted = clean(logical.join('\n')).split('\n');
  if (redacted.length !== logical.length) return { lines: redacted, wrapped: redacted.map(() => false) };
  const lines = groups.flatMap((rows, n) => {
    const line = redacted[n] ?? '';
    return line === logical[n] ? rows : cutLike(line, rows.map((r) => Array.from(r).length));
  });
  return { lines, wrapped: screen.lines.map((_, i) => screen.wrapped[i] === true) };
}
