import { KeyBlockTracker, insideKeyBlockAt } from './redact.js';

/**
 * Output views: a bounded rolling tail of a session's output, the plain view used for
 * previews (ANSI escapes removed, carriage-return progress shown as its latest frame), and
 * line paging for `readLog`.
 */

/** Default size of a session's in-memory tail, in bytes of UTF-8 text. */
export const DEFAULT_TAIL_CHARS = 200_000;

/** Default budget of in-memory output across all sessions of a registry, in bytes of UTF-8 text. */
export const DEFAULT_TOTAL_OUTPUT_CHARS = 20_000_000;

/**
 * A rolling tail of output, kept as UTF-8 bytes (the native reader hands over buffers
 * without a copy; text is made only when it is read). It keeps the last `maxChars` bytes —
 * at least that many characters' worth of text, fewer for non-ASCII — and counts what it
 * dropped. Appends never copy: whole chunks fall off the front, and the first kept chunk is
 * trimmed only when the text is read.
 */
export class OutputTail {
  private chunks: Buffer[] = [];
  private head = 0;
  private size = 0;
  /** Bytes ever appended. */
  totalChars = 0;
  /** Whether the dropped front ended inside a private-key block. */
  private readonly keyBlocks = new KeyBlockTracker();

  constructor(public maxChars: number = DEFAULT_TAIL_CHARS) {}

  /** Bytes held now (at most about `maxChars` plus one chunk). */
  get heldChars(): number {
    return this.size;
  }

  append(data: string | Buffer): void {
    const chunk = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.size += chunk.length;
    this.totalChars += chunk.length;
    while (this.head < this.chunks.length - 1 && this.size - (this.chunks[this.head] as Buffer).length >= this.maxChars) {
      this.size -= (this.chunks[this.head] as Buffer).length;
      this.keyBlocks.drop((this.chunks[this.head] as Buffer).toString('utf8'));
      this.chunks[this.head++] = EMPTY;
    }
    if (this.head > 1024) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }

  /** Lowers the cap and trims to it at once (for the registry-wide output budget). */
  shrinkTo(maxChars: number): void {
    this.maxChars = Math.max(0, Math.floor(maxChars));
    if (this.size > this.maxChars) this.text();
  }

  /** Bytes dropped from the front because of the cap. */
  get droppedChars(): number {
    return this.totalChars - Math.min(this.size, this.maxChars);
  }

  /** The retained text (the last `maxChars` bytes, starting at a whole character). */
  text(): string {
    let all = Buffer.concat(this.chunks.slice(this.head));
    if (all.length > this.maxChars) {
      let start = all.length - this.maxChars;
      // Never start inside a UTF-8 sequence.
      while (start < all.length && ((all[start] as number) & 0xc0) === 0x80) start++;
      this.keyBlocks.drop(all.subarray(0, start).toString('utf8'));
      all = all.subarray(start);
    }
    this.chunks = all.length ? [all] : [];
    this.head = 0;
    this.size = all.length;
    return all.toString('utf8');
  }

  /** Whether {@link text} starts inside a private-key block whose BEGIN line was dropped. */
  get startsInKeyBlock(): boolean {
    return this.keyBlocks.insideBefore(this.text());
  }
}

const EMPTY = Buffer.alloc(0);

/** What the registry needs of a session's output tail (in memory here, or native). */
export interface TailView {
  append(data: string | Buffer): void;
  text(): string;
  readonly totalChars: number;
  readonly droppedChars: number;
  readonly heldChars: number;
  readonly maxChars: number;
  /** Whether `text()` starts inside a private-key block whose BEGIN line was dropped (for redaction). */
  readonly startsInKeyBlock: boolean;
  shrinkTo(maxChars: number): void;
}

/** The tail a native job keeps itself (the reader thread fills it; text is made on read). */
export class NativeTail implements TailView {
  constructor(
    private readonly job: {
      tailText(): string;
      tailStats(): { total: number; dropped: number; held: number; limit: number; startsInKeyBlock: boolean };
      setTailLimit(bytes: number): void;
    },
  ) {}

  /** Output reaches a native tail from its reader; late text from elsewhere is not merged. */
  append(): void {}

  text(): string {
    return this.job.tailText();
  }

  get totalChars(): number {
    return this.job.tailStats().total;
  }

  get droppedChars(): number {
    return this.job.tailStats().dropped;
  }

  get heldChars(): number {
    return this.job.tailStats().held;
  }

  get maxChars(): number {
    return this.job.tailStats().limit;
  }

  get startsInKeyBlock(): boolean {
    return this.job.tailStats().startsInKeyBlock;
  }

  shrinkTo(maxChars: number): void {
    this.job.setTailLimit(Math.max(0, Math.floor(maxChars)));
  }
}

// CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \), and other two-byte escapes.
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]|\u009b[0-?]*[ -/]*[@-~]/g;

/**
 * The plain view of output: ANSI CSI/OSC sequences removed, `\r\n` as one line break,
 * and within each line only the text after the last bare `\r` (a progress bar's latest
 * frame).
 */
export function plainText(text: string): string {
  return text
    .replace(ANSI, '')
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((line) => {
      const cr = line.lastIndexOf('\r', line.length - 2);
      return (cr >= 0 ? line.slice(cr + 1) : line).replace(/\r$/, '');
    })
    .join('\n');
}

/** Characters read before a preview window so a secret cut by the window is still recognised. */
const REDACTION_MARGIN = 4096;

/**
 * The last `maxChars` characters of the plain view, passed through `clean` (redaction)
 * *before* the window is cut: a token that straddles the window's start would otherwise
 * lose the prefix that identifies it and leak its rest. `clean` also learns whether the
 * window starts inside a private-key block (found by one backward search from the cut,
 * from `startsInKeyBlock`, the state at the start of `text`), so a key of any size is
 * masked whole.
 */
export function preview(
  text: string,
  maxChars = 2000,
  clean: (s: string, startsInKeyBlock: boolean) => string = (s) => s,
  startsInKeyBlock = false,
): string {
  // Widen the raw window until its plain view (escape sequences removed) is long enough,
  // so the cut never falls inside a token whose prefix would then be lost.
  let size = maxChars + REDACTION_MARGIN;
  let plain = plainText(text.length > size ? text.slice(text.length - size) : text);
  while (plain.length < maxChars + REDACTION_MARGIN && size < text.length) {
    size *= 4;
    plain = plainText(text.length > size ? text.slice(text.length - size) : text);
  }
  const cut = Math.max(0, text.length - size);
  const cleaned = clean(plain, cut === 0 ? startsInKeyBlock : insideKeyBlockAt(text, cut, startsInKeyBlock));
  return cleaned.length > maxChars ? cleaned.slice(cleaned.length - maxChars) : cleaned;
}

/** One page of lines. */
export interface LinePage {
  /** The lines of this page, without their line breaks. */
  lines: string[];
  /** Lines in the whole text (a trailing newline does not start a new line). */
  totalLines: number;
  /** Zero-based index of the first line of the page. */
  offset: number;
  /** Human-readable range, e.g. `lines 301-500 of 500`. */
  showing: string;
}

/** The `showing` text of a page: `lines 301-500 of 500`, or `no lines (of N)`. */
export function showing(offset: number, count: number, totalLines: number): string {
  return count === 0 ? `no lines (of ${totalLines})` : `lines ${offset + 1}-${offset + count} of ${totalLines}`;
}

/**
 * Pages `text` by line. Default: the last `limit` (200) lines; an explicit `offset`
 * (zero-based, 0 = the first line) pages from the start. `view: 'plain'` (the default) strips
 * ANSI sequences and shows carriage-return progress as its latest frame; `'raw'` keeps the
 * text as written (UTF-8 decoded).
 */
export function pageLines(text: string, opts: { offset?: number; limit?: number; view?: 'plain' | 'raw' } = {}): LinePage {
  const limit = opts.limit ?? 200;
  if (!Number.isInteger(limit) || limit <= 0) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  if (opts.offset !== undefined && (!Number.isInteger(opts.offset) || opts.offset < 0)) {
    throw new RangeError(`offset must be a non-negative integer, got ${opts.offset}`);
  }
  const all = (opts.view === 'raw' ? text : plainText(text)).split('\n');
  if (all.length > 0 && all[all.length - 1] === '') all.pop();
  const totalLines = all.length;
  const offset = opts.offset ?? Math.max(0, totalLines - limit);
  const lines = all.slice(offset, offset + limit);
  return { lines, totalLines, offset, showing: showing(offset, lines.length, totalLines) };
}
