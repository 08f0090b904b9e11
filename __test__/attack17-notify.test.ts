// Issue 17, tool and notifications: events larger than max_chars are delivered cut, the
// watch rate limit is a ring (its count is exact at any limit), and a cancelled kill call
// returns at once while the kill goes on.
import { describe, expect, it } from 'vitest';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';
import { RateLimit } from '../ts/policy/notifications.js';
import { fitEvent, type ToolEvent } from '../ts/surfaces/tool/notify.js';
import { connectInMemory } from './mcp-support.js';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

type Drained = { notifications: (ToolEvent & { truncated?: Record<string, number> })[]; notifications_pending?: number };

describe('notifications larger than max_chars are delivered cut (issue 17)', () => {
  it('watch hits on 60 KB lines at max_chars 1000: every hit arrives within one call each, pending counts down to none', async () => {
    const registry = await ProcessRegistry.open({ watch: { cooldownMs: 0, maxPerSession: 100, maxPerMinute: 100 } });
    try {
      const r = (await handleToolCall(
        registry,
        'process_start',
        { command: `for i in 1 2 3 4 5 6; do printf 'HIT%s ' $i; head -c 60000 /dev/zero | tr '\\0' x; echo; done`, watch_patterns: ['HIT\\d'] },
        { taskId: 'T', notifications: false },
      )) as { session_id: string };
      await until(async () => (await registry.poll(r.session_id)).status === 'exited', 10_000, 'the end of the job');
      const lines: string[] = [];
      for (let call = 0; call < 6; call++) {
        const n = (await handleToolCall(registry, 'process', { action: 'notifications', max_chars: 1000 }, { taskId: 'T' })) as Drained;
        expect(n.notifications.length).toBeGreaterThanOrEqual(1);
        for (const e of n.notifications) {
          expect(JSON.stringify(e).length).toBeLessThanOrEqual(1000);
          expect(e.truncated?.line).toBeGreaterThan(0);
          expect(e.line).toMatch(/characters cut/);
          lines.push((e.line as string).slice(0, 4));
        }
        if (n.notifications_pending === undefined) break;
      }
      expect(lines).toEqual(['HIT1', 'HIT2', 'HIT3', 'HIT4', 'HIT5', 'HIT6']);
      const after = (await handleToolCall(registry, 'process', { action: 'notifications', max_chars: 1000 }, { taskId: 'T' })) as Drained;
      expect(after).toMatchObject({ notifications: [] });
      expect(after.notifications_pending).toBeUndefined();
    } finally {
      await registry.close();
    }
  });

  it('a completion with 2000 characters of output at max_chars 1000 arrives cut, its head and tail kept', async () => {
    const r = (await handleToolCall(
      ctx.registry,
      'process_start',
      { command: `printf 'FIRST'; head -c 3000 /dev/zero | tr '\\0' y; echo LAST`, notify_on_complete: true },
      { taskId: 'T', notifications: false },
    )) as { session_id: string };
    await until(async () => (await ctx.registry.poll(r.session_id)).status === 'exited', 10_000, 'the end of the job');
    const n = (await handleToolCall(ctx.registry, 'process', { action: 'notifications', max_chars: 1000 }, { taskId: 'T' })) as Drained;
    expect(n.notifications).toHaveLength(1);
    const e = n.notifications[0] as ToolEvent;
    expect(e).toMatchObject({ type: 'completion', session_id: r.session_id, exit_code: 0 });
    expect(e.output).toMatch(/^y+\[… \d+ characters cut\]y+LAST\n?$/);
    expect(JSON.stringify(e).length).toBeLessThan(1000);
  });

  it('fitEvent measures JSON escapes (control characters), keeps surrogate pairs whole and reports what each field lost', () => {
    const event: ToolEvent = { type: 'watch', session_id: 'proc_000000000001', command: '\u0001'.repeat(5000), pattern: 'p', line: '😀'.repeat(5000), at: 1 };
    for (const room of [400, 1000, 5000]) {
      const cut = fitEvent(event, room) as ToolEvent;
      expect(JSON.stringify(cut).length + 1).toBeLessThanOrEqual(room);
      expect(cut.session_id).toBe(event.session_id);
      expect(cut.line).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
      expect(cut.truncated?.command).toBeGreaterThan(0);
      expect((cut.command as string).length + (cut.truncated?.command as number)).toBe(5000 + ((cut.command as string).match(/\[… \d+ characters cut\]/)?.[0].length ?? NaN));
    }
    expect(fitEvent(event, 50)).toBeNull();
    const small: ToolEvent = { ...event, command: 'ok', line: 'fine' };
    expect(fitEvent(small, 1000)).toBe(small);
  });
});

describe('the watch rate limit (issue 17)', () => {
  it('lets exactly perMinute takes through in any 60 s window, stamps dropping from the front', () => {
    const rate = new RateLimit(3);
    expect([0, 1, 2, 3].map((t) => rate.take(t))).toEqual([true, true, true, false]);
    expect(rate.take(59_999)).toBe(false);
    expect(rate.take(60_000)).toBe(true); // the stamp of 0 aged out
    expect(rate.take(60_000)).toBe(false);
    expect([60_001, 60_002, 60_003].map((t) => rate.take(t))).toEqual([true, true, false]);
  });

  it('at a limit of 40 000 (a host that raised it): exactly 40 000 in a minute, then again after it', () => {
    const rate = new RateLimit(40_000);
    let passed = 0;
    for (let i = 0; i < 50_000; i++) if (rate.take(1000 + (i % 1000))) passed++;
    expect(passed).toBe(40_000);
    expect(rate.take(61_000)).toBe(true);
    expect(new RateLimit(0).take(0)).toBe(false);
  });
});

describe.skipIf(process.platform !== 'linux')("the tool's kill follows the host's abort signal (issue 17)", () => {
  it('an aborted kill call returns at once with aborted: true; the kill goes on and SIGKILLs the TERM-deaf job after the grace period', async () => {
    const r = (await handleToolCall(ctx.registry, 'process_start', { command: `trap '' TERM; echo ready; while :; do sleep 0.1; done` }, { taskId: 'T' })) as { session_id: string; pid: number };
    cleanupGroup(r.pid);
    await until(async () => (await ctx.registry.readLog(r.session_id)).lines.includes('ready'), 10_000, 'the trap');
    const abort = new AbortController();
    const call = handleToolCall(ctx.registry, 'process', { action: 'kill', session_id: r.session_id, grace_ms: 1500 }, { taskId: 'T' }, { signal: abort.signal });
    abort.abort();
    const res = (await call) as Record<string, unknown>;
    expect(res).toMatchObject({ session_id: r.session_id, aborted: true });
    expect(res.note).toMatch(/kill goes on/);
    const w = await ctx.registry.wait(r.session_id, { timeoutMs: 30_000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGKILL' });
  });

  it('a kill call aborted during an hour-long grace period returns with the job still running; its end is still published as killed', async () => {
    const r = (await handleToolCall(ctx.registry, 'process_start', { command: `trap 'echo got TERM' TERM; echo trapped; while :; do sleep 0.1; done` }, { taskId: 'T' })) as { session_id: string; pid: number };
    // A SIGTERM before the trap is set would end the job at once (seen under load).
    await until(async () => (await ctx.registry.readLog(r.session_id)).lines.includes('trapped'), 10_000, 'the trap');
    const abort = new AbortController();
    const call = handleToolCall(ctx.registry, 'process', { action: 'kill', session_id: r.session_id, grace_ms: 3_600_000 }, { taskId: 'T' }, { signal: abort.signal });
    await until(async () => (await ctx.registry.readLog(r.session_id)).lines.includes('got TERM'), 10_000, 'the SIGTERM');
    abort.abort();
    expect(await call).toMatchObject({ session_id: r.session_id, aborted: true, status: 'running' });
    // The test ends the job itself (an hour is too long): the pending kill sees it die.
    cleanupGroup(r.pid);
    process.kill(-r.pid, 'SIGKILL');
    const w = await ctx.registry.wait(r.session_id, { timeoutMs: 15_000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'killed' });
  });

  it('without an abort the kill call waits for the kill and returns its report', async () => {
    const r = (await handleToolCall(ctx.registry, 'process_start', { command: 'sleep 30' }, { taskId: 'T' })) as { session_id: string; pid: number };
    cleanupGroup(r.pid);
    const res = (await handleToolCall(ctx.registry, 'process', { action: 'kill', session_id: r.session_id, grace_ms: 0 }, { taskId: 'T' }, { signal: new AbortController().signal })) as Record<string, unknown>;
    expect(res.aborted).toBeUndefined();
    expect((await ctx.registry.poll(r.session_id)).status).toBe('exited');
  });
});

describe('MCP logging folds a flood of watch hits (issue 17)', () => {
  it('up to 2000 hits at raised limits: at most 10 hit messages a second go out one by one, the rest are counted in watch_folded messages; none is lost from the count', async () => {
    const registry = await ProcessRegistry.open({ watch: { cooldownMs: 0, maxPerSession: 100_000, maxPerMinute: 100_000 } });
    const c = await connectInMemory(registry);
    try {
      await c.client.setLoggingLevel('info');
      let raised = 0;
      registry.on('watch', () => raised++);
      const s = await c.call('process_start', { command: 'seq 2000 | sed s/^/HIT/', watch_patterns: ['HIT'] });
      cleanupGroup(s.json.pid);
      const counted = () => c.logs.reduce((n, l) => n + (l.data?.type === 'watch' ? 1 : l.data?.type === 'watch_folded' ? (l.data.folded as number) : 0), 0);
      await until(async () => (await registry.poll(s.json.session_id)).status === 'exited', 10_000, 'the end of the job');
      // Every hit the registry raised is either sent or counted in a fold message.
      await until(() => raised > 0 && counted() === raised, 15_000, 'every hit sent or folded');
      const one = c.logs.filter((l) => l.data?.type === 'watch').length;
      const folds = c.logs.filter((l) => l.data?.type === 'watch_folded');
      expect(folds.length).toBeGreaterThan(0);
      expect(one + folds.length).toBeLessThan(200);
      expect(folds[0]).toMatchObject({ level: 'notice', data: { sessions: { [s.json.session_id]: expect.any(Number) } } });
    } finally {
      await c.close();
      await registry.close();
    }
  });
});
