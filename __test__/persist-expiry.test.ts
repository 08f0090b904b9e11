// DESIGN section 5 (finished sessions pruned after a TTL and over the size cap), issue 14:
// the retention a write applies looks only at records whose TTL ran out while the cap is
// not reached, and answers exactly as the rule over every record does.
import { describe, expect, it } from 'vitest';
import { expiredNow } from '../ts/persist/expiry.js';
import { expiredIds } from '../ts/policy/retention.js';
import type { SessionRecord } from '../ts/session/record.js';

/** A small deterministic generator (the same cases on every run). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

describe('retention on write', () => {
  it('gives what expiredIds over every record gives: 400 random sets under, at and over the cap', () => {
    const rnd = random(14);
    const now = 1_700_000_000_000;
    let pruned = 0;
    for (let round = 0; round < 400; round++) {
      const n = Math.floor(rnd() * 60);
      const records = Array.from({ length: n }, (_, i) => {
        const exited = rnd() < 0.8;
        return {
          id: `proc_${round.toString(16).padStart(6, '0')}${i.toString(16).padStart(6, '0')}`,
          status: exited ? 'exited' : 'running',
          exitedAt: exited ? (rnd() < 0.1 ? null : now - Math.floor(rnd() * 10_000)) : null,
          notifyOnComplete: rnd() < 0.2,
          notificationDelivered: rnd() < 0.5,
          writer: { pid: 1 + Math.floor(rnd() * 3), startTime: '1', bootId: 'b' },
        } as unknown as SessionRecord;
      });
      const opts = { finishedTtlMs: Math.floor(rnd() * 12_000), maxSessions: Math.floor(rnd() * 70) };
      const mayPrune = (r: SessionRecord) => r.writer.pid !== 3;
      const want = expiredIds(records, opts, now, mayPrune);
      expect([...expiredNow(records, opts, now, mayPrune)].sort()).toEqual([...want].sort());
      pruned += want.size;
    }
    expect(pruned).toBeGreaterThan(100);
  });

  it('asks mayPrune only of records whose TTL ran out while under the cap', () => {
    const now = 1_700_000_000_000;
    const records = Array.from({ length: 1000 }, (_, i) => ({ id: `proc_${i.toString(16).padStart(12, '0')}`, status: 'exited', exitedAt: now - (i < 3 ? 60_000 : 10) }) as unknown as SessionRecord);
    let asked = 0;
    const out = expiredNow(records, { finishedTtlMs: 1000, maxSessions: 5000 }, now, () => {
      asked++;
      return true;
    });
    expect(out.size).toBe(3);
    expect(asked).toBe(3);
  });
});
