/**
 * `readLog`'s pages: from a session's in-memory tail, or from a durable job's log file
 * (streamed when it is too large to read whole). Redaction runs on the whole text (or a
 * page with context before it) before the page is cut.
 */
import { leadsWithKeyMaterial, insideKeyBlockAt } from '../policy/redact.js';
import type { LogOptions, LogPage, RedactView } from '../session/kind.js';
import type { SessionStatus } from '../session/record.js';
import type { LogResult } from '../types.js';
import { LARGE_LOG_BYTES, NO_DROPS, readLog, streamLogPage } from './durablelog.js';
import type { TailView } from './tail.js';
import { type LinePage, pageLines, showing } from './views.js';

/** A page of the in-memory tail, from its first whole line. */
export function pageTail(tail: TailView, opts: LogOptions, redactView: RedactView): LogPage {
  const all = tail.text();
  const text = wholeLines(all, tail.droppedChars);
  const startsInKeyBlock = insideKeyBlockAt(all, all.length - text.length, tail.startsInKeyBlock);
  const page = pageLines(redactView(text, opts.view ?? 'plain', startsInKeyBlock), { ...opts, view: 'raw' });
  return { page, drops: NO_DROPS, droppedChars: tail.droppedChars, cap: 'the in-memory cap (maxOutputChars)' };
}

/** A page of a durable job's log file (`STATE_DIR_UNTRUSTED` when a part is not a regular file). */
export async function pageLogFile(path: string, opts: LogOptions, redactView: RedactView): Promise<LogPage> {
  // A log too large to read whole (null) is paged by streaming.
  const log = await readLog(path, LARGE_LOG_BYTES);
  let page: LinePage;
  let drops = NO_DROPS;
  if (log) {
    drops = log.drops;
    // A log whose front was rotated away may start inside a key whose BEGIN went with it.
    const inKey = log.drops.bytes > 0 && leadsWithKeyMaterial(log.text);
    page = pageLines(redactView(log.text, opts.view ?? 'plain', inKey), { ...opts, view: 'raw' });
  } else ({ page, drops } = await pageLargeLog(path, opts, redactView));
  return { page, drops, droppedChars: drops.bytes + drops.lostBytes, droppedLines: drops.lines, cap: 'the log cap (logMaxBytes)' };
}

/**
 * Pages a log too large to read whole (see `streamLogPage`), redacting the page with some
 * context before it and the private-key state the pager tracked up to that context.
 */
async function pageLargeLog(path: string, opts: LogOptions, redactView: RedactView): Promise<Pick<LogPage, 'page' | 'drops'>> {
  const limit = opts.limit ?? 200;
  if (!Number.isInteger(limit) || limit <= 0) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  if (opts.offset !== undefined && (!Number.isInteger(opts.offset) || opts.offset < 0)) throw new RangeError(`offset must be a non-negative integer, got ${opts.offset}`);
  const got = await streamLogPage(path, { ...(opts.offset !== undefined && { offset: opts.offset }), limit, context: 64 });
  const redacted = redactView(got.lines.join('\n'), opts.view ?? 'plain', got.startsInKeyBlock).split('\n');
  const lines = redacted.slice(got.before, got.before + limit);
  return { page: { lines, totalLines: got.totalLines, offset: got.offset, showing: showing(got.offset, lines.length, got.totalLines) }, drops: got.drops };
}

/** What `readLog` returns for a page. */
export function logResult(id: string, status: SessionStatus, got: LogPage): LogResult {
  const { page, drops, droppedChars } = got;
  return {
    id,
    status,
    text: page.lines.join('\n'),
    ...page,
    showing: page.showing + droppedNote(droppedChars, drops, got.cap),
    droppedChars,
    ...(got.droppedLines !== undefined && { droppedLines: got.droppedLines }),
  };
}

/** The part of `showing` that says output was dropped before the first line (empty when none was). */
function droppedNote(bytes: number, drops: LogPage['drops'], cap: string): string {
  if (bytes === 0) return '';
  const lines = drops.lines > 0 ? `${drops.lines} lines, ` : '';
  const lost = drops.lostBytes > 0 ? `; ${drops.lostBytes} bytes could not be written` : '';
  return ` (earlier output dropped by ${cap}: ${lines}${bytes - drops.lostBytes} bytes${lost})`;
}

/** A tail that lost its front to a cap starts inside a line: it starts at the next line. */
function wholeLines(text: string, dropped: number): string {
  const nl = dropped > 0 ? text.indexOf('\n') : -1;
  return nl >= 0 && nl < text.length - 1 ? text.slice(nl + 1) : text;
}
