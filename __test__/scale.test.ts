// DESIGN sections 5 and 9, issue 14 (attack r04): the output budget costs O(1) amortised
// per start and end, so a burst of N ends costs O(N) native tail resizes, not N², and the
// running tails still fit the budget. Runs the registry from source to read the budget's
// counters.
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { budgetCounters } from '../ts/output/budget.js';
import { ProcessRegistry } from '../ts/registry.js';

const groups: number[] = [];
let dir = '';

afterEach(() => {
  for (const g of groups.splice(0)) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {}
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function until(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('output budget at scale', () => {
  it('N jobs that start, print and end together cost O(N) tail resizes, and the running tails fit the budget', async () => {
    const N = 200;
    const budget = 200_000;
    dir = mkdtempSync(join(tmpdir(), 'procward-scale-'));
    const gate = join(dir, 'gate');
    execFileSync('mkfifo', [gate]);
    // Held open for reading and writing, so a job's `read` opens it at once and waits for a line.
    const fd = openSync(gate, 'r+');
    // Each share (1000 bytes at N running) is below the cap, so every start and end changes it.
    const r = await ProcessRegistry.open({ maxOutputChars: 10_000, maxTotalOutputChars: budget });
    try {
      const before = budgetCounters.resizes;
      const ids: string[] = [];
      for (let i = 0; i < N; i++) {
        const s = await r.spawn(`head -c 5000 /dev/zero | tr '\\0' x; read x < ${gate}; exit ${i % 7}`);
        groups.push(s.pid as number);
        ids.push(s.id);
      }
      await until(async () => {
        for (const id of ids) if ((await r.readLog(id)).totalLines === 0) return false;
        return true;
      }, 60_000, 'output of every job');
      // 200 × 5000 bytes were printed; the running tails hold at most the budget.
      let held = 0;
      for (const id of ids) held += (await r.readLog(id)).text.length;
      expect(held).toBeLessThanOrEqual(budget);
      expect(held).toBeGreaterThan(0);
      writeSync(fd, 'go\n'.repeat(N));
      const ends = await Promise.all(ids.map((id) => r.wait(id, { timeoutMs: 60_000 })));
      expect(ends.map((w) => w.exitCode)).toEqual(ids.map((_, i) => i % 7));
      // Resizing every running tail at every start and end would be about N² = 40 000.
      const resizes = budgetCounters.resizes - before;
      expect(resizes).toBeGreaterThanOrEqual(N);
      expect(resizes).toBeLessThanOrEqual(10 * N);
      // After the ends, one new running session gets the whole cap again.
      const s = await r.spawn('head -c 12000 /dev/zero | tr "\\0" y; sleep 30');
      groups.push(s.pid as number);
      // The cap keeps the last 10 000 bytes of its one line; a page shows them without the
      // cut line's first 512 characters (see `fromWholeLine`), which may be part of a secret.
      await until(async () => (await r.readLog(s.id)).text.length >= 10_000 - 512 + 1, 20_000, 'the new job filling its cap');
      expect((await r.readLog(s.id)).text).toBe(`…${'y'.repeat(10_000 - 512)}`);
    } finally {
      closeSync(fd);
      await r.close();
    }
  }, 120_000);
});
