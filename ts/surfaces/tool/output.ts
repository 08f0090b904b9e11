/**
 * Job output as the LLM tool returns it: a page of the registry's `readLog` (redacted whole
 * by the registry before anything here cuts or filters it), optionally filtered by a
 * linear-time regex, cut to the call's character budget (head and tail, with a marker that
 * says what went and how to read it), and a cursor to the page's end for the next read.
 * `text` only: no second copy of the lines.
 */
import { ProcwardError } from '../../errors.js';
import { MAX_PAGE_BYTES } from '../../output/paging.js';
import type { ProcessRegistry } from '../../registry.js';
import type { LogResult } from '../../types.js';
import type { WatchMatcher } from '../../native.js';
import { fitText, fittingRows } from './budget.js';
import { type CursorPosition, checkSession, decodeCursor, encodeCursor, lineHash } from './cursor.js';
import { filterLines } from './filter.js';

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
   * for a poll's, a wait's or a start's output; see `names.ts`): hints name it for
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
  let maxBytes = spec.maxBytes ?? (incremental && !spec.filter ? Math.min(MAX_PAGE_BYTES, 3 * spec.maxChars + 4096) : MAX_PAGE_BYTES);
  const notes: string[] = [];
  let got: LogResult;
  let skip = 0;
  // Characters of the first line read that an earlier read returned (a cursor inside a long line).
  let col = 0;
  if (spec.from === 'start') {
    got = await page(registry, id, 0, ALL_LINES, maxBytes);
  } else if ('cursor' in spec.from) {
    const pos = decodeCursor(spec.from.cursor);
    // Inside a long line: read it as far as one read holds, to go on from its column.
    if (pos.col > 0) maxBytes = MAX_PAGE_BYTES;
    ({ got, skip, col } = await resume(registry, id, pos, maxBytes, notes));
  } else {
    got = await page(registry, id, spec.from.offset, spec.from.limit ?? 200, maxBytes);
  }
  if (incremental && got.lines.length - skip === 0 && got.offset + skip < got.totalLines && maxBytes < MAX_PAGE_BYTES) {
    // The next line did not fit in what the page's byte cap left: read on from it, as far
    // as one read holds (a long line is then returned by columns, below).
    got = await page(registry, id, got.offset + skip, ALL_LINES, MAX_PAGE_BYTES);
    skip = 0;
    col = 0;
    maxBytes = MAX_PAGE_BYTES;
  }
  let lines = got.lines.slice(skip);
  let first = got.offset + skip;
  let end = got.offset + got.lines.length;
  const explicit = spec.from !== 'start' && !incremental;
  // The first line, when it is longer than a result holds: read by columns (see `inLine`).
  let long: { readable: string } | null = null;
  const longAt = first;
  if (incremental && !spec.filter && lines.length > 0) {
    const part = await inLine(registry, id, lines[0] as string, first, col, maxBytes, spec.maxChars);
    if (part !== null && 'partial' in part) return partialResult(got, first, part, again);
    if (part !== null) {
      if (part.note) notes.push(part.note);
      long = { readable: part.readable };
      lines = [part.rest, ...lines.slice(1)];
      // Nothing new in the line the cursor stopped in: not shown again as an empty line.
      if (col > 0 && part.rest === '') {
        lines = lines.slice(1);
        first += 1;
      }
    }
  }
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
      // Paging forward keeps every line for the reader; how far behind it is, and where the
      // newest output is, are said (issue 28, kind 12).
      const behind = got.totalLines - end;
      notes.push(`more output follows: ${again} with this cursor (${behind} line${behind === 1 ? '' : 's'} after this read; a poll without a cursor shows the newest output)`);
    }
    rows = rows.slice(0, k);
  } else if (end < got.totalLines && !(explicit && got.lines.length === ((spec.from as { limit?: number }).limit ?? 200))) {
    notes.push(`more output follows (lines ${end}-${got.totalLines - 1}; the page's byte cap ended this read): ${again} with this cursor`);
  }
  // A long line that ended this read: the cursor keeps its column, so a line still growing
  // (no line break yet) goes on from there, and one read whole is not returned again.
  const endsInLong = long !== null && end === longAt + 1;
  const last = got.lines[end - 1 - got.offset];
  const cursor = encodeCursor({
    sessionId: got.id,
    mode: absolute(got) ? 'f' : 't',
    line: (absolute(got) ? (got.droppedLines as number) : 0) + end,
    dropped: absolute(got) ? (got.droppedLines as number) : got.droppedChars,
    hash: endsInLong ? lineHash((long as { readable: string }).readable) : last === undefined ? 0 : lineHash(last),
    col: endsInLong ? (long as { readable: string }).readable.length : 0,
  });
  const out: ToolOutput = { session_id: got.id, status: got.status, text: '', cursor, first_line: first, lines_read: Math.max(0, end - first), total_lines: got.totalLines };
  if (matched !== undefined) out.matched_lines = matched;
  const fitted = fitText(rows.join('\n'), spec.maxChars, numbers ? 0 : first, numbers ? 'matches' : 'lines', spec.readOn);
  out.text = fitted.text;
  if (fitted.omitted) out.truncated = { chars: fitted.omitted.chars, lines: fitted.omitted.lines, from_line: fitted.omitted.fromLine, to_line: fitted.omitted.toLine };
  if (got.droppedChars > 0 && first === 0) notes.push(`earlier output was dropped: ${got.showing}`);
  if (notes.length > 0) out.note = notes.join('; ');
  return out;
}

/** A line's end as the page's byte cap leaves it (see `cutMarker` in `output/paging.ts`). */
const CUT_AT_END = / \[… (\d+) more bytes of this line cut\]$/;

/** Part of one long line, to be returned alone (the cursor stays inside the line). */
interface Partial {
  partial: string;
  /** The line as far as one read holds, redacted. */
  readable: string;
  col: number;
  /** Characters of the line after this part (as far as one read holds). */
  more: number;
}

/**
 * The first line a cursor read reaches, by columns, when it is longer than the result's
 * budget (`maxChars`), was cut by the page's byte cap, or the cursor stopped inside it
 * (`col` > 0): the line is read again as far as one read holds (4 MiB), and either the next
 * `maxChars` characters from `col` are this read's whole result (`partial`), or what is
 * left of it fits and is the read's first row (`rest`). Null for a line that needs neither.
 * A line past 4 MiB shows its first 4 MiB; the note says how much more was not shown.
 */
async function inLine(registry: ProcessRegistry, id: string, line: string, first: number, col: number, maxBytes: number, maxChars: number): Promise<Partial | { rest: string; readable: string; note?: string } | null> {
  if (col === 0 && line.length <= maxChars && !CUT_AT_END.test(line)) return null;
  let whole = line;
  if (CUT_AT_END.test(whole) && maxBytes < MAX_PAGE_BYTES) whole = (await page(registry, id, first, 1, MAX_PAGE_BYTES)).lines[0] ?? whole;
  const cut = CUT_AT_END.exec(whole);
  const readable = cut ? whole.slice(0, cut.index) : whole;
  const rest = readable.slice(col);
  if (rest.length > maxChars) {
    // Never between the two halves of a surrogate pair.
    const take = isHighSurrogate(rest.charCodeAt(maxChars - 1)) ? maxChars - 1 : maxChars;
    return { partial: rest.slice(0, take), readable, col: col + take, more: rest.length - take };
  }
  return { rest, readable, ...(cut && { note: `line ${first} is longer than one read holds: ${cut[1]} bytes after its first ${MAX_PAGE_BYTES} are not shown` }) };
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

/** The result of a read that returns part of one long line: the cursor stays in the line, at its new column. */
function partialResult(got: LogResult, first: number, part: Partial, again: string): ToolOutput {
  const cursor = encodeCursor({
    sessionId: got.id,
    mode: absolute(got) ? 'f' : 't',
    line: (absolute(got) ? (got.droppedLines as number) : 0) + first + 1,
    dropped: absolute(got) ? (got.droppedLines as number) : got.droppedChars,
    hash: lineHash(part.readable.slice(0, part.col)),
    col: part.col,
  });
  const where = `characters ${part.col - part.partial.length + 1}-${part.col} of line ${first}`;
  return {
    session_id: got.id,
    status: got.status,
    text: part.partial,
    cursor,
    first_line: first,
    lines_read: 0,
    total_lines: got.totalLines,
    note: `this is ${where}, which goes on for ${part.more} more characters: ${again} with this cursor for the rest of it and the output after it`,
  };
}

/**
 * The page after a cursor, how many of its lines were read before (the line the cursor
 * ended on, when it is unchanged), and, for a cursor inside a long line (`col` > 0), how
 * many characters of the page's first line were returned already. A cursor's last line is
 * read again: one that grew since (a prompt that got its line break) comes back whole; a
 * long line goes on from its column while the part read is unchanged (else from its start,
 * with a note). In the in-memory tail, a front that moved is followed by finding the last
 * line read again (by its hash, at or before where it was); when it is gone, the tail is
 * read from its start and the note says output was lost.
 */
async function resume(registry: ProcessRegistry, id: string, pos: CursorPosition, maxBytes: number, notes: string[]): Promise<{ got: LogResult; skip: number; col: number }> {
  const back = Math.max(0, pos.line - 1);
  const base = pos.mode === 'f' ? pos.dropped : 0;
  // The line the cursor stopped after (or, with `col`, inside): the same one still?
  const same = (line: string | undefined) => line !== undefined && (pos.col > 0 ? line.length >= pos.col && lineHash(line.slice(0, pos.col)) === pos.hash : lineHash(line) === pos.hash);
  // Where to go on in a page whose line `j` is the cursor's line.
  const from = (got: LogResult, j: number) => {
    if (pos.col === 0) return { got, skip: j + 1, col: 0 };
    if (same(got.lines[j])) return { got, skip: j, col: pos.col };
    notes.push('the line the cursor stopped in changed since: it is read again from its start');
    return { got, skip: j, col: 0 };
  };
  let got = await page(registry, id, Math.max(0, back - base), ALL_LINES, maxBytes);
  checkSession(pos, got.id);
  const moved = pos.mode === 'f' ? absolute(got) && got.droppedLines !== pos.dropped : got.droppedChars !== pos.dropped;
  if (!moved) {
    if (back - base > got.totalLines) throw new ProcwardError('INVALID_ARGUMENT', 'cursor is not valid: it points past the end of the output');
    if (pos.line === 0 || got.lines.length === 0) return { got, skip: 0, col: 0 };
    return pos.col > 0 ? from(got, 0) : { got, skip: same(got.lines[0]) ? 1 : 0, col: 0 };
  }
  if (pos.mode === 'f') {
    // The log's cap rotated lines away: absolute numbers still hold.
    const dropped = got.droppedLines as number;
    if (back < dropped) notes.push(`${dropped - back} lines after the cursor were dropped by the log cap before this read`);
    got = await page(registry, id, Math.max(0, back - dropped), ALL_LINES, maxBytes);
    if (back < dropped || pos.line === 0 || got.lines.length === 0) return { got, skip: 0, col: 0 };
    return pos.col > 0 ? from(got, 0) : { got, skip: same(got.lines[0]) ? 1 : 0, col: 0 };
  }
  got = await page(registry, id, 0, ALL_LINES, maxBytes);
  for (let j = Math.min(back, got.lines.length - 1); j >= 0; j--) {
    if (same(got.lines[j])) return from(got, j);
  }
  notes.push('output after the cursor was dropped by the in-memory cap (maxOutputChars) before this read: this is the oldest output kept');
  return { got, skip: 0, col: 0 };
}
