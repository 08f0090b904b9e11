/**
 * `readLog`'s pages: from a session's in-memory tail, or from a durable job's log file
 * through its line index (a page costs one read of its bytes, whatever the log's size).
 * Redaction runs on the page with context before it before the page is cut (DESIGN section
 * 11); every page is cut to a byte cap (`maxBytes`, default 1 MiB), a line longer than the
 * cap with a marker. Of a log line longer than the cap, 64 KiB past the cap are read and
 * redacted with it, so a secret that straddles the cut is masked before it is cut.
 */
import { insideKeyBlockAt } from '../policy/redact.js';
import type { LogOptions, LogPage, RedactView } from '../session/kind.js';
import type { SessionStatus } from '../session/record.js';
import type { LogResult } from '../types.js';
import { logPage, NO_DROPS, wholeCharsEnd } from './durablelog.js';
import { KEY_NEEDLE } from './lineoffsets.js';
import { type TailView, visibleTail } from './tail.js';
import { pageLines, showing } from './views.js';

/** The default byte cap of a page: 1 MiB of text (UTF-8). */
export const DEFAULT_PAGE_BYTES = 1024 * 1024;
/** The smallest byte cap a caller may ask for: room for a cut marker and some text. */
export const MIN_PAGE_BYTES = 256;
/** The largest byte cap the surfaces (LLM tool, CLI) accept: 4 MiB, what an agent's context can take in one result. */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

/** The page's limit, offset and byte cap, checked (`RangeError` names the bad one). */
function checked(opts: LogOptions): { limit: number; maxBytes: number } {
  const limit = opts.limit ?? 200;
  if (!Number.isSafeInteger(limit) || limit <= 0) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  if (opts.offset !== undefined && (!Number.isSafeInteger(opts.offset) || opts.offset < 0)) throw new RangeError(`offset must be a non-negative integer, got ${opts.offset}`);
  const maxBytes = opts.maxBytes ?? DEFAULT_PAGE_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < MIN_PAGE_BYTES) throw new RangeError(`maxBytes must be an integer of at least ${MIN_PAGE_BYTES}, got ${maxBytes}`);
  return { limit, maxBytes };
}

/**
 * A page of the in-memory tail, from its first whole line, cut to its byte cap. The tail is
 * redacted in slices that yield between them (see {@link redactInSlices}): a tail can be
 * megabytes (`maxOutputChars`), and redaction blocks for the length of its input.
 */
export async function pageTail(tail: TailView, opts: LogOptions, redactView: RedactView): Promise<LogPage> {
  const { maxBytes } = checked(opts);
  const { text, startsInKeyBlock } = visibleTail(tail);
  const view = opts.view ?? 'plain';
  const full = pageLines(await redactInSlices('', 0, text, startsInKeyBlock, (t, inKey) => redactView(t, view, inKey)), { ...opts, view: 'raw' });
  const fit = fitPage(full.lines, maxBytes, opts.offset === undefined, 0);
  const offset = full.offset + fit.skipped;
  const page = { lines: fit.lines, totalLines: full.totalLines, offset, showing: showing(offset, fit.lines.length, full.totalLines) };
  return { page, drops: NO_DROPS, droppedChars: tail.droppedChars, cap: 'the in-memory cap (maxOutputChars)' };
}

/**
 * A page of a durable job's log file (`STATE_DIR_UNTRUSTED` when a part is not a regular
 * file), read through its line index (see `durablelog.logPage`) and redacted with up to 64
 * lines of context before it and the private-key state where that context starts.
 */
export async function pageLogFile(path: string, opts: LogOptions, redactView: RedactView): Promise<LogPage> {
  const { limit, maxBytes } = checked(opts);
  const got = await logPage(path, { ...(opts.offset !== undefined && { offset: opts.offset }), limit, context: 64, maxBytes });
  const view = opts.view ?? 'plain';
  let fit: { text: string; lines: string[]; skipped: number } = { text: '', lines: [], skipped: 0 };
  if (got.count > 0) {
    const redacted = await redactInSlices(got.context, got.before, got.body, got.startsInKeyBlock, (text, inKey) => redactView(text, view, inKey));
    const shown = got.cutBytes > 0 ? withoutOpenRun(redacted, maxBytes) : { text: redacted, bytes: 0 };
    fit = fitText(shown.text, maxBytes, opts.offset === undefined, got.cutBytes + shown.bytes);
  }
  const offset = got.offset + fit.skipped;
  const page = { lines: fit.lines, text: fit.text, totalLines: got.totalLines, offset, showing: showing(offset, fit.lines.length, got.totalLines) };
  const drops = got.drops;
  return { page, drops, droppedChars: drops.bytes + drops.lostBytes, droppedLines: drops.lines, cap: 'the log cap (logMaxBytes)' };
}

/** Characters of a page redacted at once: redaction of a 1 MiB page in one call blocks the event loop for up to 90 ms. */
const SLICE_CHARS = 64 * 1024;
/** Lines before each slice that its redaction sees, as a page sees its context. */
const SLICE_CONTEXT = 64;

/**
 * The start of the line up to `back` lines before the line that starts at `at` in `text`,
 * and how many lines that goes back (fewer at the text's start).
 */
function linesBack(text: string, at: number, back: number): { from: number; lines: number } {
  let from = at;
  let lines = 0;
  for (; lines < back && from > 0; lines++) from = (from >= 2 ? text.lastIndexOf('\n', from - 2) : -1) + 1;
  return { from, lines };
}

/** Position just past the `k`-th line break of `text` (its length when it has fewer). */
function afterLines(text: string, k: number): number {
  let at = 0;
  for (let i = 0; i < k; i++) {
    const nl = text.indexOf('\n', at);
    if (nl < 0) return text.length;
    at = nl + 1;
  }
  return at;
}

/**
 * `body` redacted (`context`: the `before` lines ahead of it, each with its line break), in
 * slices of about 64 KiB that yield to the event loop between them. Each slice is redacted
 * with the 64 lines before it (the whole context for the first) and the private-key state
 * where those start (followed marker by marker from `startsInKeyBlock`, the state where
 * `context` starts), as the page itself is with its context: a slice boundary is no weaker
 * than a page boundary. Redaction keeps line breaks, so the context lines are cut off its
 * output by count. Positions below are in `context + body`, which is never built whole: a
 * page that redaction leaves as it is comes back as `body` itself, with no copy.
 */
export async function redactInSlices(context: string, before: number, body: string, startsInKeyBlock: boolean, redact: (text: string, inKey: boolean) => string): Promise<string> {
  const c = context.length;
  const span = (from: number, to: number) => (from >= c ? body.slice(from - c, to - c) : to <= c ? context.slice(from, to) : context.slice(from) + body.slice(0, to - c));
  // Without a marker the key state stays what it was where the context starts.
  const markers = context.includes(KEY_NEEDLE) || body.includes(KEY_NEEDLE);
  const out: string[] = [];
  let changed = false;
  let inKey = startsInKeyBlock;
  let stateAt = 0;
  for (let i = c; ; ) {
    const nl = i - c + SLICE_CHARS < body.length ? body.indexOf('\n', i - c + SLICE_CHARS) : -1;
    const end = nl < 0 ? c + body.length : c + nl;
    const { from, lines } = i === c ? { from: 0, lines: before } : sliceContext(context, body, i - c);
    if (markers && from > stateAt) {
      inKey = insideKeyBlockAt(span(stateAt, from), from - stateAt, inKey);
      stateAt = from;
    }
    const slice = span(from, end);
    const redacted = redact(slice, inKey);
    changed ||= redacted !== slice;
    out.push(redacted.slice(afterLines(redacted, lines)));
    if (end >= c + body.length) break;
    i = end + 1;
    await new Promise((r) => setImmediate(r));
  }
  return changed ? out.join('\n') : body;
}

/** Where the 64 lines before the body's line at `at` start in `context + body` (reaching into the context near the body's start), and how many lines that is. */
function sliceContext(context: string, body: string, at: number): { from: number; lines: number } {
  const inBody = linesBack(body, at, SLICE_CONTEXT);
  if (inBody.from > 0 || inBody.lines === SLICE_CONTEXT) return { from: context.length + inBody.from, lines: inBody.lines };
  const inContext = linesBack(context, context.length, SLICE_CONTEXT - inBody.lines);
  return { from: inContext.from, lines: inBody.lines + inContext.lines };
}

/**
 * Whether UTF-16 code unit `c` may be part of a token, a JWT, a key or base64
 * (`A-Za-z0-9+/=_.~-`), or of a mask redaction put inside one (`…`, `*`).
 */
function isTokenChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2b || c === 0x2f || c === 0x3d || c === 0x5f || c === 0x2e || c === 0x7e || c === 0x2d || c === 0x2026 || c === 0x2a;
}

/**
 * A line read in part (it runs more than `durablelog.CUT_MARGIN` past the cap), redacted, that
 * ends in a run of token characters starting before the cap: the run may be one secret
 * longer than the margin, which the rules could not see whole (a JWT whose signature lies
 * past the read), so the run is left out of what is shown; `bytes` counts what went. A
 * piece of the run that looked like a token and was masked does not end it. A run that
 * shows as one repeated character (`xxxx`, `....`, `====`) holds no secret there and stays.
 */
function withoutOpenRun(text: string, maxBytes: number): { text: string; bytes: number } {
  let i = text.length;
  while (i > 0 && isTokenChar(text.charCodeAt(i - 1))) i--;
  if (i === text.length) return { text, bytes: 0 };
  const runBytes = Buffer.byteLength(text.slice(i));
  const runStart = Buffer.byteLength(text) - runBytes;
  if (runStart >= maxBytes) return { text, bytes: 0 };
  // What of the run would show (at most this many characters: a character is a byte or more).
  const first = text.charCodeAt(i);
  const shownEnd = Math.min(text.length, i + (maxBytes - runStart));
  let same = true;
  for (let k = i + 1; k < shownEnd && same; k++) same = text.charCodeAt(k) === first;
  return same ? { text, bytes: 0 } : { text: text.slice(0, i), bytes: runBytes };
}

/**
 * `text` (a page's lines joined by line breaks) cut to `maxBytes` as {@link fitPage} cuts its
 * lines; a page that fits (most do) is split once and not measured line by line.
 */
function fitText(text: string, maxBytes: number, fromEnd: boolean, cutBytes: number): { text: string; lines: string[]; skipped: number } {
  if (cutBytes === 0 && Buffer.byteLength(text) <= maxBytes) return { text, lines: text.split('\n'), skipped: 0 };
  const fit = fitPage(text.split('\n'), maxBytes, fromEnd, cutBytes);
  return { ...fit, text: fit.lines.join('\n') };
}

/** What a line cut to the page's byte cap ends with: how many of its bytes were left out. */
export function cutMarker(bytes: number): string {
  return ` [… ${bytes} more bytes of this line cut]`;
}

/**
 * `lines` cut to `maxBytes` bytes of text (UTF-8, lines joined by line breaks; redaction may
 * have made them longer than the bytes read): whole lines are left out from the start
 * (`fromEnd`: the caller asked for the last lines; `skipped` counts them) or from the end,
 * and a line that alone exceeds the cap is cut with {@link cutMarker}. `cutBytes`: bytes
 * already cut from the only line by the reader.
 */
export function fitPage(lines: string[], maxBytes: number, fromEnd: boolean, cutBytes: number): { lines: string[]; skipped: number } {
  const sizes = lines.map((l) => Buffer.byteLength(l));
  let total = sizes.reduce((n, b) => n + b, 0) + Math.max(0, lines.length - 1);
  let from = 0;
  let to = lines.length;
  while (total > maxBytes && to - from > 1) {
    total -= (sizes[fromEnd ? from : to - 1] as number) + 1;
    if (fromEnd) from++;
    else to--;
  }
  const kept = lines.slice(from, to);
  if (kept.length === 1 && (total > maxBytes || cutBytes > 0)) {
    const line = kept[0] as string;
    const bytes = sizes[from] as number;
    // The marker's own length depends on the count it prints: leave room for the largest.
    const room = Math.max(0, maxBytes - Buffer.byteLength(cutMarker(bytes + cutBytes)));
    const buf = Buffer.from(line);
    const head = buf.toString('utf8', 0, wholeCharsEnd(buf, Math.min(room, bytes)));
    kept[0] = head + cutMarker(cutBytes + bytes - Buffer.byteLength(head));
  }
  return { lines: kept, skipped: from };
}

/** What `readLog` returns for a page. */
export function logResult(id: string, status: SessionStatus, got: LogPage): LogResult {
  const { page, drops, droppedChars } = got;
  return {
    id,
    status,
    text: page.text ?? page.lines.join('\n'),
    ...page,
    showing: droppedChars === 0 ? page.showing : showingAfterDrops(page, droppedChars, drops, got.cap, got.droppedLines),
    droppedChars,
    ...(got.droppedLines !== undefined && { droppedLines: got.droppedLines }),
  };
}

/**
 * `showing` once output was dropped before the first kept line. `offset` and `totalLines`
 * count kept lines, and the text says so: `lines 958-959 of 959 kept`. When the dropped
 * lines were counted (durable logs) it also gives the job's own line numbers, which count
 * from the first line the job wrote, and which of those are gone: `(lines 1999-2000 of the
 * 2000 the job wrote; earlier output dropped by the log cap (logMaxBytes): 1041 lines
 * (1-1041), 4098 bytes, gone)`. Otherwise only the bytes dropped are known.
 */
function showingAfterDrops(page: LogPage['page'], bytes: number, drops: LogPage['drops'], cap: string, droppedLines: number | undefined): string {
  const n = page.lines.length;
  const kept = n === 0 ? `no lines (of ${page.totalLines} kept)` : `lines ${page.offset + 1}-${page.offset + n} of ${page.totalLines} kept`;
  const lost = drops.lostBytes > 0 ? `; ${drops.lostBytes} bytes could not be written` : '';
  const size = `${bytes - drops.lostBytes} bytes${lost}`;
  if (droppedLines === undefined || droppedLines === 0) return `${kept} (earlier output dropped by ${cap}: ${size}, gone; line numbers count the kept lines only)`;
  const first = droppedLines + page.offset + 1;
  const own = n === 0 ? '' : `lines ${first}-${first + n - 1} of the ${droppedLines + page.totalLines} the job wrote; `;
  return `${kept} (${own}earlier output dropped by ${cap}: ${droppedLines} lines (1-${droppedLines}), ${size}, gone)`;
}

