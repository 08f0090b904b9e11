/**
 * A session's output streamed to stdout: page after page of `readLog` (up to 100 000 lines
 * and 4 MiB each, the most a page may hold), each written with backpressure, so a log of any
 * size goes out in bounded memory at the speed of the disk and of the reader.
 *
 * Lines are counted absolutely (lines the log cap dropped, `droppedLines`, plus the page's
 * offset in what is kept), so a rotation between two pages neither repeats nor skips a line
 * unseen: lines rotated away before they were read are reported on stderr, by number.
 */
import type { ProcessRegistry } from '../../registry.js';
import type { LogResult } from '../../types.js';
import { note, out as write } from './output.js';

/** Lines per page: with the 4 MiB cap, a page of short lines is one readLog call per 100 000 lines. */
const PAGE_LINES = 100_000;
/** The largest page `readLog` gives the surfaces; a longer single line is cut with a marker that says how many bytes. */
const PAGE_BYTES = 4 * 1024 * 1024;
/** How often `--follow` looks for new output. */
const FOLLOW_TICK_MS = 100;
/** A last line without its line break is shown once it stayed unchanged this long (it may be a prompt). */
const PARTIAL_SHOWN_AFTER_MS = 1000;

export interface StreamOptions {
  /** Where to start: the first line (`0`), an absolute line number, or the last N lines (`{ tail: N }`). */
  from: number | { tail: number };
  /** Stop after this many lines (absent: to the end). */
  limit?: number;
  /** `raw` keeps escape sequences (colours) as the job wrote them; default `plain`. */
  view?: 'plain' | 'raw';
  /** Keep reading as the job writes, until it ends or `signal` aborts. */
  follow?: boolean;
  signal?: AbortSignal;
  /** Applied to the text as it is written (character for character, e.g. control characters escaped for a terminal). */
  transform?: (text: string) => string;
}

/** What a stream showed and what it could not. */
export interface StreamReport {
  /** Lines written to stdout. */
  lines: number;
  /** Zero-based number of the first line written, counted from the first line the job wrote (null: none written). */
  firstLine: number | null;
  /** Lines the job wrote as of the last page read (dropped ones included). */
  totalLines: number;
  /** Lines that were dropped by the log cap before they could be read (the `droppedNote` of the first page says why). */
  missed: number;
  /** The last page's status: `exited` once the job ended. */
  status: LogResult['status'];
  /** `showing` of the first page: what the log holds and what its cap dropped. */
  showing: string;
  /** Bytes of output dropped before the first kept line (log cap), from the first page. */
  droppedChars: number;
  droppedLines: number;
  logEvicted: boolean;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });

/**
 * Streams the session's output as `opts` asks. Throws `OutputClosed` when stdout's reader
 * goes away. Following ends when the job has ended and every line was written, or on abort
 * (the job is left running).
 */
export async function streamOutput(r: ProcessRegistry, id: string, opts: StreamOptions): Promise<StreamReport> {
  const view = opts.view ?? 'plain';
  const out = (text: string) => write(opts.transform ? opts.transform(text) : text);
  const read = (offset: number | undefined, limit: number) => r.readLog(id, { ...(offset !== undefined && { offset }), limit, maxBytes: PAGE_BYTES, view });
  const first = await read(undefined, 1);
  const report: StreamReport = {
    lines: 0,
    firstLine: null,
    totalLines: (first.droppedLines ?? 0) + first.totalLines,
    missed: 0,
    status: first.status,
    showing: first.showing,
    droppedChars: first.droppedChars,
    droppedLines: first.droppedLines ?? 0,
    logEvicted: first.logEvicted === true,
  };
  const dropped0 = first.droppedLines ?? 0;
  // Absolute number of the next line to write.
  let next = typeof opts.from === 'number' ? opts.from : Math.max(dropped0, dropped0 + first.totalLines - opts.from.tail);
  if (typeof opts.from === 'number' && next < dropped0) next = dropped0;
  const stop = opts.limit === undefined ? Number.POSITIVE_INFINITY : next + opts.limit;
  let dropped = dropped0;
  // The log's last line while it may still grow (following a running job): its text, since
  // when it is unchanged, and what of it was written already (null: nothing).
  let partial = null as { text: string; since: number; shown: string | null } | null;
  while (next < stop && !opts.signal?.aborted) {
    const page = await read(Math.max(0, next - dropped), Math.min(PAGE_LINES, stop - next));
    report.status = page.status;
    dropped = page.droppedLines ?? 0;
    report.totalLines = dropped + page.totalLines;
    const at = dropped + page.offset;
    if (at > next && page.lines.length > 0) {
      report.missed += at - next;
      note(`procward: ${id}: ${at - next} line(s) rotated out of the log (its cap) before they were read`);
      if (partial?.shown) await out('\n');
      partial = null;
      next = at;
    }
    // A rotation between the pages moved the lines back: skip what was written already.
    const whole = at >= next;
    const lines = whole ? page.lines : page.lines.slice(next - at);
    const reachesEnd = page.offset + page.lines.length >= page.totalLines;
    const ended = page.status === 'exited';
    // The last line of a running job's log may lack its line break yet: held back until more
    // lines follow, the job ends, or it stays unchanged for a second (a prompt).
    const held = opts.follow && !ended && reachesEnd ? lines.pop() : undefined;
    if (lines.length > 0) {
      // The page's own text when it is written whole (no join of a few hundred thousand lines).
      let text = `${whole && held === undefined ? page.text : lines.join('\n')}\n`;
      const shown = partial?.shown;
      if (shown != null) text = text.startsWith(shown) ? text.slice(shown.length) : `\n${text}`;
      partial = null;
      await out(text);
      report.firstLine ??= next;
      report.lines += lines.length;
      next += lines.length;
    }
    if (held !== undefined) {
      const now = Date.now();
      if (partial === null) partial = { text: held, since: now, shown: null };
      else if (partial.text !== held) partial = { text: held, since: now, shown: partial.shown };
      const shown = partial.shown ?? '';
      if (now - partial.since >= PARTIAL_SHOWN_AFTER_MS && held !== shown && held.startsWith(shown)) {
        await out(held.slice(shown.length));
        partial.shown = held;
      }
    }
    if (lines.length > 0) continue;
    if (!opts.follow || (ended && reachesEnd)) break;
    await sleep(FOLLOW_TICK_MS, opts.signal);
  }
  if (partial?.shown != null) await out('\n');
  return report;
}
