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
import { StringDecoder } from 'node:string_decoder';
import { openPrivate, readPrivate } from '../persist/jobfiles.js';
import { insideKeyBlockAt } from '../policy/redact.js';

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

/**
 * Opens the log's parts consistently, trying again (up to 20 times) when a rotation got in
 * the way: `log-state.json` changed while the parts were opened (its rotation count only
 * grows, so this holds where inode numbers, which the file system reuses, do not), or
 * the parts are not the ones it names (a rotation between its write and its renames).
 */
async function openLog(path: string): Promise<OpenLog> {
  const statePath = join(dirname(path), 'log-state.json');
  for (let attempt = 0; ; attempt++) {
    const stateText = (readPrivate(statePath) ?? '');
    const rotations = field(stateText, 'rotations');
    const rotated = rotations > 0n ? await openPrivate(`${path}.1`) : null;
    const current = await openPrivate(path);
    const handles = [rotated, current].filter((h): h is FileHandle => h !== null);
    const close = async () => {
      await Promise.all(handles.map((h) => h.close()));
    };
    const stats = await Promise.all(handles.map((h) => h.stat({ bigint: true })));
    const unchanged = ((readPrivate(statePath) ?? '')) === stateText;
    const named =
      rotations === 0n ||
      ((rotated === null || stats[0]?.ino === field(stateText, 'rotatedIno')) && (current === null || stats[stats.length - 1]?.ino === field(stateText, 'currentIno')));
    const consistent = unchanged && named;
    if (!consistent && attempt < 20) {
      await close();
      await new Promise((r) => setTimeout(r, 2));
      continue;
    }
    const drops = { bytes: Number(field(stateText, 'droppedBytes')), lines: Number(field(stateText, 'droppedLines')), lostBytes: Number(field(stateText, 'lostBytes')) };
    const parts = handles.map((handle, i) => ({ handle, size: Number(stats[i]?.size ?? 0) }));
    const start = drops.bytes;
    return { parts, drops, start, end: start + parts.reduce((n, p) => n + p.size, 0), close };
  }
}

/** Yields the log's bytes from absolute offset `from` to its end (as opened), in chunks. */
async function* chunks(log: OpenLog, from: number, chunkBytes = 1 << 20): AsyncGenerator<Buffer> {
  let at = log.start;
  for (const part of log.parts) {
    let pos = Math.max(0, from - at);
    while (pos < part.size) {
      const buf = Buffer.alloc(Math.min(chunkBytes, part.size - pos));
      const { bytesRead } = await part.handle.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      yield buf.subarray(0, bytesRead);
    }
    at += part.size;
  }
}

async function withLog<T>(path: string, use: (log: OpenLog) => Promise<T>): Promise<T> {
  const log = await openLog(path);
  try {
    return await use(log);
  } finally {
    await log.close();
  }
}

async function collect(log: OpenLog, from: number, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> {
  const got: Buffer[] = [];
  let n = 0;
  for await (const c of chunks(log, from)) {
    got.push(c);
    n += c.length;
    if (n >= maxBytes) break;
  }
  const all = Buffer.concat(got);
  return all.length > maxBytes ? all.subarray(0, maxBytes) : all;
}

/**
 * The whole kept log as text (lossy UTF-8) and what was dropped; empty when there is no log.
 * `null` when the kept parts hold more than `maxBytes` (page it with `streamLogPage`).
 */
export async function readLog(path: string, maxBytes = Number.POSITIVE_INFINITY): Promise<{ text: string; drops: LogDrops } | null> {
  return withLog(path, async (log) => (log.end - log.start > maxBytes ? null : { text: (await collect(log, log.start)).toString('utf8'), drops: log.drops }));
}

/** The last `bytes` bytes of the log as text, without a partial first character. */
export async function readLogTail(path: string, bytes: number): Promise<string> {
  return withLog(path, async (log) => {
    const from = Math.max(log.start, log.end - bytes);
    const text = (await collect(log, from)).toString('utf8');
    return from > log.start ? text.replace(/^\uFFFD+/, '') : text;
  });
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
    let end = buf.length;
    for (let i = end - 1; i >= Math.max(0, end - 4); i--) {
      const b = buf[i] as number;
      if ((b & 0xc0) === 0x80) continue;
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
      if (i + need > end) end = i;
      break;
    }
    return { text: buf.subarray(0, end).toString('utf8'), next: start + end };
  });
}

/** Logs larger than this are paged by streaming instead of being read whole. */
export const LARGE_LOG_BYTES = 16 * 1024 * 1024;

/**
 * Pages a large log without reading it into memory: counts its lines and keeps the page's
 * lines plus up to `context` lines before them (so a secret that starts before the page is
 * still recognised by redaction). `offset` undefined means the last `limit` lines.
 * The scan also follows private-key BEGIN/END markers from the log's start, so
 * `startsInKeyBlock` says whether the first returned line lies inside a block whose BEGIN
 * line came earlier: a page at any offset masks a key whatever its size, in the one pass
 * the page already costs.
 */
export async function streamLogPage(
  path: string,
  opts: { offset?: number; limit: number; context: number },
): Promise<{ lines: string[]; before: number; totalLines: number; offset: number; drops: LogDrops; startsInKeyBlock: boolean }> {
  return withLog(path, async (log) => {
    const decoder = new StringDecoder('utf8');
    const keep = opts.limit + opts.context;
    let partial = '';
    let index = 0;
    // Whether the next line starts inside a private-key block.
    let inKey = false;
    const ring: { i: number; line: string; inKey: boolean }[] = [];
    const take = (line: string) => {
      const i = index++;
      const entry = { i, line, inKey };
      if (line.includes('PRIVATE KEY')) inKey = insideKeyBlockAt(`${line}\n`, line.length + 1, inKey);
      if (opts.offset === undefined) {
        ring.push(entry);
        if (ring.length > keep) ring.shift();
      } else if (i >= opts.offset - opts.context && i < opts.offset + opts.limit) {
        ring.push(entry);
      }
    };
    for await (const chunk of chunks(log, log.start)) {
      const parts = (partial + decoder.write(chunk)).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) take(line);
    }
    partial += decoder.end();
    if (partial) take(partial);
    const totalLines = index;
    const offset = opts.offset ?? Math.max(0, totalLines - opts.limit);
    const lines = ring.filter((e) => e.i >= offset - opts.context && e.i < offset + opts.limit);
    return {
      lines: lines.map((e) => e.line),
      before: lines.filter((e) => e.i < offset).length,
      totalLines,
      offset,
      drops: log.drops,
      startsInKeyBlock: lines[0]?.inKey ?? false,
    };
  });
}
