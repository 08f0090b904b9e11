/**
 * Job output as the LLM tool returns it: a page of the registry's `readLog` (redacted whole
 * by the registry before anything here cuts or filters it), optionally filtered by a
 * linear-time regex, cut to the call's character budget (head and tail, with a marker that
 * says what went and how to read it), and a cursor to the page's end for the next read.
 * `text` only: no second copy of the lines.
 */
import { ProcwardError } from '../errors.js';
import { MAX_PAGE_BYTES } from '../output/paging.js';
import type { ProcessRegistry } from '../registry.js';
import type { LogResult } from '../types.js';
import type { WatchMatcher } from '../native.js';
import { fitText, fittingRows } from './toolbudget.js';
import { type CursorPosition, checkSession, decodeCursor, encodeCursor, lineHash } from './toolcursor.js';
import { filterLines } from './toolfilter.js';

/** What one read returns (snake_case, as the tool's results are). */
export interface ToolOutput {
  /** The session's full id. */
  session_id: string;
  status: LogResult['status'];
  /** The output (matching lines, with a filter), within the budget. */
  text: string;
  /** The cursor to pass back for the output after this read. */
  cursor: string;
  /** Line number (0-based, as `offset` takes it) of the first line read. */
  first_line: number;
  /** Lines read (before the filter). */
  lines_read: number;
  /** Lines in the output now. */
  total_lines: number;
  /** With a filter: how many of the lines read matched. */
  matched_lines?: number;
  /** What the budget left out. */
  truncated?: { chars: number; lines: number; from_line: number; to_line: number };
  /** Anything else the reader should know (output dropped by a cap, more to read, lines not searched). */
  note?: string;
}

/** How to read. */
export interface ReadSpec {
  /** Where to start: a cursor, an explicit page (the `log` action's offset/limit), or the output's start. */
  from: { cursor: string } | { offset?: number; limit?: number } | 'start';
  maxChars: number;
  /** Byte cap of the registry's page (the `log` action's `max_bytes`); default 4 MiB. */
  maxBytes?: number;
  filter?: WatchMatcher;
  /**
   * The call that reads on, when it is not the one being answered (`process action=log`
   * for a poll's, a wait's or a start's output; see `toolnames.ts`): hints name it for
   * `offset`/`limit` pages, and a start's result for reading on after its cursor (calling
   * `process_start` again would start another job). Default: none (the call is a log).
   */
  readOn?: string;
}

/** Lines asked of `readLog` when reading to the end: as many as its byte cap lets through. */
const ALL_LINES = Number.MAX_SAFE_INTEGER;

function page(registry: ProcessRegistry, id: string, offset: number | undefined, limit: number, maxBytes: number): Promise<LogResult> {
  return registry.readLog(id, { ...(offset !== undefined && { offset }), limit, maxBytes });
}

/** Whether line numbers of this output never shift (a durable log counts the lines its cap dropped). */
const absolute = (r: LogResult) => r.droppedLines !== undefined;

/**
 * Reads the session's output as `spec` says (`id`: an id or prefix `readLog` resolves).
 * Errors: those of `readLog`, and `INVALID_ARGUMENT` for a cursor that is not one, or is
 * another session's.
 */
export async function readOutput(registry: ProcessRegistry, id: string, spec: ReadSpec): Promise<ToolOutput> {
  const incremental = spec.from !== 'start' && 'cursor' in spec.from;
  const again = spec.from === 'start' && spec.readOn !== undefined ? `call ${spec.readOn}` : 'call again';
  const pageWith = spec.readOn === undefined ? '' : `${spec.readOn} `;
  // A read after a cursor returns at most maxChars characters of whole lines (3 bytes of
  // UTF-8 at most each), unless a filter has to look through more; other reads keep head
  // and tail of all they read.
  const maxBytes = spec.maxBytes ?? (incremental && !spec.filter ? Math.min(MAX_PAGE_BYTES, 3 * spec.maxChars + 4096) : MAX_PAGE_BYTES);
  const notes: string[] = [];
  let got: LogResult;
  let skip = 0;
  if (spec.from === 'start') {
    got = await page(registry, id, 0, ALL_LINES, maxBytes);
  } else if ('cursor' in spec.from) {
    ({ got, skip } = await resume(registry, id, decodeCursor(spec.from.cursor), maxBytes, notes));
  } else {
    got = await page(registry, id, spec.from.offset, spec.from.limit ?? 200, maxBytes);
  }
  const lines = got.lines.slice(skip);
  const first = got.offset + skip;
  let end = got.offset + got.lines.length;
  const explicit = spec.from !== 'start' && !incremental;
  let rows = lines;
  let numbers: number[] | null = null;
  let matched: number | undefined;
  if (spec.filter) {
    const kept = filterLines(spec.filter, lines, first);
    matched = kept.lines.length;
    numbers = kept.numbers;
    rows = kept.lines.map((l, i) => `${kept.numbers[i]}: ${l}`);
    if (kept.unsearched > 0) notes.push(`${kept.unsearched} lines were not searched: the filter's time budget was spent (narrow the range with ${pageWith}offset/limit)`);
  }
  if (incremental) {
    // A reader that follows cursors must get every line: what does not fit is left for the
    // next read (the cursor stops before it), not cut from the middle.
    const k = fittingRows(rows, spec.maxChars);
    if (k < rows.length) {
      end = numbers ? (numbers[k] as number) : first + k;
      notes.push(`more output follows: ${again} with this cursor`);
    }
    rows = rows.slice(0, k);
  } else if (end < got.totalLines && !(explicit && got.lines.length === ((spec.from as { limit?: number }).limit ?? 200))) {
    notes.push(`more output follows (lines ${end}-${got.totalLines - 1}; the page's byte cap ended this read): ${again} with this cursor`);
  }
  const last = got.lines[end - 1 - got.offset];
  const cursor = encodeCursor({
    sessionId: got.id,
    mode: absolute(got) ? 'f' : 't',
    line: (absolute(got) ? (got.droppedLines as number) : 0) + end,
    dropped: absolute(got) ? (got.droppedLines as number) : got.droppedChars,
    hash: last === undefined ? 0 : lineHash(last),
  });
  const out: ToolOutput = { session_id: got.id, status: got.status, text: '', cursor, first_line: first, lines_read: end - first, total_lines: got.totalLines };
  if (matched !== undefined) out.matched_lines = matched;
  const fitted = fitText(rows.join('\n'), spec.maxChars, numbers ? 0 : first, numbers ? 'matches' : 'lines', spec.readOn);
  out.text = fitted.text;
  if (fitted.omitted) out.truncated = { chars: fitted.omitted.chars, lines: fitted.omitted.lines, from_line: fitted.omitted.fromLine, to_line: fitted.omitted.toLine };
  if (got.droppedChars > 0 && first === 0) notes.push(`earlier output was dropped: ${got.showing}`);
  if (notes.length > 0) out.note = notes.join('; ');
  return out;
}

/**
 * The page after a cursor, and how many of its lines were read before (the line the cursor
 * ended on, when it is unchanged). A cursor's last line is read again: one that grew since
 * (a prompt that got its line break) comes back whole. In the in-memory tail, a front that
 * moved is followed by finding the last line read again (by its hash, at or before where it
 * was); when it is gone, the tail is read from its start and the note says output was lost.
 */
async function resume(registry: ProcessRegistry, id: string, pos: CursorPosition, maxBytes: number, notes: string[]): Promise<{ got: LogResult; skip: number }> {
  const back = Math.max(0, pos.line - 1);
  const base = pos.mode === 'f' ? pos.dropped : 0;
  let got = await page(registry, id, Math.max(0, back - base), ALL_LINES, maxBytes);
  checkSession(pos, got.id);
  const moved = pos.mode === 'f' ? absolute(got) && got.droppedLines !== pos.dropped : got.droppedChars !== pos.dropped;
  if (!moved) {
    if (back - base > got.totalLines) throw new ProcwardError('INVALID_ARGUMENT', 'cursor is not valid: it points past the end of the output');
    return { got, skip: pos.line > 0 && got.lines.length > 0 && lineHash(got.lines[0] as string) === pos.hash ? 1 : 0 };
  }
  if (pos.mode === 'f') {
    // The log's cap rotated lines away: absolute numbers still hold.
    const dropped = got.droppedLines as number;
    if (back < dropped) notes.push(`${dropped - back} lines after the cursor were dropped by the log cap before this read`);
    got = await page(registry, id, Math.max(0, back - dropped), ALL_LINES, maxBytes);
    return { got, skip: back >= dropped && pos.line > 0 && got.lines.length > 0 && lineHash(got.lines[0] as string) === pos.hash ? 1 : 0 };
  }
  got = await page(registry, id, 0, ALL_LINES, maxBytes);
  for (let j = Math.min(back, got.lines.length - 1); j >= 0; j--) {
    if (lineHash(got.lines[j] as string) === pos.hash) return { got, skip: j + 1 };
  }
  notes.push('output after the cursor was dropped by the in-memory cap (maxOutputChars) before this read: this is the oldest output kept');
  return { got, skip: 0 };
}
