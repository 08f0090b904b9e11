// DESIGN section 5: finished sessions are pruned after a TTL and beyond the size cap,
// oldest finished first; running sessions are never evicted.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { expiredIds } from '../ts/policy/retention.js';
import type { SessionRecord } from '../ts/session/record.js';
import { cleanupGroup, cli, crashHost, startHost, tempDir } from './support.js';

function rec(id: string, status: 'running' | 'exited', exitedAt: number | null, fields: Partial<SessionRecord> = {}): SessionRecord {
  return { id, status, exitedAt, ...fields } as SessionRecord;
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

  it('finishedTtlMs 0: a job with notifyOnComplete keeps its session until its completion is taken; one without goes at once', async () => {
    const r = await ProcessRegistry.open({ finishedTtlMs: 0 });
    try {
      const told = await r.spawn('exit 3', { notifyOnComplete: true });
      const quiet = await r.spawn('exit 4');
      await new Promise((res) => setTimeout(res, 300));
      const next = await r.spawn('exit 0'); // any write prunes
      await new Promise((res) => setTimeout(res, 100));
      await expect(r.poll(quiet.id)).rejects.toMatchObject({ code: 'UNKNOWN_SESSION' });
      expect(await r.drainNotifications()).toMatchObject([{ sessionId: told.id, exitCode: 3 }]);
      void next;
    } finally {
      await r.close();
    }
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

  it('prunes only what the caller may prune; the cap never takes an undelivered completion', () => {
    const now = 1_000_000;
    const records = [
      rec('theirs', 'exited', now - 50),
      rec('undelivered', 'exited', now - 40, { notifyOnComplete: true }),
      rec('delivered', 'exited', now - 30, { notifyOnComplete: true, notificationDelivered: true }),
      rec('mine', 'exited', now - 20),
    ];
    const mine = (r: SessionRecord) => r.id !== 'theirs';
    // TTL: everything finished long ago, except what another live host owns and, for a
    // day, an undelivered completion (issue 28, kind 12).
    expect([...expiredIds(records, { finishedTtlMs: 1 }, now, mine)].sort()).toEqual(['delivered', 'mine']);
    expect([...expiredIds(records, { finishedTtlMs: 0 }, now + 24 * 3600_000 - 100, mine)].sort()).toEqual(['delivered', 'mine']);
    expect([...expiredIds(records, { finishedTtlMs: 0 }, now + 24 * 3600_000, mine)].sort()).toEqual(['delivered', 'mine', 'undelivered']);
    // Cap of 1: 'theirs' and 'undelivered' stay, so the cap is exceeded (2 kept).
    expect([...expiredIds(records, { maxSessions: 1 }, now, mine)].sort()).toEqual(['delivered', 'mine']);
  });

  it('a host with a short retention, and a CLI call with the defaults, never delete a live host’s sessions', async () => {
    const dir = tempDir();
    // Host A keeps finished sessions for an hour; its job has ended with output.
    const { line, host } = await startHost(
      dir,
      `const s = await r.spawn('echo kept-by-a', { durable: true }); await r.wait(s.id);
process.stdout.write(JSON.stringify({ id: s.id }) + '\\n');`,
      '{ finishedTtlMs: 3600000 }',
    );
    try {
      // Host B prunes everything finished at once, and keeps one session at most.
      const b = await ProcessRegistry.open({ stateDir: dir, finishedTtlMs: 1, maxSessions: 1 });
      for (let i = 0; i < 3; i++) {
        const s = await b.spawn('true');
        cleanupGroup(s.pid);
        await b.wait(s.id);
      }
      await new Promise((res) => setTimeout(res, 300));
      await b.spawn('true').then((s) => cleanupGroup(s.pid));
      await b.close();
      const listed = await cli(['list', '--json', '--state-dir', dir]);
      expect(listed.code).toBe(0);
      expect(existsSync(join(dir, 'sessions', line.id))).toBe(true);
      const c = await ProcessRegistry.open({ stateDir: dir });
      const log = await c.readLog(line.id);
      expect(log.lines).toContain('kept-by-a');
      await c.close();
    } finally {
      await crashHost(host);
    }
  }, 30_000);
});
