/**
 * The LLM tool's output budget: every result carries at most `max_chars` characters
 * (UTF-16 code units, what a JavaScript string's length counts) of job output and events.
 * Text over the budget keeps its head and its tail and says, where it cut, how much was
 * left out (characters, and the lines it touched) and how to read it (`offset`/`limit` of
 * the `log` action). The text is redacted before it gets here (the registry redacts whole
 * pages), so a cut never shows part of a secret the whole text would have masked.
 */

/** Characters of output a result carries by default. */
export const DEFAULT_MAX_CHARS = 16_000;
/** The smallest `max_chars` a call may ask for: room for the cut marker and some text. */
export const MIN_MAX_CHARS = 1_000;
/** The largest `max_chars` a call may ask for (about 50 000 tokens). */
export const MAX_MAX_CHARS = 200_000;
/** Characters kept aside for the cut marker (the longest one is about 200). */
const MARKER_ROOM = 300;

/** What a cut left out. Lines are 0-based numbers as the `log` action's `offset` takes them. */
export interface Omitted {
  /** Characters left out. */
  chars: number;
  /** Lines left out whole. */
  lines: number;
  /** First line the cut touched (left out whole or in part). */
  fromLine: number;
  /** Last line the cut touched. */
  toLine: number;
}

/** Text within the budget, and what was left out to get there. */
export interface Fitted {
  text: string;
  omitted?: Omitted;
}

/** Position `at`, moved back off the second half of a surrogate pair. */
function whole(text: string, at: number): number {
  const c = text.charCodeAt(at);
  return at > 0 && at < text.length && c >= 0xdc00 && c <= 0xdfff ? at - 1 : at;
}

/** Line breaks in `text` from `from` up to `to`. */
function breaks(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', from); i >= 0 && i < to; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * `text` (lines joined by `\n`, its first line numbered `firstLine`) cut to `maxChars`: the
 * head and the tail are kept, each ending at a line break when one lies in its outer half
 * (a line longer than that is cut inside), and a marker line in between says what went.
 * `kind`: `lines` when the text is consecutive output lines (the marker says which
 * `offset`/`limit` reads what went), `matches` when it is a filter's matching lines, each
 * led by its number (the marker counts from 0 among them). `pageWith`: the call that takes
 * that `offset`/`limit` when it is not the one being answered (`process action=log` in a
 * poll's result, see `names.ts`); default none.
 */
export function fitText(text: string, maxChars: number, firstLine: number, kind: 'lines' | 'matches' = 'lines', pageWith?: string): Fitted {
  if (text.length <= maxChars) return { text };
  const room = Math.max(2, maxChars - MARKER_ROOM);
  const headRoom = Math.ceil(room / 2);
  let headEnd = whole(text, headRoom);
  const nl = text.lastIndexOf('\n', headEnd - 1);
  if (nl >= headRoom / 2) headEnd = nl;
  let tailStart = whole(text, text.length - (room - headEnd));
  const tnl = text.indexOf('\n', tailStart);
  if (tnl >= 0 && tnl < tailStart + (text.length - tailStart) / 2) tailStart = tnl + 1;
  // The cut is [headEnd, tailStart): a line break at its start ends the head's last line.
  const fromLine = firstLine + breaks(text, 0, headEnd) + (text[headEnd] === '\n' ? 1 : 0);
  const toLine = firstLine + breaks(text, 0, tailStart - 1);
  const startsWhole = headEnd === 0 || text[headEnd - 1] === '\n' || text[headEnd] === '\n';
  const endsWhole = text[tailStart - 1] === '\n';
  const omitted: Omitted = {
    chars: tailStart - headEnd,
    lines: Math.max(0, toLine - fromLine + 1 - (startsWhole ? 0 : 1) - (endsWhole ? 0 : 1)),
    fromLine,
    toLine,
  };
  const call = pageWith === undefined ? '' : `${pageWith} `;
  const marker =
    kind === 'lines'
      ? `\n[… ${omitted.chars} characters cut here (${lineRange(omitted, 'line')}); read them with ${call}offset=${fromLine} limit=${toLine - fromLine + 1}, a filter, or a larger max_chars]\n`
      : `\n[… ${omitted.chars} characters of matching lines cut here (${lineRange(omitted, 'match')}); narrow the filter, page with ${call}offset/limit, or raise max_chars]\n`;
  const head = text.slice(0, headEnd);
  const tail = text.slice(tailStart);
  return { text: `${head}${marker}${tail}`, omitted };
}

function lineRange(o: Omitted, noun: 'line' | 'match'): string {
  const partly = o.lines < o.toLine - o.fromLine + 1 ? ', in part' : '';
  const plural = noun === 'line' ? 'lines' : 'matches';
  return o.fromLine === o.toLine ? `${noun} ${o.fromLine}${partly}` : `${plural} ${o.fromLine}-${o.toLine}${partly}`;
}

/** How many of `rows`, joined by line breaks, fit `maxChars` whole; at least one when there is one (it is then cut by {@link fitText}). */
export function fittingRows(rows: string[], maxChars: number): number {
  let used = 0;
  for (let k = 0; k < rows.length; k++) {
    used += (rows[k] as string).length + (k > 0 ? 1 : 0);
    if (used > maxChars) return Math.max(1, k);
  }
  return rows.length;
}

/**
 * The last of `items` whose JSON fits `maxChars` together (`slack` characters added per
 * item for what the caller adds to each, such as snake_case underscores), and how many
 * earlier ones were left out.
 */
export function newestFitting<T>(items: T[], maxChars: number, slack = 0): { kept: T[]; omitted: number } {
  let used = 0;
  let from = items.length;
  while (from > 0) {
    const size = JSON.stringify(items[from - 1]).length + slack + 1;
    if (used + size > maxChars) break;
    used += size;
    from--;
  }
  return { kept: items.slice(from), omitted: from };
}
