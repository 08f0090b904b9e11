// Issue 28, kind 1: every way of seeing a job's end agrees on what was delivered, once. A
// caller's wait or kill that returns the end consumes its completion (DESIGN section 7), and
// no later internal step (a deadline's kill, the end published while a wait runs) queues it
// again, nor tells `completion` listeners of an end a caller is being handed. An end nobody
// is reading is queued once: one drain takes it, listeners hear it once.
import { describe, expect, it } from 'vitest';
import { handleToolCall } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

/** `completion` events the registry emits from now on, by session id. */
function heard(): Map<string, number> {
  const seen = new Map<string, number>();
  ctx.registry.on('completion', (e: { sessionId: string }) => seen.set(e.sessionId, (seen.get(e.sessionId) ?? 0) + 1));
  return seen;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a completion is delivered once, whoever saw the end', () => {
  it('the report: a wait that returned the end of a job killed by its own deadline leaves nothing to drain, later too', async () => {
    const told = heard();
    const s = await ctx.registry.spawn('sleep 30', { notifyOnComplete: true, timeoutMs: 300 });
    cleanupGroup(s.pid);
    const w = await ctx.registry.wait(s.id, { timeoutMs: 20_000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'killed', deadlineExceeded: true });
    // Half a second later the deadline's kill has long returned.
    await pause(700);
    expect(await ctx.registry.drainNotifications()).toEqual([]);
    expect(told.get(s.id)).toBeUndefined();
  });

  it('a deadline with no reader queues the completion once: one drain takes it, listeners hear it once', async () => {
    const told = heard();
    const s = await ctx.registry.spawn('sleep 30', { notifyOnComplete: true, timeoutMs: 200 });
    cleanupGroup(s.pid);
    await until(async () => (await ctx.registry.poll(s.id)).status === 'exited', 20_000, 'the deadline');
    const first = await ctx.registry.drainNotifications();
    expect(first).toMatchObject([{ type: 'completion', sessionId: s.id, reason: 'killed' }]);
    expect(await ctx.registry.drainNotifications()).toEqual([]);
    expect(told.get(s.id)).toBe(1);
    // A wait after the drain sees the end and takes nothing more.
    expect(await ctx.registry.wait(s.id)).toMatchObject({ status: 'exited' });
    expect(await ctx.registry.drainNotifications()).toEqual([]);
  });

  it('a caller`s kill while a wait runs: both see the end, nothing is queued and listeners hear nothing', async () => {
    const told = heard();
    const s = await ctx.registry.spawn("echo armed; while :; do sleep 0.05; done", { notifyOnComplete: true });
    cleanupGroup(s.pid);
    await until(async () => (await ctx.registry.readLog(s.id)).lines.includes('armed'), 10_000, 'the job');
    const waiting = ctx.registry.wait(s.id, { timeoutMs: 20_000 });
    const k = await ctx.registry.kill(s.id, { graceMs: 1000 });
    expect(k.outcome).toBe('killed');
    expect(await waiting).toMatchObject({ status: 'exited', reason: 'killed' });
    await pause(200);
    expect(await ctx.registry.drainNotifications()).toEqual([]);
    expect(told.get(s.id)).toBeUndefined();
  });

  it('an end that comes while a wait runs is the wait`s; an end nobody waits for is queued; an acknowledged poll takes it', async () => {
    const told = heard();
    const waited = await ctx.registry.spawn('sleep 0.3; exit 3', { notifyOnComplete: true });
    const unread = await ctx.registry.spawn('exit 4', { notifyOnComplete: true });
    expect(await ctx.registry.wait(waited.id, { timeoutMs: 20_000 })).toMatchObject({ exitCode: 3 });
    await until(async () => (await ctx.registry.poll(unread.id)).status === 'exited', 10_000, 'the second job');
    expect(told.get(waited.id)).toBeUndefined();
    expect(told.get(unread.id)).toBe(1);
    expect((await ctx.registry.poll(unread.id, { acknowledge: true })).exitCode).toBe(4);
    expect(await ctx.registry.drainNotifications()).toEqual([]);
  });

  it('through the tool: a deadline-killed job the model waited for brings no notification in later results', async () => {
    const started = (await handleToolCall(ctx.registry, 'process_start', { command: 'sleep 30', notify_on_complete: true, timeout_ms: 300 })) as { session_id: string; pid: number };
    cleanupGroup(started.pid);
    const w = (await handleToolCall(ctx.registry, 'process', { action: 'wait', session_id: started.session_id, timeout_ms: 20_000 })) as Record<string, unknown>;
    expect(w).toMatchObject({ status: 'exited', reason: 'killed' });
    await pause(700);
    const later = (await handleToolCall(ctx.registry, 'process', { action: 'notifications' })) as { notifications: unknown[] };
    expect(later.notifications).toEqual([]);
  });
});
