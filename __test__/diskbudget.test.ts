// Issue 14, the disk budget of durable logs (`maxTotalLogBytes`): over it, the logs of the
// oldest ended sessions whose output was delivered are evicted; a running job's log never
// is; what was evicted is said by list, readLog and the CLI; eviction never leaves the
// session directory, and hosts sharing the state directory evict without tripping on each other.
import { existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry, type SessionSummary } from '../dist/index.mjs';
import { cleanupGroup, cli, startHost, tempDir, until } from './support.js';

const KIB = 1024;
const BUDGET = 256 * KIB;
/** About 100 KB of output: 1000 lines of 100 characters. */
const HUNDRED_KB = `head -c 100000 /dev/zero | tr '\\0' x | fold -w 100; echo`;

/** Disk the session's log parts take, measured here as the budget measures it (st_blocks × 512). */
function logDisk(stateDir: string, id: string): number {
  let n = 0;
  for (const part of ['output.log', 'output.log.1']) {
    const p = join(stateDir, 'sessions', id, part);
    if (existsSync(p)) n += lstatSync(p).blocks * 512;
  }
  return n;
}

async function runToEnd(r: ProcessRegistry, command: string): Promise<SessionSummary> {
  const s = await r.spawn(command);
  cleanupGroup(s.pid);
  expect((await r.wait(s.id, { timeoutMs: 15_000 })).exitCode).toBe(0);
  return s;
}

describe('disk budget of durable logs', () => {
  it('evicts the oldest delivered logs until the total fits, never a running one, and says so in list, readLog and usage', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir, maxTotalLogBytes: BUDGET });
    try {
      const running = await r.spawn(`${HUNDRED_KB}; echo written; exec sleep 30`);
      cleanupGroup(running.pid);
      await until(async () => (await r.readLog(running.id, { limit: 1 })).lines[0] === 'written', 10_000, 'the running job to write');
      const a = await runToEnd(r, `${HUNDRED_KB}; echo end-a`);
      const b = await runToEnd(r, `${HUNDRED_KB}; echo end-b`);
      const c = await runToEnd(r, `${HUNDRED_KB}; echo end-c`);

      const usage = await r.logDiskUsage();
      expect(usage.budgetBytes).toBe(BUDGET);
      expect(usage.usedBytes).toBeLessThanOrEqual(BUDGET);
      expect(usage.overBudget).toBe(false);
      expect(usage.runningBytes).toBe(logDisk(stateDir, running.id));
      expect(usage.runningBytes).toBeGreaterThanOrEqual(100_000);
      // Four logs of about 100 KiB in a budget of 256 KiB: the two oldest ended ones go.
      expect(usage.evictedSessions).toBe(2);
      const all = [running, a, b, c].map((s) => s.id);
      expect(usage.usedBytes).toBe(all.reduce((n, id) => n + logDisk(stateDir, id), 0));

      const listed = new Map((await r.list()).map((s) => [s.id, s]));
      expect(listed.get(a.id)?.logEvicted).toBe(true);
      expect(listed.get(b.id)?.logEvicted).toBe(true);
      expect(listed.get(c.id)?.logEvicted).toBeUndefined();
      expect(listed.get(running.id)).toMatchObject({ status: 'running' });
      expect(listed.get(running.id)?.logEvicted).toBeUndefined();
      expect((await r.poll(a.id)).logEvicted).toBe(true);

      // The evicted session keeps its record and end; its log parts are gone, the marker says when.
      const dirA = join(stateDir, 'sessions', a.id);
      expect(readdirSync(dirA).filter((f) => f.startsWith('output') || f === 'log-state.json')).toEqual([]);
      const marker = JSON.parse(readFileSync(join(dirA, 'log-evicted'), 'utf8'));
      expect(marker).toMatchObject({ evictedAt: expect.any(Number), diskBytes: expect.any(Number), outputBytes: 101_000 + 'end-a\n'.length });
      expect(statSync(join(dirA, 'log-evicted')).mode & 0o777).toBe(0o600);

      const log = await r.readLog(a.id);
      expect(log).toMatchObject({ id: a.id, status: 'exited', lines: [], totalLines: 0, logEvicted: true, droppedChars: marker.outputBytes });
      expect(log.showing).toMatch(/^no lines: the log was evicted at \d{4}-.*maxTotalLogBytes/);
      expect((await r.readLog(c.id, { limit: 1 })).lines).toEqual(['end-c']);
      expect((await r.readLog(running.id, { limit: 1 })).lines).toEqual(['written']);
      expect(r.diagnostics.filter((d) => /budget|evict/.test(d))).toEqual([]);
    } finally {
      await r.close();
    }
  });

  it('a running job over the budget is reported, not evicted', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir, maxTotalLogBytes: 64 * KIB });
    try {
      const s = await r.spawn(`${HUNDRED_KB}; echo written; exec sleep 30`);
      cleanupGroup(s.pid);
      await until(async () => (await r.readLog(s.id, { limit: 1 })).lines[0] === 'written', 10_000, 'the job to write');
      const usage = await r.logDiskUsage();
      expect(usage).toMatchObject({ overBudget: true, evictedSessions: 0, runningBytes: usage.usedBytes });
      expect(usage.usedBytes).toBeGreaterThan(64 * KIB);
      expect(r.diagnostics.some((d) => d.includes('over their budget') && d.includes("running jobs' logs"))).toBe(true);
      expect((await r.list())[0]?.logEvicted).toBeUndefined();
      expect((await r.readLog(s.id, { offset: 0, limit: 1 })).lines[0]).toBe('x'.repeat(100));
    } finally {
      await r.close();
    }
  });

  it('an undelivered completion keeps its log until it is drained (budget 0)', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir, maxTotalLogBytes: 0 });
    try {
      const s = await r.spawn('echo kept-until-drained', { notifyOnComplete: true });
      cleanupGroup(s.pid);
      // poll does not consume the completion.
      await until(async () => (await r.poll(s.id)).status === 'exited', 10_000, 'the job to end');
      expect(await r.logDiskUsage()).toMatchObject({ evictedSessions: 0, overBudget: true, runningBytes: 0 });
      // (readLog is not asked: a page that reaches the end after the exit delivers the completion.)
      expect(readFileSync(join(stateDir, 'sessions', s.id, 'output.log'), 'utf8')).toBe('kept-until-drained\n');
      expect((await r.drainNotifications()).map((e) => e.type)).toEqual(['completion']);
      expect(await r.logDiskUsage()).toMatchObject({ usedBytes: 0, evictedSessions: 1, overBudget: false });
      expect((await r.readLog(s.id)).logEvicted).toBe(true);
    } finally {
      await r.close();
    }
  });

  it('eviction follows no symlink and empties no hard-linked file: what lies outside the session directory is untouched', async () => {
    const stateDir = tempDir();
    const outside = tempDir();
    const w = await ProcessRegistry.open({ stateDir });
    const x = await runToEnd(w, 'echo x');
    const y = await runToEnd(w, 'echo y');
    await w.close();

    // x: its log is a hard link to a file outside, its rotated part a symlink to another.
    const linked = join(outside, 'linked.txt');
    const pointed = join(outside, 'pointed.txt');
    writeFileSync(linked, 'LINKED-CONTENT\n');
    writeFileSync(pointed, 'POINTED-CONTENT\n');
    const dirX = join(stateDir, 'sessions', x.id);
    rmSync(join(dirX, 'output.log'));
    linkSync(linked, join(dirX, 'output.log'));
    symlinkSync(pointed, join(dirX, 'output.log.1'));
    writeFileSync(join(dirX, 'log-state.json'), '{"rotations":1}\n');
    // y: its session directory is a symlink to a directory outside that holds a log.
    const elsewhere = join(outside, 'elsewhere');
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, 'output.log'), 'ELSEWHERE-LOG\n');
    const dirY = join(stateDir, 'sessions', y.id);
    rmSync(dirY, { recursive: true });
    symlinkSync(elsewhere, dirY);

    const r = await ProcessRegistry.open({ stateDir, maxTotalLogBytes: 0 });
    try {
      await r.logDiskUsage();
      expect(readFileSync(linked, 'utf8')).toBe('LINKED-CONTENT\n');
      expect(readFileSync(pointed, 'utf8')).toBe('POINTED-CONTENT\n');
      expect(readdirSync(elsewhere)).toEqual(['output.log']);
      expect(readFileSync(join(elsewhere, 'output.log'), 'utf8')).toBe('ELSEWHERE-LOG\n');
      // x's names were removed (the link itself, never its target) and x reads as evicted.
      expect(readdirSync(dirX).filter((f) => f.startsWith('output') || f === 'log-state.json')).toEqual([]);
      expect((await r.readLog(x.id)).logEvicted).toBe(true);
      // y's directory is not trusted: nothing is written or removed through it, and it is said.
      expect(lstatSync(dirY).isSymbolicLink()).toBe(true);
      expect(r.diagnostics.some((d) => d.startsWith(`${y.id}: log not evicted`))).toBe(true);
    } finally {
      await r.close();
    }
  });

  it('hosts sharing a state directory evict at the same time without errors, each log once, oldest first', async () => {
    const stateDir = tempDir();
    const w = await ProcessRegistry.open({ stateDir });
    const ended: SessionSummary[] = [];
    for (let i = 0; i < 6; i++) ended.push(await runToEnd(w, `${HUNDRED_KB}; echo end-${i}`));
    await w.close();
    const onDisk = ended.map((s) => logDisk(stateDir, s.id));

    // A second host process and this one open the directory (whose writer is gone, so both
    // adopt its sessions) and enforce the same budget at once.
    const [other, r] = await Promise.all([
      startHost(stateDir, 'console.log(JSON.stringify({ usage: await r.logDiskUsage(), diagnostics: r.diagnostics }));', `{ maxTotalLogBytes: ${BUDGET} }`),
      ProcessRegistry.open({ stateDir, maxTotalLogBytes: BUDGET }),
    ]);
    try {
      const mine = await r.logDiskUsage();
      for (const u of [mine, other.line.usage]) expect(u).toMatchObject({ overBudget: false });
      const aboutLogs = (ds: string[]) => ds.filter((d) => /budget|evict|log-budget/.test(d));
      expect(aboutLogs(other.line.diagnostics)).toEqual([]);
      expect(aboutLogs(r.diagnostics)).toEqual([]);
      // Oldest first: the kept ones are the newest that fit.
      let keep = 0;
      let kept = 0;
      for (let i = ended.length - 1; i >= 0 && kept + (onDisk[i] as number) <= BUDGET; i--, keep++) kept += onDisk[i] as number;
      const evicted = ended.map((s) => existsSync(join(stateDir, 'sessions', s.id, 'log-evicted')));
      expect(evicted).toEqual(ended.map((_, i) => i < ended.length - keep));
      expect(ended.reduce((n, s) => n + logDisk(stateDir, s.id), 0)).toBeLessThanOrEqual(BUDGET);
      // Both hosts see the same evictions (the other host's through the markers).
      const flagged = (await r.list()).filter((s) => s.logEvicted).map((s) => s.id);
      expect(flagged.sort()).toEqual(ended.filter((_, i) => evicted[i]).map((s) => s.id).sort());
    } finally {
      await r.close();
    }
  });

  it('the CLI lists evicted logs and the disk the logs take against the budget', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir, maxTotalLogBytes: 0 });
    const s = await runToEnd(r, 'echo gone');
    // A log is evicted only once its supervisor is gone (it may still append until then), which
    // can trail the job's end under load: each usage() call enforces the budget again.
    await until(async () => (await r.logDiskUsage()).evictedSessions === 1, 20_000, 'the ended log evicted');
    await r.close();
    const w = await ProcessRegistry.open({ stateDir });
    const kept = await runToEnd(w, `${HUNDRED_KB}`);
    await w.close();

    const text = await cli(['list', '--state-dir', stateDir]);
    expect(text.code).toBe(0);
    const line = (id: string) => text.stdout.split('\n').find((l) => l.startsWith(id)) ?? '';
    expect(line(s.id)).toMatch(/ exit 0 .* log evicted /);
    expect(line(kept.id)).not.toContain('evicted');
    expect(text.stdout.trimEnd().split('\n').at(-1)).toMatch(/^durable logs: \d+(\.\d)? KiB of 1 GiB budget, 1 evicted$/);
    const json = JSON.parse((await cli(['list', '--json', '--state-dir', stateDir])).stdout) as SessionSummary[];
    expect(json.find((x) => x.id === s.id)?.logEvicted).toBe(true);
    expect(json.find((x) => x.id === kept.id)?.logEvicted).toBeUndefined();
  });

  it('maxTotalLogBytes must be a non-negative integer', async () => {
    await expect(ProcessRegistry.open({ maxTotalLogBytes: -1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('maxTotalLogBytes') });
    await expect(ProcessRegistry.open({ maxTotalLogBytes: 1.5 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
