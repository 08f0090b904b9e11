// DESIGN section 3, one grace rule on every surface: grace 0 is SIGTERM and then SIGKILL at
// once (as `docker stop -t 0`), never "SIGTERM and wait forever". Real jobs that trap or
// ignore SIGTERM.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { handleToolCall, identity, killTree, ProcessRegistry, probe } from '../dist/index.mjs';
import { cleanupGroup, isAlive, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

/** Whether `pid` catches (`SigCgt`) or ignores (`SigIgn`) SIGTERM now: its trap line has run. */
function handlesTerm(pid: number): boolean {
  let status = '';
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return false;
  }
  const mask = (field: string) => BigInt(`0x${/^(\w+):\s*([0-9a-f]+)$/m.exec(status.split('\n').find((l) => l.startsWith(`${field}:`)) ?? '')?.[2] ?? '0'}`);
  const term = 1n << 14n;
  return ((mask('SigCgt') | mask('SigIgn')) & term) !== 0n;
}

async function startDeaf(command: string) {
  const s = await ctx.registry.spawn(command);
  cleanupGroup(s.pid);
  await until(() => handlesTerm(s.pid!), 5000, 'the TERM trap to be installed');
  return s;
}

describe.skipIf(process.platform !== 'linux')('grace 0 is SIGTERM then SIGKILL at once', () => {
  it('kill with graceMs 0 ends a job whose TERM trap prints and keeps running: it dies of SIGKILL', async () => {
    const s = await startDeaf(`trap 'echo got TERM' TERM; while :; do sleep 1; done`);
    const k = await ctx.registry.kill(s.id, { graceMs: 0 });
    expect(k).toMatchObject({ outcome: 'killed', escalated: true, survivors: [] });
    const w = await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGKILL' });
    expect(isAlive(s.pid!)).toBe(false);
  });

  it('kill with graceMs 0 ends a job that ignores SIGTERM, and its TERM-ignoring child', async () => {
    const s = await startDeaf(`trap '' TERM; sh -c 'trap "" TERM; while :; do sleep 1; done' & wait`);
    await until(() => ctxChildren(s.pid!).some(handlesTerm), 5000, 'the TERM-ignoring child');
    const child = ctxChildren(s.pid!).find(handlesTerm)!;
    const k = await ctx.registry.kill(s.id, { graceMs: 0 });
    expect(k.escalated).toBe(true);
    expect(k.survivors).toEqual([]);
    expect(isAlive(s.pid!)).toBe(false);
    expect(isAlive(child)).toBe(false);
  });

  it('a SIGSTOPped job deaf to SIGTERM is SIGKILLed by a grace-0 kill, not left stopped', async () => {
    const s = await startDeaf(`trap '' TERM; kill -STOP $$; sleep 30`);
    await until(() => probe([s.pid!])[0]?.state === 'T', 5000, 'stopped');
    const k = await ctx.registry.kill(s.id, { graceMs: 0 });
    expect(k).toMatchObject({ outcome: 'killed', escalated: true, survivors: [] });
    expect(await ctx.registry.wait(s.id, { timeoutMs: 5000 })).toMatchObject({ reason: 'killed', signal: 'SIGKILL' });
  });

  it('killTree with graceMs 0 escalates too (the low-level helper keeps the same rule)', async () => {
    const s = await startDeaf(`trap '' TERM; while :; do sleep 1; done`);
    const report = await killTree(identity(s.pid!)!, { graceMs: 0 });
    expect(report).toMatchObject({ escalated: true, survivors: [] });
    expect(report.signalled).toContain(s.pid);
  });

  it('the tool kill with grace_ms 0 escalates (the LLM surface keeps the same rule)', async () => {
    const s = await startDeaf(`trap 'echo got TERM' TERM; while :; do sleep 1; done`);
    const res = (await handleToolCall(ctx.registry, 'process', { action: 'kill', session_id: s.id, grace_ms: 0 })) as Record<string, unknown>;
    expect(res).toMatchObject({ escalated: true, survivors: [] });
    expect(isAlive(s.pid!)).toBe(false);
  });

  it('a registry opened with graceMs 0 escalates at once by default as well', async () => {
    const r = await ProcessRegistry.open({ graceMs: 0 });
    try {
      const s = await r.spawn(`trap '' TERM; while :; do sleep 1; done`);
      cleanupGroup(s.pid);
      await until(() => handlesTerm(s.pid!), 5000, 'the TERM trap to be installed');
      expect(await r.kill(s.id)).toMatchObject({ outcome: 'killed', escalated: true, survivors: [] });
    } finally {
      await r.close();
    }
  });
});

/** Live children of `pid` (from /proc), for the nested job. */
function ctxChildren(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number).filter(isAlive);
  } catch {
    return [];
  }
}
