/**
 * A line index of a durable job's log, kept in this host's memory: every 64 KiB (and at
 * each part's start and the log's end as last seen) an absolute byte offset and the number
 * of line breaks before it. With it, the byte offset of any line costs a binary search and
 * a scan of at most 64 KiB, so a page costs one pass over the bytes it returns.
 *
 * The index is built by the first page of a log (one forward pass, in 1 MiB reads that
 * yield to the event loop between them) and extended by later pages over what the job
 * appended since. It never reads anything a job or another host wrote besides the log's
 * own bytes: an entry is trusted only while the part that holds its offset is the inode it
 * was read from and the log still reaches it; a rotation that deletes the oldest part keeps
 * the entries of the parts that remain (the line breaks before the new first byte are
 * subtracted), anything else rebuilds from the first kept byte.
 *
 * (Not named `lineindex.ts`: the build keeps imports ending in `index.js` external.)
 */

/** What the index needs of an opened log (see `durablelog.ts`); offsets are absolute. */
export interface IndexedLog {
  /** Absolute offset of the first kept byte. */
  start: number;
  /** Absolute offset just past the last byte. */
  end: number;
  /** The kept parts, oldest first. */
  parts: readonly { size: number; ino: bigint }[];
  /** The bytes from `from` to `to` (absolute, within the log). */
  read(from: number, to: number): Promise<Buffer>;
}

interface Checkpoint {
  /** Absolute byte offset. */
  at: number;
  /** Line breaks from the index's anchor to `at`. */
  nl: number;
  /** Inode of the part holding `at` (the later part at a boundary, the last part at the end). */
  ino: bigint;
}

interface Entry {
  cps: Checkpoint[];
  /** Whether the byte before the last checkpoint is a line break. */
  endsWithNewline: boolean;
  /** Extensions run one at a time. */
  busy: Promise<unknown>;
}

/** Bytes between checkpoints: the most a line lookup scans. */
const STEP = 64 * 1024;
/** Bytes per read while the index is built. */
const SCAN = 1024 * 1024;
/** Logs whose index is kept (the least recently used is dropped first). */
const KEEP = 64;

const cache = new Map<string, Entry>();

/** Line breaks (`\n`) in `buf[from, to)`. A plain loop: V8 compiles it to about 1 ns a byte. */
function countNewlines(buf: Uint8Array, from = 0, to = buf.length): number {
  let n = 0;
  for (let i = from; i < to; i++) if (buf[i] === 10) n++;
  return n;
}

/** The inode of the part holding absolute offset `at` (the later part at a boundary). */
function inoAt(log: IndexedLog, at: number): bigint | undefined {
  let from = log.start;
  for (const [i, part] of log.parts.entries()) {
    if (at < from + part.size || (at === from + part.size && i === log.parts.length - 1)) return at >= from ? part.ino : undefined;
    from += part.size;
  }
  return undefined;
}

/** The checkpoints of `entry` that still hold for `log`, up to the first that does not. */
function stillValid(entry: Entry, log: IndexedLog): Checkpoint[] {
  const first = entry.cps.findIndex((c) => c.at === log.start);
  if (first < 0) return [];
  const kept: Checkpoint[] = [];
  for (const c of entry.cps.slice(first)) {
    if (c.at > log.end || inoAt(log, c.at) !== c.ino) break;
    kept.push(c);
  }
  return kept;
}

/** A log's line index, brought up to the log's end as opened. */
export class LineIndex {
  private constructor(
    private readonly log: IndexedLog,
    private readonly cps: Checkpoint[],
    /** Line breaks before the first kept byte, in the checkpoints' count. */
    private readonly base: number,
    /** Line breaks in the kept log. */
    readonly newlines: number,
    readonly endsWithNewline: boolean,
  ) {}

  /** The index of the log at `path` (opened as `log`), built or extended as needed. */
  static async of(path: string, log: IndexedLog): Promise<LineIndex> {
    let entry = cache.get(path);
    if (!entry) entry = { cps: [], endsWithNewline: false, busy: Promise.resolve() };
    cache.delete(path);
    cache.set(path, entry);
    if (cache.size > KEEP) cache.delete(cache.keys().next().value as string);
    const e = entry;
    const run = e.busy.then(() => LineIndex.extend(e, log));
    e.busy = run.catch(() => undefined);
    return run;
  }

  private static async extend(entry: Entry, log: IndexedLog): Promise<LineIndex> {
    let cps = stillValid(entry, log);
    let endsWithNewline = cps.length > 0 && cps[cps.length - 1]?.at === entry.cps[entry.cps.length - 1]?.at ? entry.endsWithNewline : false;
    if (cps.length === 0) {
      const ino = inoAt(log, log.start);
      cps = ino === undefined ? [] : [{ at: log.start, nl: 0, ino }];
    }
    const last = cps[cps.length - 1];
    if (last && last.at < log.end) {
      // A checkpoint past the last full step that is not a part boundary is replaced.
      let at = last.at;
      let nl = last.nl;
      if (cps.length > 1 && (at - log.start) % STEP !== 0 && !log.parts.some((_, i) => partStart(log, i) === at)) cps.pop();
      const bounds = log.parts.map((_, i) => partStart(log, i));
      while (at < log.end) {
        const to = Math.min(log.end, at + SCAN);
        const buf = await log.read(at, to);
        if (buf.length === 0) break;
        let i = 0;
        while (i < buf.length) {
          const pos = at + i;
          const nextStep = log.start + (Math.floor((pos - log.start) / STEP) + 1) * STEP;
          const nextBound = bounds.find((b) => b > pos) ?? Number.POSITIVE_INFINITY;
          const stop = Math.min(nextStep, nextBound, at + buf.length);
          nl += countNewlines(buf, i, stop - at);
          i = stop - at;
          const ino = inoAt(log, stop);
          if (ino !== undefined && (stop === nextStep || stop === nextBound || stop === log.end)) cps.push({ at: stop, nl, ino });
        }
        endsWithNewline = buf[buf.length - 1] === 10;
        at += buf.length;
      }
      if (cps[cps.length - 1]?.at !== at) {
        const ino = inoAt(log, at);
        if (ino !== undefined) cps.push({ at, nl, ino });
      }
    }
    entry.cps = cps;
    entry.endsWithNewline = endsWithNewline;
    const base = cps[0]?.nl ?? 0;
    const end = cps[cps.length - 1];
    return new LineIndex(log, cps, base, (end?.nl ?? 0) - base, endsWithNewline);
  }

  /** Lines in the kept log (a trailing line break does not start a new line). */
  get totalLines(): number {
    const scanned = this.cps[this.cps.length - 1]?.at ?? this.log.start;
    return this.newlines + (scanned > this.log.start && !this.endsWithNewline ? 1 : 0);
  }

  /** Absolute offset just past the indexed bytes (the log's end as opened, unless it shrank). */
  get end(): number {
    return this.cps[this.cps.length - 1]?.at ?? this.log.start;
  }

  /** The last checkpoint at or before `pos`. */
  private before(pos: number, key: 'at' | 'nl'): Checkpoint {
    let lo = 0;
    let hi = this.cps.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.cps[mid] as Checkpoint)[key] <= pos) lo = mid;
      else hi = mid - 1;
    }
    return this.cps[lo] as Checkpoint;
  }

  /** The line (0-based) that holds absolute offset `pos`: line breaks from the kept start to it. */
  async lineAt(pos: number): Promise<number> {
    const p = Math.min(Math.max(pos, this.log.start), this.end);
    const cp = this.before(p, 'at');
    const buf = await this.log.read(cp.at, p);
    return cp.nl - this.base + countNewlines(buf);
  }

  /** Absolute offset where line `k` (0-based) starts; the indexed end for `k` past the last line break. */
  async lineStart(k: number): Promise<number> {
    if (k <= 0) return this.log.start;
    if (k > this.newlines) return this.end;
    // The k-th line break lies after the last checkpoint with fewer than k before it.
    const want = this.base + k;
    const cp = this.before(want - 1, 'nl');
    let at = cp.at;
    let nl = cp.nl;
    while (at < this.end) {
      const buf = await this.log.read(at, Math.min(this.end, at + STEP));
      if (buf.length === 0) break;
      for (let i = 0; i < buf.length; i++) {
        if (buf[i] === 10 && ++nl === want) return at + i + 1;
      }
      at += buf.length;
    }
    return this.end;
  }
}

function partStart(log: IndexedLog, i: number): number {
  let at = log.start;
  for (let j = 0; j < i; j++) at += log.parts[j]?.size ?? 0;
  return at;
}
