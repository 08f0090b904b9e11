// Cases found by adversarial testing of the agent surfaces (DESIGN sections 5, 7, 8).
import { describe, expect, it } from 'vitest';
import { handleToolCall, killTree, identity, ProcessRegistry } from '../dist/index.mjs';
import { redactCommand } from '../ts/policy/redact.js';
import { cleanupGroup, crashHost, startHost, tempDir, perTestRegistry } from './support.js';

const T = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

const ctx = perTestRegistry();
const start = ctx.start;

describe('secrets wrapped in escape sequences', () => {
  it('are masked in plain and raw log views and in the preview', async () => {
    const s = await start(`printf '\\033[32m${T}\\033[0m\\n\\033[1mhttps://admin:SuperSecretPassw0rd@db.example.com\\033[0m\\n'`);
    await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    for (const view of ['plain', 'raw'] as const) {
      const log = await ctx.registry.readLog(s.id, { view });
      expect(log.text).not.toContain(T.slice(10));
      expect(log.text).not.toContain('SuperSecretPassw0rd');
    }
    expect((await ctx.registry.poll(s.id)).outputPreview).not.toContain(T.slice(10));
  });

  it('a preview window full of escape codes never cuts a token in half', async () => {
    const s = await start(`printf '%s' ${T}; for i in $(seq 1 1518); do printf '\\033[0m'; done; echo end`);
    const w = await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    expect(w.outputPreview).not.toContain(T.slice(20));
  });

  it('commands: tokens after an escape letter and credential assignments are masked', () => {
    expect(redactCommand(`echo -e "\\t${T}"`)).not.toContain(T.slice(10));
    expect(redactCommand('PGPASSWORD=hunter2hunter2 psql -h db')).not.toContain('hunter2hunter2');
    expect(redactCommand('export API_TOKEN=abcdef0123456789abcdef; true')).not.toContain('abcdef0123456789abcdef');
    expect(redactCommand('MAX_TOKENS=100 TOKEN_TTL=3600 node x.js')).toBe('MAX_TOKENS=100 TOKEN_TTL=3600 node x.js');
  });
});

describe('notifications across hosts', () => {
  it('a pending completion is delivered by exactly one of two racing hosts', async () => {
    const state = tempDir();
    const { line: s, host } = await startHost(state, `const s = await r.spawn('echo x', { notifyOnComplete: true, sessionKey: 'k2' }); console.log(JSON.stringify(s));`);
    cleanupGroup(s.pid);
    await new Promise((res) => setTimeout(res, 500));
    await crashHost(host);
    const b = await ProcessRegistry.open({ stateDir: state });
    const c = await ProcessRegistry.open({ stateDir: state });
    const [fromB, fromC] = await Promise.all([b.drainNotifications({ sessionKey: 'k2' }), c.drainNotifications({ sessionKey: 'k2' })]);
    expect(fromB.length + fromC.length).toBe(1);
    await Promise.all([b.close(), c.close()]);
  });
});

describe('watch patterns', () => {
  // Watch patterns run in a linear-time engine (issue 12, finding 8): patterns that would
  // backtrack catastrophically elsewhere are matched; what the engine cannot run in linear
  // time (backreferences, look-around) is refused.
  it('a pattern that backtracks catastrophically elsewhere runs without freezing the host; a backreference is refused', async () => {
    const s = await start(`printf '%s!\\n' ${'a'.repeat(40)}`, { watchPatterns: ['^(a+)+$', '(a|a)*c'] });
    expect((await ctx.registry.wait(s.id, { timeoutMs: 10_000 })).timedOut).toBe(false);
    await expect(ctx.registry.spawn('true', { watchPatterns: ['(a)\\1'] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await handleToolCall(ctx.registry, 'process_start', { command: 'true', watch_patterns: ['(?=x)y'] })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  });

  it('match the plain line (colours, progress frames) and the last line without a newline', async () => {
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 0 } });
    const s = await r.spawn(`printf '\\033[31mERROR\\033[0m: boom\\n10%%\\r50%%\\rERROR done\\nERROR at end'`, { watchPatterns: ['^ERROR'] });
    cleanupGroup(s.pid);
    await r.wait(s.id, { timeoutMs: 5000 });
    const lines = (await r.drainNotifications()).map((e) => (e as { line: string }).line);
    expect(lines).toEqual(['ERROR: boom', 'ERROR done', 'ERROR at end']);
    await r.close();
  });
});

describe('scoping and argument limits', () => {
  it('excludeIds and baselines accept prefixes; missing keys are INVALID_ARGUMENT', async () => {
    const a = await start('sleep 30', { taskId: 'T' });
    const b = await start('sleep 30', { taskId: 'T' });
    const out = await ctx.registry.killAll({ taskId: 'T', excludeIds: [a.id.slice(0, 13)], graceMs: 300 });
    expect(out.map((o) => o.id)).toEqual([b.id]);
    expect((await ctx.registry.poll(a.id)).status).toBe('running');
    await expect(ctx.registry.snapshotRunningIds(undefined as unknown as string)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ctx.registry.hasActiveForSession(undefined as unknown as string)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('a grace period beyond an hour is refused instead of wrapping around', async () => {
    await expect(killTree(identity(process.pid)!, { graceMs: 4294967396 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const s = await start('sleep 30');
    expect(await handleToolCall(ctx.registry, 'process', { action: 'kill', session_id: s.id, grace_ms: 2 ** 53 - 1 })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  });

  it('resize validates columns and rows', async () => {
    const s = await start('sleep 5', { pty: {} });
    await expect(ctx.registry.resize(s.id, { cols: '80' as unknown as number, rows: 24 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ctx.registry.resize(s.id, { cols: 81.7, rows: 24 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it("the host's tool context wins over the model's task_id", async () => {
    const res = await handleToolCall(ctx.registry, 'process_start', { command: 'sleep 5', task_id: 'victim' }, { taskId: 'agent' });
    if (!('pid' in res)) throw new Error(JSON.stringify(res));
    cleanupGroup(res.pid);
    expect((await ctx.registry.poll(res.session_id)).taskId).toBe('agent');
    const listed = (await handleToolCall(ctx.registry, 'process', { action: 'list', task_id: 'victim' }, { taskId: 'agent' })) as { sessions: { task_id: string }[] };
    expect(listed.sessions.length).toBeGreaterThan(0);
    expect(listed.sessions.every((x) => x.task_id === 'agent')).toBe(true);
  });
});

describe('registry options are checked when the registry opens', () => {
  it('a grace beyond an hour, an empty shell, non-array shellArgs, bad watch limits and pty sizes are INVALID_ARGUMENT', async () => {
    for (const bad of [{ graceMs: 3_600_001 }, { shell: '' }, { shellArgs: '-c' as unknown as string[] }, { watch: { cooldownMs: -1 } }, { sandbox: { lostAfterMs: Number.NaN } }]) {
      await expect(ProcessRegistry.open(bad)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    await expect(ctx.registry.spawn('true', { pty: { cols: -1, rows: 24 } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
