// Issue 16 item 10: every options object of the public API is checked. An unknown key is an
// INVALID_ARGUMENT error with a "did you mean" hint (the tool's input gets the same hint), and
// a value of the wrong type says what it got.
import { describe, expect, it } from 'vitest';
import { handleToolCall, identity, killTree, ProcessRegistry } from '../dist/index.mjs';
import { closestName, describeValue } from '../ts/optioncheck.js';
import { perTestRegistry, tempDir } from './support.js';

const ctx = perTestRegistry();

/** The error a call rejects with (a test failure when it resolves). */
async function failure(call: () => Promise<unknown>): Promise<{ code: string; message: string; details?: Record<string, unknown> }> {
  try {
    await call();
  } catch (err) {
    return err as { code: string; message: string; details?: Record<string, unknown> };
  }
  throw new Error('the call succeeded');
}

describe('unknown option keys', () => {
  it('wait(id, { timeout }) is refused with a hint instead of waiting forever (the field report)', async () => {
    const s = await ctx.start('sleep 30');
    const err = await failure(() => ctx.registry.wait(s.id, { timeout: 100 } as never));
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', details: { option: 'timeout', suggestion: 'timeoutMs' } });
    expect(err.message).toBe('wait options: unknown option `timeout` (did you mean `timeoutMs`?)');
    expect((await ctx.registry.poll(s.id)).status).toBe('running');
  });

  it('spawn(cmd, { workdir }) starts nothing and points at cwd (the field report)', async () => {
    const err = await failure(() => ctx.registry.spawn('touch here', { workdir: tempDir() } as never));
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', details: { option: 'workdir', suggestion: 'cwd' } });
    expect(await ctx.registry.list()).toEqual([]);
  });

  it('every call: case slips, snake_case, dropped or swapped letters, nested keys', async () => {
    const s = await ctx.start('sleep 30', { pty: {} });
    const r = ctx.registry;
    const cases: [string, () => Promise<unknown>, string, string][] = [
      ['poll', () => r.poll(s.id, { acknowledged: true } as never), 'acknowledged', 'acknowledge'],
      ['readLog', () => r.readLog(s.id, { max_bytes: 4096 } as never), 'max_bytes', 'maxBytes'],
      ['readLog', () => r.readLog(s.id, { ofset: 0 } as never), 'ofset', 'offset'],
      ['kill', () => r.kill(s.id, { grace: 0 } as never), 'grace', 'graceMs'],
      ['kill', () => r.kill(s.id, { gracems: 0 } as never), 'gracems', 'graceMs'],
      ['list', () => r.list({ task_id: 't' } as never), 'task_id', 'taskId'],
      ['killAll', () => r.killAll({ taskID: 't' } as never), 'taskID', 'taskId'],
      ['killStartedSince', () => r.killStartedSince('t', [], { graceMS: 0 } as never), 'graceMS', 'graceMs'],
      ['drainNotifications', () => r.drainNotifications({ sesionKey: 'k' } as never), 'sesionKey', 'sessionKey'],
      ['resize', () => r.resize(s.id, { columns: 80, rows: 24 } as never), 'columns', 'cols'],
      ['spawn', () => r.spawn('true', { notifyOnCompletion: true } as never), 'notifyOnCompletion', 'notifyOnComplete'],
      ['spawn', () => r.spawn('true', { pty: { col: 80 } } as never), 'pty.col', 'cols'],
      ['open', () => ProcessRegistry.open({ stateDIr: tempDir() } as never), 'stateDIr', 'stateDir'],
      ['open', () => ProcessRegistry.open({ watch: { cooldown: 5 } } as never), 'watch.cooldown', 'cooldownMs'],
    ];
    for (const [call, run, option, suggestion] of cases) {
      const err = await failure(run);
      expect({ call, code: err.code, details: err.details }).toEqual({ call, code: 'INVALID_ARGUMENT', details: { option, suggestion } });
      expect(err.message).toContain(`did you mean \`${suggestion}\`?`);
    }
    // Nothing was killed by the refused kills.
    expect((await r.poll(s.id)).status).toBe('running');
  });

  it('a key close to nothing lists the known options', async () => {
    const err = await failure(() => ctx.registry.hasActiveForSession('k', { maxAgeMs: 5 } as never));
    expect(err.message).toBe('hasActiveForSession options: unknown option `maxAgeMs`; known options: maxActiveAgeMs');
  });

  it('the hint: aliases, case conventions and edits within a third of the name', () => {
    expect(closestName('timeout', ['timeoutMs', 'signal'])).toBe('timeoutMs');
    expect(closestName('timeout_ms', ['timeoutMs', 'signal'])).toBe('timeoutMs');
    expect(closestName('TIMEOUTMS', ['timeoutMs', 'signal'])).toBe('timeoutMs');
    expect(closestName('workdir', ['cwd', 'env'])).toBe('cwd');
    expect(closestName('sigal', ['timeoutMs', 'signal'])).toBe('signal');
    expect(closestName('ptty', ['pty', 'env'])).toBe('pty');
    expect(closestName('verbose', ['timeoutMs', 'signal'])).toBeUndefined();
    expect(closestName('x', ['cwd', 'env'])).toBeUndefined();
  });
});

describe('values of the wrong type say what they got', () => {
  it('timeoutMs: "100" is a string (the field report)', async () => {
    const s = await ctx.start('sleep 30');
    const err = await failure(() => ctx.registry.wait(s.id, { timeoutMs: '100' } as never));
    expect(err.message).toBe('wait options: timeoutMs must be a number, got a string ("100")');
    expect(err.details).toEqual({ option: 'timeoutMs', expected: 'a number', received: 'a string ("100")' });
  });

  it('every kind of value and of expectation', async () => {
    const s = await ctx.start('sleep 30');
    const r = ctx.registry;
    const cases: [() => Promise<unknown>, string][] = [
      [() => r.poll(s.id, { acknowledge: 'yes' } as never), 'poll options: acknowledge must be a boolean, got a string ("yes")'],
      [() => r.poll(s.id, 5 as never), 'poll options must be an object, got the number 5'],
      [() => r.kill(s.id, { graceMs: null } as never), 'kill options: graceMs must be a number, got null'],
      [() => r.readLog(s.id, { view: 'html' } as never), 'readLog options: view must be one of "plain", "raw", got a string ("html")'],
      [() => r.spawn('true', { env: { A: 1 } } as never), 'spawn options: env.A must be a string, got the number 1'],
      [() => r.spawn('true', { pty: 'yes' } as never), 'spawn options: pty must be a boolean or an object, got a string ("yes")'],
      [() => r.spawn('true', { watchPatterns: 'error' } as never), 'spawn options: watchPatterns must be an array, got a string ("error")'],
      [() => r.list({ taskId: ['t'] } as never), 'list options: taskId must be a string, got an array'],
      [() => r.drainNotifications({ ownsEvent: true } as never), 'drainNotifications options: ownsEvent must be a function, got the boolean true'],
      [() => r.wait(s.id, { signal: { aborted: false } } as never), 'wait options: signal must be an AbortSignal, got an object'],
      [() => r.killAll({} as never), 'killAll options: taskId must be a string, got undefined'],
      [() => r.killAll(undefined as never), 'killAll options must be an object, got undefined'],
      [() => r.resize(s.id, undefined as never), 'resize options must be an object, got undefined'],
      [() => ProcessRegistry.open({ maxOutputChars: '100' } as never), 'open options: maxOutputChars must be a number, got a string ("100")'],
      [() => ProcessRegistry.open({ sandbox: { pollIntervalMs: new Date() } } as never), 'open options: sandbox.pollIntervalMs must be a number, got a Date'],
    ];
    for (const [run, message] of cases) expect((await failure(run)).message).toBe(message);
  });

  it('describes values', () => {
    expect(describeValue('x'.repeat(50))).toBe(`a string ("${'x'.repeat(40)}…")`);
    expect(describeValue(Number.NaN)).toBe('the number NaN');
    expect(describeValue(undefined)).toBe('undefined');
    expect(describeValue(() => 1)).toBe('a function');
    expect(describeValue(10n)).toBe('a bigint (10n)');
    expect(describeValue(Object.create(null))).toBe('an object');
  });
});

describe('valid options still work', () => {
  it('spawn with pty: true runs under a terminal, as pty: {} does', async () => {
    const s = await ctx.start('tty', { pty: true });
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect((await ctx.registry.readLog(s.id)).text).toMatch(/^\/dev\/pts\/\d+/);
    const t = await ctx.start('tty', { pty: false });
    await ctx.registry.wait(t.id, { timeoutMs: 10_000 });
    expect((await ctx.registry.readLog(t.id)).text).toBe('not a tty');
  });

  it('wait takes an AbortSignal, drain a predicate, open nested limits', async () => {
    const s = await ctx.start('sleep 30');
    const abort = new AbortController();
    const waiting = ctx.registry.wait(s.id, { signal: abort.signal, timeoutMs: 60_000 });
    abort.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    expect(await ctx.registry.drainNotifications({ ownsEvent: () => true })).toEqual([]);
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 5 }, sandbox: { pollIntervalMs: 50 }, finishedTtlMs: 1000 });
    await r.close();
  });
});

describe('the tool gives the same hint in its own names', () => {
  it('timeout for timeout_ms, workDir for workdir', async () => {
    const s = await ctx.start('sleep 30');
    const wait = await handleToolCall(ctx.registry, 'process', { action: 'wait', session_id: s.id, timeout: 100 });
    expect(wait).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: 'input: unknown key `timeout` (did you mean `timeout_ms`?)' } });
    const start = await handleToolCall(ctx.registry, 'process_start', { command: 'true', workDir: '/tmp' });
    expect(start).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: 'input: unknown key `workDir` (did you mean `workdir`?)' } });
  });
});

describe('the options of the low-level helpers and of the tool host', () => {
  it('killTree refuses a misspelt option before it signals anything', async () => {
    const s = await ctx.start('sleep 30');
    const root = identity(s.pid as number);
    if (!root) throw new Error('no identity');
    const err = await failure(() => killTree(root, { grace: 0 } as never));
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', details: { option: 'grace', suggestion: 'graceMs' } });
    expect(err.message).toBe('killTree options: unknown option `grace` (did you mean `graceMs`?)');
    expect((await ctx.registry.poll(s.id)).status).toBe('running');
  });

  it('a misspelt tool context is an error object, not a call with the agent unscoped', async () => {
    const res = await handleToolCall(ctx.registry, 'process', { action: 'list' }, { taskID: 'agent' } as never);
    expect(res).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: 'tool context: unknown option `taskID` (did you mean `taskId`?)' } });
  });
});
