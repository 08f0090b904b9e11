// DESIGN section 7 (notifications) and the scoping operations of section 5.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

  it('sleep 30 with notify, killed twice at once: the kills deliver the end, so no notification is queued or told to listeners', async () => {
    const s = await start('sleep 30', { notifyOnComplete: true, sessionKey: 'k' });
    const seen: unknown[] = [];
    ctx.registry.on('completion', (e) => seen.push(e));
    const kills = await Promise.all([ctx.registry.kill(s.id, { graceMs: 300 }), ctx.registry.kill(s.id, { graceMs: 300 })]);
    expect(kills.map((k) => k.outcome)).toContain('killed');
    await settle();
    // Issue 28, kind 1: the kill consumed it (its caller has the end): listeners are told of
    // the completions a drain would return, and there is none.
    expect(seen).toHaveLength(0);
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

  it('lines still queued for the event loop when a poll takes the end from the job are matched', async () => {
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 0 } });
    try {
      const s = await r.spawn('for i in 1 2 3; do echo "hit $i"; done', { watchPatterns: ['hit'] });
      cleanupGroup(s.pid);
      // Block the event loop while the job prints and ends: its output events wait in the
      // queue, and the poll below learns of the end from the job before they are delivered.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
      expect(await r.poll(s.id)).toMatchObject({ status: 'exited', exitCode: 0 });
      const lines = (await r.drainNotifications()).map((e) => (e as { line?: string }).line);
      expect(lines).toEqual(['hit 1', 'hit 2', 'hit 3']);
    } finally {
      await r.close();
    }
  });

  it('an invalid pattern is INVALID_ARGUMENT', async () => {
    await expect(ctx.registry.spawn('true', { watchPatterns: ['('] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('watch patterns run in a linear-time engine (issue 12, finding 8)', () => {
  it('(a|a)*c and (\\w|\\d)*!x answer 28-character and 64 KiB hostile lines: wait resolves with the right events', async () => {
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 0 } });
    // The 28-character lines froze a backtracking engine for 40 s and 7 s; 64 KiB would never end.
    const s = await r.spawn(
      `printf '%s\\n' ${'a'.repeat(28)} ${'1'.repeat(28)}; head -c 65536 /dev/zero | tr '\\0' a; echo; head -c 65536 /dev/zero | tr '\\0' 1; echo; echo aaac; echo '12ab!x'`,
      { watchPatterns: ['(a|a)*c', '(\\w|\\d)*!x'] },
    );
    cleanupGroup(s.pid);
    const done = await r.wait(s.id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: 'exited', exitCode: 0 });
    const events = (await r.drainNotifications()).map((e) => [(e as { pattern: string }).pattern, (e as { line: string }).line]);
    expect(events).toEqual([
      ['(a|a)*c', 'aaac'],
      ['(\\w|\\d)*!x', '12ab!x'],
    ]);
    await r.close();
  });

  it('only the first 64 KiB of a line is matched, and the line in an event is cut to 4096 characters', async () => {
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 0 } });
    const s = await r.spawn(`head -c 70000 /dev/zero | tr '\\0' x; echo END; head -c 5000 /dev/zero | tr '\\0' y; echo END; echo END here`, { watchPatterns: ['END'] });
    cleanupGroup(s.pid);
    await r.wait(s.id, { timeoutMs: 10_000 });
    const lines = (await r.drainNotifications()).map((e) => (e as { line: string }).line);
    expect(lines).toEqual(['y'.repeat(4096), 'END here']);
    await r.close();
  });

  it('more than 32 patterns, a pattern over 512 characters, an empty one and a set that compiles too big are INVALID_ARGUMENT; 32 of 512 are accepted', async () => {
    const spawn = (watchPatterns: unknown) => ctx.registry.spawn('true', { watchPatterns: watchPatterns as string[] });
    await expect(spawn(Array.from({ length: 33 }, (_, i) => `p${i}`))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('at most 32') });
    await expect(spawn(Array.from({ length: 10_000 }, (_, i) => `p${i}`))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(spawn(['a'.repeat(513)])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('longer than 512') });
    await expect(spawn([''])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('empty') });
    await expect(spawn(['\\w{500}{500}'])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('compiles to more than') });
    // About 20 000 automaton states (32 such patterns, 27 s for one 64 KiB line once the regex crate's lazy DFA gives up).
    const heavy = Array.from({ length: 20 }, (_, i) => `x{1,${480 + i}}y`);
    await expect(spawn(heavy)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('automaton states') });
    await expect(spawn([42])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(spawn('ERROR')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const ok = await start('true', { watchPatterns: [...Array.from({ length: 31 }, (_, i) => `p${i}`), 'b'.repeat(512)] });
    expect(ok.status).toBeDefined();
  });

  it('look-around and backreferences are INVALID_ARGUMENT with the engine\'s reason', async () => {
    const refused = (p: string) => ctx.registry.spawn('true', { watchPatterns: ['ok', p] });
    await expect(refused('(?=a)b')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/watch pattern 2 .*look-around/) });
    await expect(refused('(?<!x)y')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('look-around') });
    await expect(refused('(a)\\1')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('backreferences') });
  });

  it('nested quantifiers are accepted and a hostile line does not freeze the host: ^(a+)+$ on 60 000 a then b', async () => {
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 0 } });
    const s = await r.spawn(`head -c 60000 /dev/zero | tr '\\0' a; echo b; echo aaaa`, { watchPatterns: ['^(a+)+$'] });
    cleanupGroup(s.pid);
    expect(await r.wait(s.id, { timeoutMs: 20_000 })).toMatchObject({ status: 'exited' });
    expect((await r.drainNotifications()).map((e) => (e as { line: string }).line)).toEqual(['aaaa']);
    await r.close();
  });

  it('the heaviest accepted set on a flood of 64 KiB lines: wait resolves, the event loop keeps turning, skipped lines are a diagnostic', async () => {
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 0 } });
    const heavy = Array.from({ length: 16 }, (_, i) => `x{1,${480 + i}}y`);
    let last = Date.now();
    let longestGap = 0;
    const timer = setInterval(() => {
      longestGap = Math.max(longestGap, Date.now() - last);
      last = Date.now();
    }, 50);
    const s = await r.spawn(`for i in $(seq 200); do head -c 65536 /dev/zero | tr '\\0' x; echo; done; echo xy`, { watchPatterns: heavy });
    cleanupGroup(s.pid);
    expect(await r.wait(s.id, { timeoutMs: 60_000 })).toMatchObject({ status: 'exited', exitCode: 0 });
    clearInterval(timer);
    // 200 lines at 20 to 100 ms each would hold the loop for seconds; the budget keeps it turning.
    expect(longestGap).toBeLessThan(3000);
    const events = (await r.drainNotifications()).map((e) => (e as { line: string }).line);
    expect(events.every((l) => l === 'xy')).toBe(true);
    expect(r.diagnostics.filter((d) => d.startsWith(`${s.id}: `) && d.includes('not matched against watch patterns'))).toHaveLength(1);
    await r.close();
  });

  it('patterns recovered from a record (10 000 of them, or a look-around) leave the session unwatched with one diagnostic, and the job is still followed', async () => {
    const state = tempDir();
    const body = `const a = await r.spawn("sleep 1; echo ok a", { watchPatterns: ["ok"] });
const b = await r.spawn("sleep 1; echo ok b", { watchPatterns: ["ok"] });
console.log(JSON.stringify([a, b]));`;
    const { line: started, host } = await startHost(state, body);
    const [a, b] = started as [{ id: string; pid: number }, { id: string; pid: number }];
    cleanupGroup(a.pid);
    cleanupGroup(b.pid);
    await settle(300);
    await crashHost(host);
    const hostile: Record<string, string[]> = { [a.id]: Array.from({ length: 10_000 }, () => '(a|a)*c'), [b.id]: ['(?=o)ok'] };
    rewriteRecords(state, (rec) => {
      if (typeof rec.id === 'string' && hostile[rec.id] && Array.isArray(rec.watchPatterns)) rec.watchPatterns = hostile[rec.id];
    });
    const r = await ProcessRegistry.open({ stateDir: state, watch: { cooldownMs: 0 } });
    await r.wait(a.id, { timeoutMs: 10_000 });
    await r.wait(b.id, { timeoutMs: 10_000 });
    await r.poll(a.id);
    const refused = (id: string) => r.diagnostics.filter((d) => d.startsWith(`${id}: watch patterns ignored`));
    expect(refused(a.id)).toHaveLength(1);
    expect(refused(a.id)[0]).toContain('at most 32');
    expect(refused(b.id)).toHaveLength(1);
    expect(refused(b.id)[0]).toContain('look-around');
    expect((await r.poll(a.id)).status).toBe('exited');
    expect((await r.drainNotifications()).filter((e) => e.type === 'watch')).toEqual([]);
    await r.close();
  });
});

/** Applies `edit` to every session record in the state directory's JSON files (checkpoint and session files). */
function rewriteRecords(dir: string, edit: (record: Record<string, unknown>) => void): void {
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') {
      edit(value as Record<string, unknown>);
      Object.values(value).forEach(walk);
    }
  };
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.json')) continue;
    const path = join(entry.parentPath, entry.name);
    const doc = JSON.parse(readFileSync(path, 'utf8'));
    walk(doc);
    writeFileSync(path, JSON.stringify(doc));
  }
}

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
    // Not an env-dump command, but the line has an env dump's shape: masked all the same
    // (issue 12, finding 7: by the output's shape, not the command's name).
    const echoed = (await ctx.registry.readLog(s.id)).text;
    expect(echoed).not.toContain('abc123randomopaquetokenvalue999');
    expect(echoed).toContain('HOME=/home/u');
    const d = await start('printenv | grep -E "^(MY_SERVICE_TOKEN|HOME)="', { env: { MY_SERVICE_TOKEN: 'abc123randomopaquetokenvalue999', HOME: '/home/u' } });
    await ctx.registry.wait(d.id, { timeoutMs: 5000 });
    const text = (await ctx.registry.readLog(d.id)).text;
    expect(text).toContain('HOME=/home/u');
    expect(text).toContain('MY_SERVICE_TOKEN=');
    expect(text).not.toContain('abc123randomopaquetokenvalue999');
  });
});
