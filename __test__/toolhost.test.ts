// Issue 17: the LLM tool in its host — waits that follow the host's abort signal and
// progress, inline completion on start (yield_ms), notifications in every result, and
// scope enforcement for calls made in a task's or a conversation's context.
import { describe, expect, it } from 'vitest';
import { handleToolCall, type ToolContext } from '../dist/index.mjs';
import { cleanupGroup, isAlive, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry({ watch: { cooldownMs: 0, maxPerSession: 50, maxPerMinute: 1000 } });

type Result = Record<string, any>;
const call = (name: string, input: unknown, context: ToolContext = {}, options = {}) => handleToolCall(ctx.registry, name, input, context, options) as Promise<Result>;

async function started(command: string, context: ToolContext = {}, extra: Record<string, unknown> = {}): Promise<Result> {
  const s = await call('process_start', { command, ...extra }, context);
  expect(s.error).toBeUndefined();
  cleanupGroup(s.pid);
  return s;
}

describe('waits that fit the host', () => {
  it('an abort during a 30 s wait returns at once with the job still running', async () => {
    const s = await started('sleep 60');
    const controller = new AbortController();
    const waiting = call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 30_000 }, {}, { signal: controller.signal });
    // Abort once the wait is under way (the job is seen running first).
    await until(async () => (await ctx.registry.poll(s.session_id)).status === 'running', 5000, 'the job');
    controller.abort();
    const w = await waiting;
    expect(w).toMatchObject({ status: 'running', aborted: true, process_running: true, note: expect.stringContaining('still running') });
    expect(isAlive(s.pid)).toBe(true);
    // An already aborted signal returns the same way without waiting at all.
    expect(await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 30_000 }, {}, { signal: AbortSignal.abort() })).toMatchObject({ aborted: true, status: 'running' });
  }, 20_000);

  it('the progress callback is called while a wait runs, with the time waited and the wait’s length', async () => {
    const s = await started('sleep 60');
    const reports: { elapsedMs: number; totalMs: number; message: string }[] = [];
    const controller = new AbortController();
    const waiting = call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 120_000 }, {}, { signal: controller.signal, onProgress: (p: (typeof reports)[number]) => reports.push(p) });
    await until(() => reports.length >= 2, 15_000, 'two progress reports');
    controller.abort();
    await waiting;
    // With progress, the wait keeps its whole length (no 50 s clamp).
    expect(reports[0]).toMatchObject({ totalMs: 120_000, message: expect.stringContaining(s.session_id) });
    expect(reports[1]!.elapsedMs).toBeGreaterThan(reports[0]!.elapsedMs);
    // A callback that throws does not end the wait.
    const boom = new AbortController();
    let calls = 0;
    const w2 = call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 120_000 }, {}, { signal: boom.signal, onProgress: () => { calls++; throw new Error('host bug'); } });
    await until(() => calls >= 2, 15_000, 'two throwing reports');
    boom.abort();
    expect(await w2).toMatchObject({ aborted: true });
  }, 40_000);

  it('without a progress callback a long wait is cut to 50 s and says the job is still running, call again', async () => {
    const s = await started('sleep 120');
    const w = await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 110_000 });
    expect(w).toMatchObject({ status: 'running', timed_out: true, process_running: true, note: expect.stringContaining('still running, call again') });
    expect(isAlive(s.pid)).toBe(true);
  }, 90_000);

  it('an aborted call with yield_ms returns the session id of the running job at once', async () => {
    const s = await call('process_start', { command: 'echo up; sleep 60', yield_ms: 30_000 }, {}, { signal: AbortSignal.abort() });
    cleanupGroup(s.pid);
    expect(s).toMatchObject({ status: 'running', aborted: true, session_id: expect.stringMatching(/^proc_/) });
    expect(isAlive(s.pid)).toBe(true);
  });

  it('yield_ms: a quick command returns its exit code and output inline; a slow one its session id and output so far', async () => {
    const quick = await call('process_start', { command: 'echo built; exit 4', yield_ms: 20_000, notify_on_complete: true });
    expect(quick).toMatchObject({ status: 'exited', exit_code: 4, output: 'built', reason: 'exited' });
    expect(quick.cursor).toEqual(expect.any(String));
    // The inline result delivered the completion: no notification follows.
    expect((await call('process', { action: 'notifications' })).notifications).toEqual([]);
    const slow = await call('process_start', { command: 'echo first; sleep 60', yield_ms: 300 });
    cleanupGroup(slow.pid);
    expect(slow).toMatchObject({ status: 'running', session_id: expect.stringMatching(/^proc_/), note: expect.stringContaining('still running') });
    expect(slow.exit_code).toBeUndefined();
    await until(async () => (await call('process', { action: 'log', session_id: slow.session_id })).text === 'first', 10_000, 'first line');
    expect(await call('process_start', { command: 'true', yield_ms: 60_000 })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('yield_ms') } });
  }, 40_000);
});

describe('notifications in results', () => {
  it('a completion reaches the model once, in a result of its scope, and never in another scope’s', async () => {
    const got: Record<string, Result[]> = { 'conv-a': [], 'conv-b': [] };
    const as = async (key: string, name: string, input: unknown) => {
      const r = await call(name, input, { sessionKey: key });
      expect(r.error).toBeUndefined();
      got[key]!.push(...(r.notifications ?? []));
      return r;
    };
    const mine = await as('conv-a', 'process_start', { command: 'echo done-here', notify_on_complete: true });
    const theirs = await as('conv-b', 'process_start', { command: 'echo done-there', notify_on_complete: true });
    cleanupGroup(mine.pid);
    cleanupGroup(theirs.pid);
    await until(async () => (await ctx.registry.poll(mine.session_id)).status === 'exited' && (await ctx.registry.poll(theirs.session_id)).status === 'exited', 10_000, 'both ends');
    for (let i = 0; i < 3; i++) {
      await as('conv-a', 'process', { action: 'list' });
      await as('conv-b', 'process', { action: i === 0 ? 'notifications' : 'list' });
    }
    expect(got['conv-a']).toEqual([expect.objectContaining({ type: 'completion', session_id: mine.session_id, exit_code: 0, output: expect.stringContaining('done-here') })]);
    expect(got['conv-b']).toEqual([expect.objectContaining({ type: 'completion', session_id: theirs.session_id })]);
    // Drained: the registry holds nothing more for either.
    expect(await ctx.registry.drainNotifications()).toEqual([]);
  }, 20_000);

  it('a host that drains events itself (context notifications: false) gets results without them; the events stay queued', async () => {
    const s = await started('echo quiet', { sessionKey: 'k', notifications: false }, { notify_on_complete: true });
    await until(async () => (await ctx.registry.poll(s.session_id)).status === 'exited', 10_000, 'the end');
    const r = await call('process', { action: 'list' }, { sessionKey: 'k', notifications: false });
    expect(r.notifications).toBeUndefined();
    expect(await ctx.registry.drainNotifications({ sessionKey: 'k' })).toEqual([expect.objectContaining({ sessionId: s.session_id })]);
  });

  it('polling an ended session neither loses its completion (it comes in that result) nor consumes it for a host that drains events itself', async () => {
    const quiet = { sessionKey: 'p', notifications: false };
    const a = await started('echo a', quiet, { notify_on_complete: true });
    const b = await started('echo b', quiet, { notify_on_complete: true });
    await until(async () => (await ctx.registry.poll(a.session_id)).status === 'exited' && (await ctx.registry.poll(b.session_id)).status === 'exited', 10_000, 'the ends');
    const polled = await call('process', { action: 'poll', session_id: a.session_id }, { sessionKey: 'p' });
    expect(polled.notifications?.map((n: Result) => n.session_id).sort()).toEqual([a.session_id, b.session_id].sort());
    expect((await call('process', { action: 'log', session_id: a.session_id }, { sessionKey: 'p' })).notifications).toBeUndefined();
    const c = await started('echo c', quiet, { notify_on_complete: true });
    await until(async () => (await ctx.registry.poll(c.session_id)).status === 'exited', 10_000, 'the end');
    expect(await call('process', { action: 'poll', session_id: c.session_id }, quiet)).not.toHaveProperty('notifications');
    expect(await ctx.registry.drainNotifications({ sessionKey: 'p' })).toEqual([expect.objectContaining({ sessionId: c.session_id })]);
  });

  it('a flood of watch hits is cut to the budget, says how many wait, and each hit arrives once over the next calls', async () => {
    const s = await started(`for i in $(seq 1 40); do echo "ERROR number $i $(head -c 300 /dev/zero | tr '\\0' x)"; done`, {}, { watch_patterns: ['ERROR'] });
    await until(async () => (await ctx.registry.poll(s.session_id)).status === 'exited', 10_000, 'the end');
    const seen: string[] = [];
    const first = await call('process', { action: 'notifications', max_chars: 2000 });
    expect(JSON.stringify(first.notifications).length).toBeLessThanOrEqual(2000);
    expect(first.notifications_pending).toBeGreaterThan(0);
    seen.push(...first.notifications.map((n: Result) => n.line));
    for (let i = 0; i < 50 && seen.length < 40; i++) {
      const r = await call('process', { action: 'poll', session_id: s.session_id, max_chars: 2000 });
      seen.push(...(r.notifications ?? []).map((n: Result) => n.line));
    }
    expect(seen.map((l) => Number(l.split(' ')[2])).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  }, 30_000);
});

describe('scope', () => {
  it('a task’s context cannot see, poll, wait on, write to or kill another task’s session, by full id or prefix', async () => {
    const other = await started('sleep 60', { taskId: 'task-b' }, { stdin: true });
    const own = await started('sleep 60', { taskId: 'task-a' });
    const a = { taskId: 'task-a' };
    for (const q of [other.session_id, other.session_id.slice(5, 11), other.session_id.slice(5)]) {
      for (const input of [
        { action: 'poll' },
        { action: 'log' },
        { action: 'wait', timeout_ms: 100 },
        { action: 'kill', grace_ms: 0 },
        { action: 'signal', signal: 'SIGKILL' },
        { action: 'screen' },
        { action: 'write', data: 'x' },
        { action: 'close' },
      ]) {
        const r = await call('process', { ...input, session_id: q }, a);
        expect(r, `${input.action} ${q}`).toMatchObject({ error: { code: 'UNKNOWN_SESSION' } });
        // Worded as for an id that never existed.
        expect(r.error.message).toBe(`no session matches ${JSON.stringify(q)}`);
      }
    }
    expect(isAlive(other.pid)).toBe(true);
    expect((await call('process', { action: 'list' }, a)).sessions.map((x: Result) => x.session_id)).toEqual([own.session_id]);
    // A prefix resolves among the visible sessions.
    expect(await call('process', { action: 'poll', session_id: own.session_id.slice(5, 9) }, a)).toMatchObject({ session_id: own.session_id });
    expect(await call('process', { action: 'kill', session_id: own.session_id, grace_ms: 0 }, a)).toMatchObject({ outcome: 'killed' });
  }, 30_000);

  it('a session of the same conversation started by another task can be read but not acted on', async () => {
    const other = await started('echo shared; sleep 60', { taskId: 'task-b', sessionKey: 'conv' });
    const a = { taskId: 'task-a', sessionKey: 'conv' };
    await until(async () => (await call('process', { action: 'log', session_id: other.session_id }, a)).text === 'shared', 10_000, 'its output');
    expect(await call('process', { action: 'poll', session_id: other.session_id }, a)).toMatchObject({ status: 'running' });
    expect(await call('process', { action: 'kill', session_id: other.session_id }, a)).toMatchObject({ error: { code: 'SESSION_READ_ONLY' } });
    expect(isAlive(other.pid)).toBe(true);
  }, 20_000);
});

describe('list within the budget', () => {
  it('a long list keeps the newest sessions that fit max_chars and says how many older ones it left out', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await started(`exit ${i}`)).session_id);
    const listed = await call('process', { action: 'list', max_chars: 1000 });
    const shown = listed.sessions.map((x: Result) => x.session_id);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown).toEqual(ids.slice(ids.length - shown.length));
    expect(listed.sessions_omitted).toBe(12 - shown.length);
    expect(JSON.stringify(listed.sessions).length).toBeLessThanOrEqual(1000);
    expect((await call('process', { action: 'list' })).sessions).toHaveLength(12);
  }, 30_000);
});

describe('start deadlines, signals, screens and model-written env', () => {
  it('timeout_ms on start tree-kills the job after that long and its result says deadline_exceeded', async () => {
    const s = await started('sleep 60 & sleep 60', {}, { timeout_ms: 300 });
    const w = await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 20_000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'killed', deadline_exceeded: true });
  }, 30_000);

  it('signal sends one signal to the job: a SIGINT trap runs and sets the exit code', async () => {
    const s = await started("trap 'echo got-int; exit 7' INT; echo ready; while :; do sleep 0.1; done");
    await until(async () => (await call('process', { action: 'log', session_id: s.session_id })).text === 'ready', 10_000, 'the trap');
    expect(await call('process', { action: 'signal', session_id: s.session_id, signal: 'SIGINT' })).toMatchObject({ session_id: s.session_id, signal: 'SIGINT' });
    const w = await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 20_000 });
    expect(w).toMatchObject({ status: 'exited', exit_code: 7 });
    expect(await call('process', { action: 'signal', session_id: s.session_id })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('signal') } });
    expect(await call('process', { action: 'signal', session_id: s.session_id, signal: 'SIGSEGV' })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  }, 30_000);

  it('screen shows what a pty session’s terminal shows, as text', async () => {
    const s = await started("printf 'hello screen'; sleep 30", {}, { pty: true });
    const screenOf = () => call('process', { action: 'screen', session_id: s.session_id });
    await until(async () => ((await screenOf()).text ?? '').includes('hello screen'), 10_000, 'the screen');
    // The job sleeps: the screen stays as it was.
    const screen = await screenOf();
    expect(screen).toMatchObject({ session_id: s.session_id, status: 'running', cursor: { row: 0, col: 12 } });
    expect(screen).not.toHaveProperty('lines');
    const plain = await started('sleep 30');
    expect(await call('process', { action: 'screen', session_id: plain.session_id })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  }, 30_000);

  it('env written by the model may not set loader variables; withheld host secrets are named, never shown', async () => {
    expect(await call('process_start', { command: 'true', env: { LD_PRELOAD: '/tmp/x.so' } })).toMatchObject({ error: { code: 'SPAWN_REFUSED' } });
    process.env.MYAPP_TEST_API_KEY = 'not-really-a-key-0123456789';
    try {
      const s = await started('echo "[$MYAPP_TEST_API_KEY]"', {}, { yield_ms: 20_000 });
      expect(s).toMatchObject({ output: '[]', withheld_env: expect.arrayContaining(['MYAPP_TEST_API_KEY']) });
      expect(JSON.stringify(s)).not.toContain('not-really-a-key');
    } finally {
      delete process.env.MYAPP_TEST_API_KEY;
    }
  }, 30_000);
});
