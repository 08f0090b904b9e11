// DESIGN section 5 (memory bounded under output floods), issue 14: the output budget keeps
// its ledger of running and finished sessions as sessions start, end and are pruned, and
// a rebalance costs the running sessions, not the registry's size.
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, until } from './support.js';

const print = (ch: string, n: number) => `head -c ${n} /dev/zero | tr '\\0' ${ch}`;

describe('registry-wide output budget across starts, ends and pruning', () => {
  it('finished tails give way oldest first; after finished sessions are pruned, new running sessions still share the budget', async () => {
    const r = await ProcessRegistry.open({ maxOutputChars: 10_000, maxTotalOutputChars: 20_000, finishedTtlMs: 300 });
    try {
      const done: string[] = [];
      for (const ch of 'abcde') {
        const s = await r.spawn(print(ch, 3000));
        await r.wait(s.id, { timeoutMs: 10_000 });
        done.push(s.id);
      }
      // 15 000 held by finished sessions: all kept.
      for (const id of done) expect((await r.readLog(id)).droppedChars).toBe(0);
      for (const ch of 'fg') {
        const s = await r.spawn(print(ch, 3000));
        await r.wait(s.id, { timeoutMs: 10_000 });
        done.push(s.id);
      }
      // 21 000: the oldest gave up its tail, the newest kept it.
      expect((await r.readLog(done[0] as string)).droppedChars).toBeGreaterThan(0);
      expect((await r.readLog(done[6] as string)).droppedChars).toBe(0);
      // Past the TTL every finished session is pruned (on the next write).
      await new Promise((res) => setTimeout(res, 600));
      await r.wait((await r.spawn('true')).id);
      await until(async () => (await r.list()).length <= 1, 5000, 'finished sessions pruned');
      // Three running sessions that print 9000 characters each: a share is 20 000 / 3.
      const running: string[] = [];
      for (const ch of 'xyz') {
        const s = await r.spawn(`${print(ch, 9000)}; sleep 30`);
        cleanupGroup(s.pid);
        running.push(s.id);
      }
      await until(async () => {
        for (const id of running) if ((await r.readLog(id)).totalLines === 0) return false;
        return true;
      }, 10_000, 'output of the running sessions');
      for (const id of running) {
        const log = await r.readLog(id);
        expect(log.text.length).toBeLessThanOrEqual(Math.floor(20_000 / 3));
        expect(log.droppedChars).toBeGreaterThan(0);
      }
    } finally {
      await r.close();
    }
  });
});
