// DESIGN section 7 (notifications) and the scoping operations of section 5.
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, crashHost, startHost, tempDir, until, perTestRegistry } from './support.js';

const ctx = perTestRegistry();
const start = ctx.start;

const settle = (ms = 150) => new Promise((r) => setTimeout(r, ms));

describe('completion notifications', () => {
  it('one event per session, with key, command, exit and a redacted tail; a second drain is empty', async () => {
    const s = await start('echo token=ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 done; exit 4', { notifyOnComplete: true, sessionKey: 'chat-1' });
    await until(async () => (await ctx.registry.poll(s.id)).status === 'exited', 5000, 'exit');
    const events = await ctx.registry.drainNotifications({ sessionKey: 'chat-1' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'completion', sessionId: s.id, sessionKey: 'chat-1', exitCode: 4, reason: 'exited' });
    expect((events[0] as { output: string }).output).not.toContain('a1B2c3D4e5F6g7H8i9J0');
    expect(await ctx.registry.drainNotifications({ sessionKey: 'chat-1' })).toEqual([]);
  });

  it('sleep 30 with notify, killed: exactly one notification even when the kill races the reader', async () => {
    const s = await start('sleep 30', { notifyOnComplete: true, sessionKey: 'k' });
    const seen: unknown[] = [];
    ctx.registry.on('completion', (e) => seen.push(e));
    await Promise.all([ctx.registry.kill(s.id, { graceMs: 300 }), ctx.registry.kill(s.id, { graceMs: 300 })]);
    await settle();
    expect(seen).toHaveLength(1);
    // kill consumed it: nothing left to drain.
    expect(await ctx.registry.drainNotifications()).toEqual([]);
  });

  it('events of other owners stay queued; a throwing predicate leaves the event queued (fail closed)', async () => {
    const a = await start('exit 0', { notifyOnComplete: true, sessionKey: 'a' });
    const b = await start('exit 0', { notifyOnComplete: true, sessionKey: 'b' });
    await until(async () => (await ctx.registry.list()).every((s) => s.status === 'exited'), 5000, 'exits');
    expect(await ctx.registry.drainNotifications({ ownsEvent: () => { throw new Error('boom'); } })).toEqual([]);
    expect((await ctx.registry.drainNotifications({ sessionKey: 'a' })).map((e) => e.sessionId)).toEqual([a.id]);
    expect((await ctx.registry.drainNotifications({ ownsEvent: (e) => e.sessionId === b.id })).map((e) => e.sessionId)).toEqual([b.id]);
  });

  it('wait and an end-reaching readLog consume the completion; poll does not unless acknowledged', async () => {
    const a = await start('exit 0', { notifyOnComplete: true });
    await ctx.registry.wait(a.id, { timeoutMs: 5000 });
    const b = await start('echo x', { notifyOnComplete: true });
    await until(async () => (await ctx.registry.poll(b.id)).status === 'exited', 5000, 'exit');
    await ctx.registry.readLog(b.id);
    const c = await start('exit 0', { notifyOnComplete: true });
    await until(async () => (await ctx.registry.poll(c.id)).status === 'exited', 5000, 'exit');
    await ctx.registry.poll(c.id);
    expect((await ctx.registry.drainNotifications()).map((e) => e.sessionId)).toEqual([c.id]);
    const d = await start('exit 0', { notifyOnComplete: true });
    await until(async () => (await ctx.registry.poll(d.id, { acknowledge: true })).status === 'exited', 5000, 'exit');
    expect(await ctx.registry.drainNotifications()).toEqual([]);
  });

  it('host A killed at 0.5 s, host B recovers and is killed at once, host C: running at 1 s, exited 0 with both lines at 5 s, one notification', async () => {
    const state = tempDir();
    const t0 = Date.now();
    const a = await startHost(state, `const s = await r.spawn("sh -c 'echo started; sleep 3; echo finished'", { notifyOnComplete: true }); console.log(JSON.stringify(s));`);
    const s = a.line;
    cleanupGroup(s.pid);
    await settle(Math.max(0, 500 - (Date.now() - t0)));
    await crashHost(a.host);
    const b = await startHost(state, `console.log(JSON.stringify(await r.poll(${JSON.stringify(s.id)})));`);
    await crashHost(b.host);
    expect(b.line).toMatchObject({ status: 'running', detached: true });
    const c = await ProcessRegistry.open({ stateDir: state });
    await settle(Math.max(0, 1000 - (Date.now() - t0)));
    expect((await c.poll(s.id)).status).toBe('running');
    await settle(Math.max(0, 5000 - (Date.now() - t0)));
    const p = await c.poll(s.id);
    expect(p).toMatchObject({ status: 'exited', exitCode: 0, reason: 'exited' });
    const events = await c.drainNotifications();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'completion', sessionId: s.id, exitCode: 0 });
    expect((await c.readLog(s.id, { offset: 0 })).lines).toEqual(['started', 'finished']);
    await c.close();
    const d = await ProcessRegistry.open({ stateDir: state });
    expect(await d.drainNotifications()).toEqual([]);
    await d.close();
  }, 20_000);

  it('queued events survive a host restart and are delivered exactly once', async () => {
    const state = tempDir();
    const { line: s, host } = await startHost(state, `const s = await r.spawn("echo started; sleep 1; echo finished", { notifyOnComplete: true }); console.log(JSON.stringify(s));`);
    cleanupGroup(s.pid);
    await settle(300);
    await crashHost(host);
    const b = await ProcessRegistry.open({ stateDir: state });
    expect((await b.poll(s.id)).status).toBe('running');
    await b.close();
    const c = await ProcessRegistry.open({ stateDir: state });
    await until(async () => (await c.poll(s.id)).status === 'exited', 5000, 'exit');
    const events = await c.drainNotifications();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ sessionId: s.id, exitCode: 0, reason: 'exited' });
    expect((events[0] as { output: string }).output).toBe('started\nfinished\n');
    await c.close();
    const d = await ProcessRegistry.open({ stateDir: state });
    expect(await d.drainNotifications()).toEqual([]);
    await d.close();
  });
});

describe('watch patterns', () => {
  it('fire on whole lines, also when a line is split across writes, with a per-session cooldown', async () => {
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 10_000 } });
    const s = await r.spawn(`printf 'server lis'; sleep 0.2; printf 'tening on 3000\\nERROR one\\nERROR two\\n'; sleep 0.2`, { watchPatterns: ['listening on \\d+', 'ERROR'] });
    cleanupGroup(s.pid);
    await r.wait(s.id, { timeoutMs: 5000 });
    const events = await r.drainNotifications();
    expect(events.map((e) => (e as { line: string }).line)).toEqual(['server listening on 3000']);
    await r.close();
  });

  it('a lifetime cap and a global rate limit stop a chatty process from flooding', async () => {
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 0, maxPerSession: 5, maxPerMinute: 7 } });
    const a = await r.spawn('for i in $(seq 50); do echo "hit $i"; done', { watchPatterns: ['hit'] });
    const b = await r.spawn('sleep 0.2; for i in $(seq 50); do echo "hit $i"; done', { watchPatterns: ['hit'] });
    cleanupGroup(a.pid);
    cleanupGroup(b.pid);
    await r.wait(a.id, { timeoutMs: 5000 });
    await r.wait(b.id, { timeoutMs: 5000 });
    const events = await r.drainNotifications();
    expect(events.filter((e) => e.sessionId === a.id)).toHaveLength(5);
    expect(events).toHaveLength(7);
    await r.close();
  });

  it('an invalid pattern is INVALID_ARGUMENT', async () => {
    await expect(ctx.registry.spawn('true', { watchPatterns: ['('] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('scoping', () => {
  it('killAll spares excluded ids and other tasks; killStartedSince kills only what started after the baseline', async () => {
    const old = await start('sleep 30', { taskId: 't' });
    const baseline = await ctx.registry.snapshotRunningIds('t');
    expect(baseline).toEqual([old.id]);
    const fresh = await start('sleep 30', { taskId: 't' });
    const other = await start('sleep 30', { taskId: 'u' });
    const killed = await ctx.registry.killStartedSince('t', baseline, { graceMs: 300 });
    expect(killed.map((k) => k.id)).toEqual([fresh.id]);
    expect((await ctx.registry.poll(old.id)).status).toBe('running');
    expect(await ctx.registry.hasActiveProcesses('t')).toBe(true);
    const all = await ctx.registry.killAll({ taskId: 't', excludeIds: [], graceMs: 300 });
    expect(all.map((k) => k.id)).toEqual([old.id]);
    expect(await ctx.registry.hasActiveProcesses('t')).toBe(false);
    expect((await ctx.registry.poll(other.id)).status).toBe('running');
  });

  it('hasActiveForSession ignores sessions older than maxActiveAgeMs', async () => {
    await start('sleep 30', { sessionKey: 'conv' });
    await settle(200);
    expect(await ctx.registry.hasActiveForSession('conv')).toBe(true);
    expect(await ctx.registry.hasActiveForSession('conv', { maxActiveAgeMs: 100 })).toBe(false);
    expect(await ctx.registry.hasActiveForSession('nope')).toBe(false);
  });
});

describe('env dumps are redacted in output', () => {
  it('printenv output masks credential-like values and keeps HOME', async () => {
    const s = await start('printenv MY_SERVICE_TOKEN HOME >/dev/null; echo MY_SERVICE_TOKEN=abc123randomopaquetokenvalue999; echo HOME=/home/u', { env: {} });
    await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    // Not an env-dump command: only vendor patterns apply, so this opaque token stays.
    expect((await ctx.registry.readLog(s.id)).text).toContain('abc123randomopaquetokenvalue999');
    const d = await start('printenv | grep -E "^(MY_SERVICE_TOKEN|HOME)="', { env: { MY_SERVICE_TOKEN: 'abc123randomopaquetokenvalue999', HOME: '/home/u' } });
    await ctx.registry.wait(d.id, { timeoutMs: 5000 });
    const text = (await ctx.registry.readLog(d.id)).text;
    expect(text).toContain('HOME=/home/u');
    expect(text).toContain('MY_SERVICE_TOKEN=');
    expect(text).not.toContain('abc123randomopaquetokenvalue999');
  });
});
