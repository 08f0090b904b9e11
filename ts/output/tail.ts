/**
 * Output tails: the bounded rolling tail of a session's output, kept in memory here or by
 * the native job, behind one view ({@link TailView}) the registry reads.
 */
import { insideKeyBlockAt, KeyBlockTracker } from '../policy/redact.js';

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

  /**
   * Counts `bytes` of output as dropped though they never reached the tail: output read from
   * elsewhere in part only (the last bytes of a far-side log, see `remote/poller.ts`).
   */
  skip(bytes: number): void {
    this.totalChars += Math.max(0, Math.floor(bytes));
  }

  /** Lowers the cap and trims to it at once (for the registry-wide output budget). */
  shrinkTo(maxChars: number): void {
    this.maxChars = Math.max(0, Math.floor(maxChars));
    if (this.size > this.maxChars) this.text();
  }

  /**
   * Bytes dropped from the front because of the cap: every byte the text no longer holds,
   * a character cut by the cap included (it is dropped whole, see {@link text}).
   */
  get droppedChars(): number {
    return this.totalChars - this.keptBytes();
  }

  /** Bytes {@link text} keeps: the last `maxChars`, less the rest of a character they start inside. */
  private keptBytes(): number {
    if (this.size <= this.maxChars) return this.size;
    let skip = this.size - this.maxChars;
    let kept = this.maxChars;
    for (let i = this.head; i < this.chunks.length && kept > 0; i++) {
      const chunk = this.chunks[i] as Buffer;
      if (skip >= chunk.length) {
        skip -= chunk.length;
        continue;
      }
      // Continuation bytes (10xxxxxx) at the front belong to a character that starts before it.
      while (skip < chunk.length && kept > 0 && ((chunk[skip] as number) & 0xc0) === 0x80) {
        skip++;
        kept--;
      }
      if (skip < chunk.length) break;
      skip = 0;
    }
    return kept;
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

/** What replaces the head of a line whose front was cut off, when it is the only line kept. */
export const CUT_MARK = '…';
/** The most of such a head replaced when no blank ends it sooner (a JWT is rarely longer). */
const CUT_HEAD_CHARS = 512;

/**
 * Text whose front was cut off (by a cap, or a read of a log's last bytes), as it may be
 * shown: its first line is a piece of a line whose start is gone, and a secret cut there (a
 * token's tail, a value whose name fell off) would pass every rule. So it starts at its first
 * whole line (`from`: where, in `text`); text of a single cut line has its head up to the
 * first blank (at most 512 characters) replaced by {@link CUT_MARK} (`from` 0).
 */
export function fromWholeLine(text: string): { text: string; from: number } {
  const nl = text.indexOf('\n');
  if (nl >= 0 && nl < text.length - 1) return { text: text.slice(nl + 1), from: nl + 1 };
  const blank = text.slice(0, CUT_HEAD_CHARS).search(/\s/);
  return { text: CUT_MARK + text.slice(blank < 0 ? CUT_HEAD_CHARS : blank), from: 0 };
}

/**
 * The tail's text as it may be shown: once the cap has dropped the front, from its first
 * whole line (see {@link fromWholeLine}). `startsInKeyBlock` is for the text returned.
 */
export function visibleTail(tail: TailView): { text: string; startsInKeyBlock: boolean } {
  const all = tail.text();
  if (tail.droppedChars === 0 || all === '') return { text: all, startsInKeyBlock: tail.startsInKeyBlock };
  const { text, from } = fromWholeLine(all);
  return { text, startsInKeyBlock: from === 0 ? tail.startsInKeyBlock : insideKeyBlockAt(all, from, tail.startsInKeyBlock) };
}
