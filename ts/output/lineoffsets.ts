/**
 * A line index of a durable job's log, kept in this host's memory: every 64 KiB (and at
 * each part's start and the log's end as last seen) an absolute byte offset and the number
 * of line breaks before it. With it, the byte offset of any line costs a binary search and
 * a scan of at most 64 KiB, so a page costs one pass over the bytes it returns. Beside
 * them: the last 16 line starts lookups found (a page that starts where the last one ended
 * costs no scan), and the offset of every private-key marker's needle (`PRIVATE KEY`), so a
 * page searches the 1 MiB before it for the marker that says whether it starts inside a
 * key only when there is one (otherwise that read would cost more than a small page).
 *
 * The index is built by the first page of a log (one forward pass, in 1 MiB reads that
 * yield to the event loop between them) and extended by later pages over what the job
 * appended since. It never reads anything a job or another host wrote besides the log's
 * own bytes: an entry is trusted only while the part that holds its offset is the inode it
 * was read from and the log still reaches it; a rotation that deletes the oldest part keeps
 * the entries of the parts that remain (the line breaks before the new first byte are
 * subtracted), anything else rebuilds from the first kept byte. So does a log rewritten in
 * place: a part written since (newer mtime) that is shorter, or a log with other bytes
 * before where the index ended (its last 32 bytes are kept and compared whenever a part's
 * size, mtime or ctime changed).
 *
 * (Not named `lineindex.ts`: the build keeps imports ending in `index.js` external.)
 */

/** What the index needs of an opened log (see `durablelog.ts`); offsets are absolute. */
export interface IndexedLog {
  /** Absolute offset of the first kept byte. */
  start: number;
  /** Absolute offset just past the last byte. */
  end: number;
  /** The kept parts, oldest first: size, inode, `st_mtime` and `st_ctime` (ns). */
  parts: readonly LogPart[];
  /** The bytes from `from` to `to` (absolute, within the log), in `into` when it is large enough. */
  read(from: number, to: number, into?: Buffer): Promise<Buffer>;
}

/** A part of a log as opened. */
export interface LogPart {
  size: number;
  ino: bigint;
  mtime: bigint;
  ctime: bigint;
}

interface Checkpoint {
  /** Absolute byte offset. */
  at: number;
  /** Line breaks from the index's anchor to `at`. */
  nl: number;
  /** Inode of the part holding `at` (the later part at a boundary, the last part at the end). */
  ino: bigint;
}

/** A line start found by a lookup, kept so the next page (which starts there) needs no scan. */
interface LineStart extends Checkpoint {
  /** The index's anchor it counts from (see `Entry.gen`). */
  gen: number;
}

interface Entry {
  cps: Checkpoint[];
  /** Whether the byte before the last checkpoint is a line break. */
  endsWithNewline: boolean;
  /** Extensions run one at a time. */
  busy: Promise<unknown>;
  /** The log's start, end and parts (inode, size) when last extended: unchanged, the checkpoints need no check. */
  shape: string;
  /** Counts up each time the index is rebuilt from a new anchor (line starts of another count are not used). */
  gen: number;
  /** The last line starts found (at most {@link KEEP_STARTS}), checked like checkpoints when used. */
  starts: LineStart[];
  /** Absolute offsets of every {@link KEY_NEEDLE} in the indexed bytes, ascending; null once there were too many to keep. */
  keys: number[] | null;
  /** The parts as last seen (the newest `st_mtime` of each inode): a part written since without growing was rewritten. */
  parts: LogPart[];
  /** The last bytes before the indexed end: a log that grew with other bytes there was rewritten, not appended to. */
  probe: { at: number; bytes: Buffer } | null;
}

/** Bytes between checkpoints: the most a line lookup scans. */
const STEP = 64 * 1024;
/** Bytes per read while the index is built. */
const SCAN = 1024 * 1024;
/** Logs whose index is kept (the least recently used is dropped first). */
const KEEP = 64;
/** Line starts kept per log: a page looks up its first line, its end and its context's start. */
const KEEP_STARTS = 16;
/** What every private-key marker holds (see `policy/redact/keyblock.ts`). */
export const KEY_NEEDLE = 'PRIVATE KEY';
/** Key markers whose offsets are kept per log; past it, pages search the bytes before them again. */
const KEEP_KEYS = 100_000;

const cache = new Map<string, Entry>();

/**
 * Line breaks (`\n`) in `buf[from, to)`, four bytes at a time where the buffer is aligned
 * (SWAR: a byte of `x = word ^ 0x0a0a0a0a` is zero exactly when its bit 7 stays clear in
 * `((x & 0x7f…) + 0x7f…) | x`, and no byte carries into the next). About 0.6 ns a byte
 * whatever the lines' length, against 1.5–5 for a loop over bytes or `indexOf` per line
 * break; it bounds how fast the first page of a large log is (its index is one pass).
 */
function countNewlines(buf: Uint8Array, from = 0, to = buf.length): number {
  let n = 0;
  let i = from;
  while (i < to && (buf.byteOffset + i) % 4 !== 0) if (buf[i++] === 10) n++;
  const words = (to - i) >> 2;
  if (words > 0) {
    const w = new Int32Array(buf.buffer, buf.byteOffset + i, words);
    for (let k = 0; k < words; k++) {
      const x = (w[k] as number) ^ 0x0a0a0a0a;
      const zero = ~(((x & 0x7f7f7f7f) + 0x7f7f7f7f) | x) & 0x80808080;
      // One bit per line break, at bits 7, 15, 23, 31: the multiply sums them into the top byte.
      if (zero !== 0) n += Math.imul(zero >>> 7, 0x01010101) >>> 24;
    }
    i += words * 4;
  }
  while (i < to) if (buf[i++] === 10) n++;
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

/** What an index built for `log` stays valid for: its kept start, end and parts (a rewrite in place changes their ctime). */
function shapeOf(log: IndexedLog): string {
  return `${log.start}:${log.end}:${log.parts.map((p) => `${p.ino}/${p.size}/${p.mtime}/${p.ctime}`).join(',')}`;
}

/** Bytes before the indexed end compared when a log grew (see `Entry.probe`). */
const PROBE = 32;

/**
 * Whether a part of `log` was written since `entry` saw it (a newer mtime, same inode) and
 * is shorter: truncated (`copytruncate`, `: > output.log`, the disk budget's eviction). An
 * older mtime is a page that opened the log earlier. The same size with a newer mtime is
 * left to the probe: a write sets the mtime before the size, so `fstat` during an append
 * can see that too.
 */
function truncated(entry: Entry, log: IndexedLog): boolean {
  return log.parts.some((p) => entry.parts.some((was) => was.ino === p.ino && p.mtime > was.mtime && p.size < was.size));
}

/** The parts of `log`, each with the newest state seen of its inode (a page that opened the log earlier keeps the later state). */
function newestParts(entry: Entry, log: IndexedLog): LogPart[] {
  return log.parts.map((p) => {
    const was = entry.parts.find((w) => w.ino === p.ino);
    return was && was.mtime > p.mtime ? was : { size: p.size, ino: p.ino, mtime: p.mtime, ctime: p.ctime };
  });
}

/** Whether the bytes before the indexed end are still the ones indexed (true when `log` does not reach them: opened earlier, or rotated away). */
async function probeHolds(entry: Entry, log: IndexedLog): Promise<boolean> {
  const probe = entry.probe;
  if (probe === null || probe.at < log.start || probe.at + probe.bytes.length > log.end) return true;
  return probe.bytes.equals(await log.read(probe.at, probe.at + probe.bytes.length));
}

/** A log's line index, brought up to the log's end as opened. */
export class LineIndex {
  private constructor(
    private readonly log: IndexedLog,
    private readonly entry: Entry,
    private readonly gen: number,
    private readonly cps: Checkpoint[],
    /** Line breaks before the first kept byte, in the checkpoints' count. */
    private readonly base: number,
    /** Line breaks in the kept log. */
    readonly newlines: number,
    readonly endsWithNewline: boolean,
    /** The entry's key markers as of this index (an extension builds a new array, never changes this one). */
    private readonly keys: readonly number[] | null,
  ) {}

  /** The index of the log at `path` (opened as `log`), built or extended as needed. */
  static async of(path: string, log: IndexedLog): Promise<LineIndex> {
    let entry = cache.get(path);
    if (!entry) entry = { cps: [], endsWithNewline: false, busy: Promise.resolve(), shape: '', gen: 0, starts: [], keys: [], parts: [], probe: null };
    cache.delete(path);
    cache.set(path, entry);
    if (cache.size > KEEP) cache.delete(cache.keys().next().value as string);
    const e = entry;
    const run = e.busy.then(() => LineIndex.extend(e, log));
    e.busy = run.catch(() => undefined);
    return run;
  }

  private static async extend(entry: Entry, log: IndexedLog): Promise<LineIndex> {
    const shape = shapeOf(log);
    if (shape === entry.shape && entry.cps.length > 0) return LineIndex.over(entry, log);
    // A log rewritten in place (same inode) is indexed again from its start, not served stale.
    if (entry.cps.length > 0 && (truncated(entry, log) || !(await probeHolds(entry, log)))) entry.cps = [];
    entry.parts = newestParts(entry, log);
    let cps = stillValid(entry, log);
    let endsWithNewline = cps.length > 0 && cps[cps.length - 1]?.at === entry.cps[entry.cps.length - 1]?.at ? entry.endsWithNewline : false;
    if (cps.length === 0) {
      const ino = inoAt(log, log.start);
      cps = ino === undefined ? [] : [{ at: log.start, nl: 0, ino }];
      entry.gen++;
      entry.starts = [];
      entry.keys = [];
      entry.probe = null;
    }
    const last = cps[cps.length - 1];
    if (last && last.at < log.end) {
      // A checkpoint past the last full step that is not a part boundary is replaced.
      let at = last.at;
      let nl = last.nl;
      if (cps.length > 1 && (at - log.start) % STEP !== 0 && !log.parts.some((_, i) => partStart(log, i) === at)) cps.pop();
      const bounds = log.parts.map((_, i) => partStart(log, i));
      // Markers not wholly before the scan's start are found again (each read starts a
      // marker's length early, so one across two reads is found whole).
      const resume = at;
      let keys = entry.keys?.filter((k) => k >= log.start && k + KEY_NEEDLE.length <= resume) ?? null;
      // One buffer for every read of the pass: a fresh one per read costs its page faults again.
      let scratch: Buffer | undefined;
      while (at < log.end) {
        const to = Math.min(log.end, at + SCAN);
        const early = Math.min(KEY_NEEDLE.length - 1, at - log.start);
        scratch ??= Buffer.allocUnsafe(SCAN + KEY_NEEDLE.length);
        const read = await log.read(at - early, to, scratch);
        if (read.length <= early) break;
        const buf = read.subarray(early);
        for (let k = read.indexOf(KEY_NEEDLE); keys && k >= 0; k = read.indexOf(KEY_NEEDLE, k + 1)) {
          if (keys.length >= KEEP_KEYS) keys = null;
          else keys.push(at - early + k);
        }
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
        entry.probe = { at: at - Math.min(PROBE, buf.length), bytes: Buffer.from(buf.subarray(Math.max(0, buf.length - PROBE))) };
      }
      if (cps[cps.length - 1]?.at !== at) {
        const ino = inoAt(log, at);
        if (ino !== undefined) cps.push({ at, nl, ino });
      }
      entry.keys = keys;
    }
    entry.cps = cps;
    entry.endsWithNewline = endsWithNewline;
    entry.shape = cps[cps.length - 1]?.at === log.end ? shape : '';
    return LineIndex.over(entry, log);
  }

  /** The index `entry` holds, for `log` as opened. */
  private static over(entry: Entry, log: IndexedLog): LineIndex {
    const { cps } = entry;
    const base = cps[0]?.nl ?? 0;
    const end = cps[cps.length - 1];
    return new LineIndex(log, entry, entry.gen, cps, base, (end?.nl ?? 0) - base, entry.endsWithNewline, entry.keys);
  }

  /**
   * Whether a private-key marker's needle lies wholly within absolute offsets `[from, to)`
   * (true when the markers were too many to keep: the caller then searches the bytes).
   */
  hasKeyMarker(from: number, to: number): boolean {
    const keys = this.keys;
    if (keys === null || to > this.end) return true;
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((keys[mid] as number) < from) lo = mid + 1;
      else hi = mid;
    }
    return lo < keys.length && (keys[lo] as number) + KEY_NEEDLE.length <= to;
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

  /**
   * The last checkpoint at or before `pos` (by offset or by line breaks), or a later line
   * start found by an earlier lookup when one is closer and still holds: same anchor, within
   * the kept log and the indexed bytes, in the part (inode) it was found in.
   */
  private before(pos: number, key: 'at' | 'nl'): Checkpoint {
    let lo = 0;
    let hi = this.cps.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.cps[mid] as Checkpoint)[key] <= pos) lo = mid;
      else hi = mid - 1;
    }
    let best = this.cps[lo] as Checkpoint;
    for (const h of this.entry.starts) {
      if (h[key] <= pos && h.at > best.at && this.holds(h)) best = h;
    }
    return best;
  }

  private holds(h: LineStart): boolean {
    return h.gen === this.gen && h.at >= this.log.start && h.at <= this.end && h.nl >= this.base && inoAt(this.log, h.at) === h.ino;
  }

  /** Keeps a line start found by a scan (absolute offset `at`, `nl` line breaks before it in the anchor's count). */
  private remember(at: number, nl: number): void {
    const ino = inoAt(this.log, at);
    if (ino === undefined || this.entry.gen !== this.gen) return;
    const starts = this.entry.starts;
    if (starts.some((h) => h.at === at && h.gen === this.gen)) return;
    starts.push({ at, nl, ino, gen: this.gen });
    if (starts.length > KEEP_STARTS) starts.shift();
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
    const known = this.entry.starts.find((h) => h.nl === want && this.holds(h));
    if (known) return known.at;
    const cp = this.before(want - 1, 'nl');
    let at = cp.at;
    let nl = cp.nl;
    while (at < this.end) {
      const buf = await this.log.read(at, Math.min(this.end, at + STEP));
      if (buf.length === 0) break;
      for (let i = 0; i < buf.length; i++) {
        if (buf[i] === 10 && ++nl === want) {
          this.remember(at + i + 1, want);
          return at + i + 1;
        }
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
