/**
 * The checkpoint's entries as the bytes a write puts in the file, kept in blocks so that a
 * write encodes only the blocks that changed (issue 14): at 10 000 sessions the file is
 * 4 MB, and joining and encoding every entry's JSON on every write cost more than the rest
 * of a spawn. A block ends after an entry whose id ends in `00` (one in 256 on average), so
 * a boundary depends on the entry, not on its position: dropping or adding one entry
 * changes one block, not every block after it. A block is reused while it holds the very
 * same entry objects (the document replaces an entry's object whenever it changes it).
 */
import type { SessionRecord } from '../session/record.js';

/**
 * One entry of the document as this process last read or wrote it. `text` is its JSON as
 * written (computed once, then reused by every later write of an unchanged entry); `null`
 * until the entry is first written by this process.
 */
export interface CachedEntry {
  record: SessionRecord;
  text: string | null;
}

/** An entry's JSON as written, serialised on first use. */
export function textOf(e: CachedEntry): string {
  if (e.text === null) e.text = JSON.stringify(e.record);
  return e.text;
}

interface Block {
  entries: CachedEntry[];
  /** The entries' JSON, one per line, joined by `,\n` and encoded as UTF-8. */
  bytes: Buffer;
}

const SEPARATOR = Buffer.from(',\n');

/** Encoded blocks of entries from the last write, by the id of their first entry. */
export class EntryBlocks {
  private blocks = new Map<string, Block>();

  /** The entries' lines as buffers, joined by `,\n` (empty for no entries); unchanged blocks are not encoded again. */
  encode(entries: Iterable<CachedEntry>): Buffer[] {
    const next = new Map<string, Block>();
    const out: Buffer[] = [];
    let run: CachedEntry[] = [];
    const close = () => {
      const first = (run[0] as CachedEntry).record.id;
      const old = this.blocks.get(first);
      const block = old && old.entries.length === run.length && old.entries.every((e, i) => e === run[i]) ? old : { entries: run, bytes: Buffer.from(run.map(textOf).join(',\n')) };
      next.set(first, block);
      if (out.length > 0) out.push(SEPARATOR);
      out.push(block.bytes);
      run = [];
    };
    for (const e of entries) {
      run.push(e);
      if (e.record.id.endsWith('00')) close();
    }
    if (run.length > 0) close();
    this.blocks = next;
    return out;
  }

  /** Forgets every block (the next write encodes all entries). */
  clear(): void {
    this.blocks = new Map();
  }
}
