/**
 * Output views: the plain view used for previews (ANSI escapes removed, carriage-return
 * progress shown as its latest frame), previews cut after redaction, and line paging for
 * `readLog`.
 */
import { insideKeyBlockAt } from '../policy/redact.js';
import { escapeControls, escapedTail } from './controls.js';

// Control strings, whole: DCS (ESC P), SOS (ESC X), PM (ESC ^), APC (ESC _) up to ST
// (ESC \ or C1 ST), OSC (ESC ]) up to ST or BEL, and their C1 forms. A terminal shows none
// of the body (`HEAD ESC P 1$r ESC \ TAIL` shows `HEADTAIL`); CAN, SUB or another ESC
// cancels the string there, as in vte. A body is at most STRING_MAX characters: an
// unterminated string longer than that loses only its introducer, so one stray ESC P does
// not hide the rest of the output (nor make the match scan it all).
const STRING_MAX = 4096;
const STRING_END = `\u001b\\\\|\u009c|(?=[\u0018\u001a\u001b])|$`;
const STRINGS = [
  `(?:\u001b[PX^_]|[\u0090\u0098\u009e\u009f])[^\u0018\u001a\u001b\u009c]{0,${STRING_MAX}}(?:${STRING_END})`,
  `(?:\u001b\\]|\u009d)[^\u0007\u0018\u001a\u001b\u009c]{0,${STRING_MAX}}(?:\u0007|${STRING_END})`,
];
// Control strings, CSI (ESC [ ... final byte), other two-byte escapes, C1 CSI.
const ANSI = new RegExp(`${STRINGS.join('|')}|\u001b\\[[0-?]*[ -/]*[@-~]|\u001b[@-Z\\\\-_]|\u009b[0-?]*[ -/]*[@-~]`, 'g');

/** What the plain view changes: escape sequences (ESC, C1 CSI and strings) and carriage returns. */
const PLAIN_CHANGES = /[\r\u001b\u0090\u0098\u009b-\u009f]/;

/**
 * The plain view of output: ANSI CSI/OSC sequences removed, `\r\n` as one line break,
 * and within each line only the text after the last bare `\r` (a progress bar's latest
 * frame).
 */
export function plainText(text: string): string {
  // Most output has none of these: the view is the text itself, with no pass per line.
  if (!PLAIN_CHANGES.test(text)) return text;
  return text
    .replace(ANSI, '')
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((line) => {
      const cr = line.lastIndexOf('\r', line.length - 2);
      return (cr >= 0 ? line.slice(cr + 1) : line).replace(/\r$/, '');
    })
    .join('\n');
}

/**
 * A view of output, redacted by `clean` (`null`: redaction is off). Plain: escape sequences
 * are removed first, so a token wrapped in colour codes is still recognised, and the C0
 * controls left (NUL, a bell, ...) are shown as `\xNN` after redaction (see `controls.ts`).
 * Raw: redacted as written, and when a secret shows only once the escapes are gone, the
 * plain view is returned instead (never a leak).
 */
export function redactedView(text: string, view: 'plain' | 'raw', clean: ((text: string) => string) | null): string {
  if (clean === null) return view === 'plain' ? escapeControls(plainText(text)) : text;
  // Text the plain view leaves as it is needs one redaction, not two.
  if (!PLAIN_CHANGES.test(text)) return view === 'plain' ? escapeControls(clean(text)) : clean(text);
  const plain = clean(plainText(text));
  if (view === 'plain') return escapeControls(plain);
  const raw = clean(text);
  return plainText(raw) === plain ? raw : escapeControls(plain);
}

/** Characters read before a preview window so a secret cut by the window is still recognised. */
const REDACTION_MARGIN = 4096;

/**
 * The last `maxChars` characters of the plain view, passed through `clean` (redaction)
 * *before* the window is cut: a token that straddles the window's start would otherwise
 * lose the prefix that identifies it and leak its rest. `clean` also learns whether the
 * window starts inside a private-key block (found by one backward search from the cut,
 * from `startsInKeyBlock`, the state at the start of `text`), so a key of any size is
 * masked whole.
 */
export function preview(
  text: string,
  maxChars = 2000,
  clean: (s: string, startsInKeyBlock: boolean) => string = (s) => s,
  startsInKeyBlock = false,
): string {
  // Widen the raw window until its plain view (escape sequences removed) is long enough,
  // so the cut never falls inside a token whose prefix would then be lost.
  let size = maxChars + REDACTION_MARGIN;
  let plain = plainText(text.length > size ? text.slice(text.length - size) : text);
  while (plain.length < maxChars + REDACTION_MARGIN && size < text.length) {
    size *= 4;
    plain = plainText(text.length > size ? text.slice(text.length - size) : text);
  }
  const cut = Math.max(0, text.length - size);
  const cleaned = clean(plain, cut === 0 ? startsInKeyBlock : insideKeyBlockAt(text, cut, startsInKeyBlock));
  // The plain view's controls as `\xNN`, counted in the window as shown.
  return escapedTail(cleaned, maxChars);
}

/** One page of lines. */
export interface LinePage {
  /** The lines of this page, without their line breaks. */
  lines: string[];
  /** The lines joined by line breaks, when the page was cut from text that already held them so. */
  text?: string;
  /** Lines in the whole text (a trailing newline does not start a new line). */
  totalLines: number;
  /** Zero-based index of the first line of the page. */
  offset: number;
  /** Human-readable range, e.g. `lines 301-500 of 500`. */
  showing: string;
}

/** The `showing` text of a page: `lines 301-500 of 500`, or `no lines (of N)`. */
export function showing(offset: number, count: number, totalLines: number): string {
  return count === 0 ? `no lines (of ${totalLines})` : `lines ${offset + 1}-${offset + count} of ${totalLines}`;
}

/**
 * Pages `text` by line. Default: the last `limit` (200) lines; an explicit `offset`
 * (zero-based, 0 = the first line) pages from the start. `view: 'plain'` (the default) strips
 * ANSI sequences and shows carriage-return progress as its latest frame; `'raw'` keeps the
 * text as written (UTF-8 decoded).
 */
export function pageLines(text: string, opts: { offset?: number; limit?: number; view?: 'plain' | 'raw' } = {}): LinePage {
  const limit = opts.limit ?? 200;
  if (!Number.isInteger(limit) || limit <= 0) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  if (opts.offset !== undefined && (!Number.isInteger(opts.offset) || opts.offset < 0)) {
    throw new RangeError(`offset must be a non-negative integer, got ${opts.offset}`);
  }
  const all = (opts.view === 'raw' ? text : plainText(text)).split('\n');
  if (all.length > 0 && all[all.length - 1] === '') all.pop();
  const totalLines = all.length;
  const offset = opts.offset ?? Math.max(0, totalLines - limit);
  const lines = all.slice(offset, offset + limit);
  return { lines, totalLines, offset, showing: showing(offset, lines.length, totalLines) };
}
