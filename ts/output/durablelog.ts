/**
 * Reading a durable job's log, which the supervisor rotates (see `procward-core`'s
 * `logfile`): `output.log` is the current part, `output.log.1` the previous one, and
 * `log-state.json` (`{rotations, droppedBytes, droppedLines, lostBytes, rotatedIno,
 * currentIno}`) says what was dropped and which inodes the parts have.
 *
 * Offsets here are absolute: byte N of everything the job ever wrote, dropped parts
 * included. The kept output starts at `droppedBytes`.
 */
import type { FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { BigIntStats } from 'node:fs';
import { openPrivate, readPrivate } from '../persist/jobfiles.js';
import { insideKeyBlockAt, leadsWithKeyMaterial } from '../policy/redact.js';
import { type IndexedLog, KEY_NEEDLE, LineIndex } from './lineoffsets.js';
import { fromWholeLine } from './tail.js';

/** What was lost to the log's cap. */
export interface LogDrops {
  /** Bytes of output in parts deleted by rotation (the oldest output). */
  bytes: number;
  /** Line breaks in those parts. */
  lines: number;
  /** Bytes the supervisor could not write (disk full, I/O error). */
  lostBytes: number;
}

interface Part {
  handle: FileHandle;
  size: number;
  /** The part's inode number: a cached line index is trusted only for the inode it read. */
  ino: bigint;
  /** The part's `st_mtime` and `st_ctime` (ns): the line index tells a rewrite in place by them. */
  mtime: bigint;
  ctime: bigint;
}

/** The kept parts of a log as of one moment, oldest first. Close it after use. */
interface OpenLog {
  parts: Part[];
  drops: LogDrops;
  /** Absolute offset of the first kept byte. */
  start: number;
  /** Absolute offset just past the last byte. */
  end: number;
  close(): Promise<void>;
}

/** Nothing dropped. */
export const NO_DROPS: LogDrops = { bytes: 0, lines: 0, lostBytes: 0 };

function field(text: string, name: string): bigint {
  const m = new RegExp(`"${name}":(\\d+)`).exec(text);
  return m ? BigInt(m[1] as string) : 0n;
}

/** Attempts at a consistent view of the parts before the last one seen is used as it is. */
const OPEN_ATTEMPTS = 20;

/**
 * Opens the log's parts consistently, trying again (up to 20 times, 2 ms apart) when a
 * rotation got in the way: `log-state.json` changed while the parts were opened (its
 * rotation count only grows, so this holds where inode numbers, which the file system
 * reuses, do not), the parts are not the ones it names (a rotation between its write and
 * its renames), or `output.log.1` was unlinked by a rotation after it was opened. A log
 * rotated faster than that is read as last opened (a part unlinked since is still read
 * through its handle: the log as it was then). A part that is a symlink, not a regular
 * file or a hard link is `STATE_DIR_UNTRUSTED` at once: a rotation never makes those (see
 * `openPrivate`). Every handle is closed on every path.
 */
async function openLog(path: string): Promise<OpenLog> {
  const statePath = join(dirname(path), 'log-state.json');
  for (let attempt = 1; ; attempt++) {
    const stateText = readPrivate(statePath) ?? '';
    const rotations = field(stateText, 'rotations');
    const rotated = rotations > 0n ? await openPrivate(`${path}.1`, true) : null;
    let current: FileHandle | null;
    try {
      current = await openPrivate(path, true);
    } catch (err) {
      await rotated?.close();
      throw err;
    }
    const handles = [rotated, current].filter((h): h is FileHandle => h !== null);
    const close = async () => {
      await Promise.all(handles.map((h) => h.close()));
    };
    let stats: BigIntStats[];
    try {
      stats = await Promise.all(handles.map((h) => h.stat({ bigint: true })));
    } catch (err) {
      await close();
      throw err;
    }
    const unchanged = (readPrivate(statePath) ?? '') === stateText;
    // A part unlinked by a rotation after its open: its bytes are dropped output by now.
    const gone = stats.some((st) => st.nlink === 0n);
    const named =
      rotations === 0n ||
      ((rotated === null || stats[0]?.ino === field(stateText, 'rotatedIno')) && (current === null || stats[stats.length - 1]?.ino === field(stateText, 'currentIno')));
    if (!(unchanged && named && !gone) && attempt < OPEN_ATTEMPTS) {
      await close();
      await new Promise((r) => setTimeout(r, 2));
      continue;
    }
    const drops = { bytes: Number(field(stateText, 'droppedBytes')), lines: Number(field(stateText, 'droppedLines')), lostBytes: Number(field(stateText, 'lostBytes')) };
    const parts = handles.map((handle, i) => {
      const st = stats[i] as BigIntStats;
      return { handle, size: Number(st.size), ino: st.ino, mtime: st.mtimeNs, ctime: st.ctimeNs };
    });
    // log-state.json is untrusted: offsets past 2^52 would lose bytes in arithmetic (a read
    // that never advances), so such a count does not move the kept start.
    const start = Number.isSafeInteger(drops.bytes) && drops.bytes <= 2 ** 52 ? drops.bytes : 0;
    return { parts, drops, start, end: start + parts.reduce((n, p) => n + p.size, 0), close };
  }
}

/**
 * The log's bytes from absolute offset `from`, at most `maxBytes` of them and never past
 * its end as opened: one buffer (`into` when it is large enough), read in place part by
 * part (shorter when a part was cut short since it was opened).
 */
async function collect(log: OpenLog, from: number, maxBytes = Number.POSITIVE_INFINITY, into?: Buffer): Promise<Buffer> {
  const size = Math.max(0, Math.min(log.end, from + maxBytes) - Math.max(from, log.start));
  if (size === 0) return Buffer.alloc(0);
  const buf = into && into.length >= size ? into.subarray(0, size) : Buffer.allocUnsafe(size);
  let n = 0;
  let at = log.start;
  for (const part of log.parts) {
    let pos = Math.max(0, from - at);
    while (pos < part.size && n < size) {
      const { bytesRead } = await part.handle.read(buf, n, Math.min(size - n, part.size - pos), pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      n += bytesRead;
    }
    at += part.size;
  }
  return n < size ? buf.subarray(0, n) : buf;
}

async function withLog<T>(path: string, use: (log: OpenLog) => Promise<T>): Promise<T> {
  const log = await openLog(path);
  try {
    return await use(log);
  } finally {
    await log.close();
  }
}

/** The last `bytes` bytes of the log as text, from its first whole line when the log is longer. */
export async function readLogTail(path: string, bytes: number): Promise<string> {
  return withLog(path, async (log) => {
    const from = Math.max(log.start, log.end - bytes);
    const text = (await collect(log, from)).toString('utf8');
    // The last bytes start inside a line: shown from the next whole line (see `fromWholeLine`).
    return from > log.start ? fromWholeLine(text.replace(/^\uFFFD+/, '')).text : text;
  });
}

/**
 * `end`, moved back to the start of a UTF-8 sequence that `buf[0, end)` holds only the
 * first bytes of (a read that stopped inside a character), so no U+FFFD is made of it.
 */
export function wholeCharsEnd(buf: Uint8Array, end: number): number {
  for (let i = end - 1; i >= Math.max(0, end - 4); i--) {
    const b = buf[i] as number;
    if ((b & 0xc0) === 0x80) continue;
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return i + need > end ? i : end;
  }
  return end;
}

/**
 * Reads from absolute offset `offset` to the log's end (at most 4 MiB), stopping before a
 * UTF-8 sequence that is not complete yet; `next` is where the following read starts.
 * Output dropped by rotation before it was read is skipped; a log that is shorter than
 * `offset` (replaced) is read again from its start.
 */
export async function readLogFrom(path: string, offset: number): Promise<{ text: string; next: number }> {
  return withLog(path, async (log) => {
    const start = offset > log.end ? log.start : Math.max(offset, log.start);
    const buf = await collect(log, start, 4 * 1024 * 1024);
    const end = wholeCharsEnd(buf, buf.length);
    return { text: buf.subarray(0, end).toString('utf8'), next: start + end };
  });
}

/** Bytes before a page searched for the private-key marker that decides whether the page starts in a key. */
const KEY_LOOKBACK = 1024 * 1024;
/** Bytes of context lines read before a page, so redaction sees a secret that starts before it. */
const CONTEXT_BYTES = 64 * 1024;

/** A log's bytes as the line index reads them. */
function indexed(log: OpenLog): IndexedLog {
  return { start: log.start, end: log.end, parts: log.parts, read: (from, to, into) => collect(log, from, to - from, into) };
}

/** One page of a log's lines, raw (not redacted), with context lines before it. */
export interface RawLogPage {
  /** The context lines, each with its line break (empty when there are none). */
  context: string;
  /** The page's lines joined by line breaks (the last one cut when it alone exceeds the cap). */
  body: string;
  /** How many lines `context` holds. */
  before: number;
  /** Zero-based line number of the page's first line. */
  offset: number;
  /** Lines of the page (lines in `body`; 0 for an empty page). */
  count: number;
  totalLines: number;
  drops: LogDrops;
  /** Whether `context` (or `body` when there is none) starts inside a private-key block whose BEGIN came earlier. */
  startsInKeyBlock: boolean;
  /**
   * Bytes of the page's only line left unread: it runs past the cap and the
   * {@link CUT_MARGIN} read after it (0: `body` holds every line whole). The caller
   * redacts `body`, then cuts it to the cap.
   */
  cutBytes: number;
}

/**
 * Bytes read past the cap of a line longer than it, so the line is redacted before it is
 * cut (DESIGN section 11): a secret that straddles the cut is seen whole and masked. 64 KiB
 * hold any secret the rules bound (URL passwords up to 256 characters, tokens, JWTs, key
 * blocks in a JSON string); `paging.ts` leaves out a longer run of token characters that
 * reaches the end of what was read.
 */
export const CUT_MARGIN = 64 * 1024;

/**
 * A page of `limit` lines from line `offset` (undefined: the last `limit` lines) holding at
 * most `maxBytes` bytes of the log: lines that do not fit are left out (from the end of a
 * page at an offset, from the start of a page from the end), and of a line longer than the
 * cap alone `maxBytes` + {@link CUT_MARGIN} bytes are read (`cutBytes`: the rest). Costs a line-index lookup (see `lineoffsets.ts`; free for a
 * page that starts where an earlier one ended) and one read of the page, its context (up to
 * `context` lines and 64 KiB) and up to 1 MiB before them, searched for the private-key
 * marker that says whether the page starts inside a key (a log whose front was rotated away
 * may start inside a key whose BEGIN went with it: that is told from key material at its
 * first lines).
 */
export async function logPage(path: string, opts: { offset?: number; limit: number; context: number; maxBytes: number }): Promise<RawLogPage> {
  return withLog(path, async (log) => {
    const idx = await LineIndex.of(path, indexed(log));
    const totalLines = idx.totalLines;
    let first = opts.offset ?? Math.max(0, totalLines - opts.limit);
    let last = Math.min(totalLines, first + opts.limit);
    const empty = { context: '', body: '', before: 0, offset: first, count: 0, totalLines, drops: log.drops, startsInKeyBlock: false, cutBytes: 0 };
    if (first >= totalLines) return empty;
    let s = await idx.lineStart(first);
    let e = await idx.lineStart(last);
    if (e - s > opts.maxBytes) {
      if (opts.offset === undefined) {
        // From the end: keep the last lines that fit.
        const cutAt = e - opts.maxBytes;
        const k = await idx.lineAt(cutAt);
        first = Math.min(last - 1, (await idx.lineStart(k)) >= cutAt ? k : k + 1);
        s = await idx.lineStart(first);
      } else {
        last = Math.max(first + 1, await idx.lineAt(s + opts.maxBytes));
        e = await idx.lineStart(last);
      }
    }
    const lineBytes = e - s - (last <= idx.newlines ? 1 : 0);
    const readTo = e - s > opts.maxBytes ? Math.min(e, s + opts.maxBytes + CUT_MARGIN) : e;
    let ctxFirst = Math.max(0, first - opts.context);
    let cs = await idx.lineStart(ctxFirst);
    if (s - cs > CONTEXT_BYTES) {
      ctxFirst = Math.min(first, (await idx.lineAt(s - CONTEXT_BYTES)) + 1);
      cs = await idx.lineStart(ctxFirst);
    }
    const lookFrom = Math.max(log.start, cs - KEY_LOOKBACK);
    const lead = log.drops.bytes > 0 && lookFrom === log.start && leadsWithKeyMaterial((await collect(log, log.start, 16 * 1024)).toString('utf8'));
    // One read: the bytes searched for a key marker (only when the index saw one there, as
    // most pages have none before them), the context, the page.
    const from = idx.hasKeyMarker(lookFrom, cs) ? lookFrom : cs;
    const buf = await collect(log, from, readTo - from);
    const behind = buf.subarray(0, cs - from);
    const behindText = behind.includes(KEY_NEEDLE) ? behind.toString('utf8') : '';
    const startsInKeyBlock = insideKeyBlockAt(behindText, behindText.length, lead);
    // The page's last line break (when it has one) ends the page rather than starting a line;
    // a line read in part ends before a character the read stopped inside.
    const whole = from + buf.length >= e;
    const bodyEnd = !whole ? wholeCharsEnd(buf, buf.length) : buf.length > s - from && buf[buf.length - 1] === 10 ? buf.length - 1 : buf.length;
    const body = buf.toString('utf8', s - from, bodyEnd);
    const cutBytes = last - first === 1 ? Math.max(0, lineBytes - (bodyEnd - (s - from))) : 0;
    const context = buf.toString('utf8', cs - from, s - from);
    return { context, body, before: first - ctxFirst, offset: first, count: last - first, totalLines, drops: log.drops, startsInKeyBlock, cutBytes };
  });
}
