// Issue 14, DESIGN section 6: a write re-encodes only the blocks of entries that changed,
// and the file it writes is byte for byte the one a write of every entry gives.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Checkpoint } from '../ts/persist/checkpoint.js';
import type { SessionRecord } from '../ts/session/record.js';
import { deadHostEntry, tempDir } from './support.js';

function record(i: number, note = ''): SessionRecord {
  const now = 1_700_000_000_000 + i;
  const id = `proc_${i.toString(16).padStart(12, '0')}`;
  return deadHostEntry(id, { schemaVersion: 2, command: `make test ${i}${note}`, startedAt: now, exitedAt: now, updatedAt: now }) as SessionRecord;
}

/** The file without its write time. */
const body = (dir: string) => readFileSync(join(dir, 'checkpoint.json'), 'utf8').replace(/"writtenAt":\d+/, '');

const KEEP = { maxSessions: 1e6, finishedTtlMs: 1e12 };

describe('checkpoint writes re-encode what changed', () => {
  it('after changes in a few blocks and new entries, the file equals one written whole by a fresh checkpoint', async () => {
    const a = tempDir();
    const cp = new Checkpoint(a);
    let records = Array.from({ length: 2000 }, (_, i) => record(i));
    await cp.save(records, KEEP);
    // Entries in three blocks change (one of them the first), five are new, then again.
    for (const round of [1, 2]) {
      const changed = [0, 700, 1999].map((i) => ({ ...record(i, ` changed ${round}`), updatedAt: (records[i] as SessionRecord).updatedAt + 1 }));
      const added = Array.from({ length: 5 }, (_, k) => record(5000 + round * 10 + k));
      records = records.map((r) => changed.find((c) => c.id === r.id) ?? r).concat(added);
      await cp.save({ changed: [...changed, ...added], all: () => records }, KEEP);
    }
    const b = tempDir();
    await new Checkpoint(b).save(records, KEEP);
    expect(body(a)).toBe(body(b));
    const ids = JSON.parse(readFileSync(join(a, 'checkpoint.json'), 'utf8')).sessions.map((s: SessionRecord) => s.id);
    expect(ids).toHaveLength(2010);
    expect(JSON.parse(readFileSync(join(a, 'checkpoint.json'), 'utf8')).sessions[700].command).toBe('make test 700 changed 2');
  });

  it('entries dropped by retention leave the other blocks as they were and the file whole', async () => {
    const a = tempDir();
    const cp = new Checkpoint(a);
    const records = Array.from({ length: 1000 }, (_, i) => record(i));
    await cp.save(records, KEEP);
    // A cap of 990: the 10 oldest finished entries go (all in the first block).
    await new Promise((r) => setTimeout(r, 300));
    await cp.save({ changed: [record(3000)], all: () => [...records, record(3000)] }, { maxSessions: 991, finishedTtlMs: 1e12 });
    const b = tempDir();
    await new Checkpoint(b).save([...records.slice(10), record(3000)], KEEP);
    expect(body(a)).toBe(body(b));
  });
});
