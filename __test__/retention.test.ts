// DESIGN section 5: finished sessions are pruned after a TTL and beyond the size cap,
// oldest finished first; running sessions are never evicted.
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { expiredIds } from '../ts/retention.js';
import type { SessionRecord } from '../ts/session.js';
import { cleanupGroup } from './support.js';

function rec(id: string, status: 'running' | 'exited', exitedAt: number | null): SessionRecord {
  return { id, status, exitedAt } as SessionRecord;
}

describe('retention', () => {
  it('drops finished sessions past the TTL, never running ones', () => {
    const now = 1_000_000;
    const out = expiredIds([rec('a', 'exited', now - 5000), rec('b', 'exited', now - 10), rec('c', 'running', null)], { finishedTtlMs: 1000 }, now);
    expect([...out]).toEqual(['a']);
  });

  it('over the cap, evicts the oldest finished first and keeps running sessions even past the cap', () => {
    const now = 1_000_000;
    const records = [rec('r1', 'running', null), rec('r2', 'running', null), rec('old', 'exited', now - 30), rec('new', 'exited', now - 10)];
    expect([...expiredIds(records, { maxSessions: 3 }, now)]).toEqual(['old']);
    expect([...expiredIds(records, { maxSessions: 1 }, now)].sort()).toEqual(['new', 'old']);
  });

  it('a registry forgets a finished session once its TTL has passed', async () => {
    const r = await ProcessRegistry.open({ finishedTtlMs: 50 });
    const a = await r.spawn('exit 0');
    cleanupGroup(a.pid);
    await r.wait(a.id, { timeoutMs: 10_000 });
    await new Promise((res) => setTimeout(res, 100));
    const b = await r.spawn('exit 0'); // any write prunes
    cleanupGroup(b.pid);
    await expect(r.poll(a.id)).rejects.toMatchObject({ code: 'UNKNOWN_SESSION' });
    await r.close();
  });
});
