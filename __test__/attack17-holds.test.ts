// Adversarial checks against issues 16 item 2, 17 and 18 (attack of 2026-12-01) that the
// code withstood: edited durable records naming a stranger, forged and foreign cursors,
// scope-escaping session ids, hostile filters, loader variables by case and pair tricks,
// signal names that are not names, grace 0 on TERM-deaf trees, hostile terminal output.
// The findings that broke are in attack17-bugs.test.ts.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, cleanupPid, isAlive, perTestRegistry, tempDir, until } from './support.js';

const ctx = perTestRegistry();

/** Start time (field 22 of /proc/<pid>/stat) and the boot id: a process's identity as records hold it. */
function identityOf(pid: number) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const startTime = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[19] as string;
  return { pid, startTime, bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() };
}

describe('durable records edited to name a stranger', () => {
  for (const where of ['supervisor.json job', 'session.json jobIdentity'] as const) {
    it(`${where} naming a live stranger (with its true start time): signal and kill never reach it`, async () => {
      const stranger = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
      cleanupPid(stranger.pid);
      const strangerPid = stranger.pid as number;
      const stateDir = tempDir();
      let registry = await ProcessRegistry.open({ stateDir });
      const s = await registry.spawn('trap "" TERM USR1; sleep 60', { durable: true });
      cleanupGroup(s.supervisorPid);
      await registry.close();
      const dir = join(stateDir, 'sessions', s.id);
      const file = where.startsWith('supervisor') ? join(dir, 'supervisor.json') : join(dir, 'session.json');
      const record = JSON.parse(readFileSync(file, 'utf8'));
      if (where.startsWith('supervisor')) record.job = identityOf(strangerPid);
      else record.jobIdentity = identityOf(strangerPid);
      writeFileSync(file, JSON.stringify(record));
      registry = await ProcessRegistry.open({ stateDir });
      try {
        const p = await registry.poll(s.id);
        expect(p.pid).not.toBe(strangerPid);
        await registry.signal(s.id, 'SIGUSR1').catch(() => {});
        await registry.kill(s.id, { graceMs: 0 }).catch(() => {});
        await new Promise((r) => setTimeout(r, 300));
        expect(isAlive(strangerPid)).toBe(true);
      } finally {
        await registry.close();
        process.kill(strangerPid, 'SIGKILL');
      }
    });
  }
});

describe('tool arguments a model crafts', () => {
  it('cursors: another session\'s, forged, cut, oversized are INVALID_ARGUMENT', async () => {
    const a = await ctx.start('echo a; sleep 20');
    const b = await ctx.start('echo b; sleep 20');
    const rb = (await handleToolCall(ctx.registry, 'process', { action: 'poll', session_id: b.id })) as { cursor: string };
    const bad = [rb.cursor, rb.cursor.slice(0, -2), `${rb.cursor}A`, 'A'.repeat(200), 'A'.repeat(201), 'not a cursor!'];
    for (const cursor of bad) {
      const r = await handleToolCall(ctx.registry, 'process', { action: 'log', session_id: a.id, cursor });
      expect(r, cursor).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    }
  });

  it('a scoped context reaches no other task\'s session by prefix, full id, case or padding', async () => {
    const b = await ctx.start('sleep 20', { taskId: 'B', sessionKey: 'kB' });
    const hex = b.id.slice(5);
    for (const q of [hex.slice(0, 4), `proc_${hex.slice(0, 4)}`, b.id, b.id.toUpperCase(), ` ${b.id}`, `${b.id} `, hex]) {
      for (const action of ['poll', 'kill', 'signal', 'screen'] as const) {
        const r = await handleToolCall(ctx.registry, 'process', { action, session_id: q, signal: 'SIGKILL' }, { taskId: 'A', sessionKey: 'kA' });
        expect((r as { error?: { code: string } }).error?.code, `${action} ${q}`).toMatch(/UNKNOWN_SESSION|INVALID_ARGUMENT/);
      }
    }
    expect(isAlive(b.pid as number)).toBe(true);
  });

  it('filters: catastrophic, huge, look-around and back-references are linear or refused', async () => {
    const s = await ctx.start(`python3 -c "print('a' * 60000 + 'b'); print('SECRETB=x')"`);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    // Linear time is what lets this finish at all (a backtracking engine takes ages on it).
    const r = (await handleToolCall(ctx.registry, 'process', { action: 'log', session_id: s.id, filter: '(a+)+$' })) as { matched_lines?: number };
    expect(r.matched_lines).toBe(0);
    for (const filter of ['(?=x)', '\\1', '(((a{100}){100}){100})', 'a'.repeat(513), '(']) {
      expect(await handleToolCall(ctx.registry, 'process', { action: 'log', session_id: s.id, filter }), filter).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    }
  });

  it('loader variables from the model are refused by case, pairs and JSON-string arguments', async () => {
    const tries: unknown[] = [
      { command: 'true', env: { ld_preload: '/x.so' } },
      { command: 'true', env: { Ld_Audit: '/x.so' } },
      { command: 'true', env: [{ name: 'NODE_OPTIONS', value: '--require /x.js' }] },
      JSON.stringify({ command: 'true', env: { BASH_ENV: '/x.sh' } }),
      JSON.stringify({ command: 'true', env: [{ name: 'dyld_insert_libraries', value: '/x' }] }),
      { command: 'true', env: JSON.parse('{"__proto__": {"LD_PRELOAD": "/x.so"}}') },
    ];
    for (const input of tries) {
      const r = (await handleToolCall(ctx.registry, 'process_start', input)) as { error?: { code: string }; pid?: number };
      if (r.pid) cleanupGroup(r.pid);
      expect(r.error?.code, JSON.stringify(input)).toMatch(/SPAWN_REFUSED|INVALID_ARGUMENT/);
    }
  });

  it('signal names that are numbers, lists or shell text are refused and nothing is sent', async () => {
    const s = await ctx.start('trap "echo got" INT USR1 HUP TERM; while :; do sleep 0.1; done');
    for (const signal of ['-1', '0', '9', 'KILL;rm', 'SIGKILL;rm -rf /', 'SIGRTMIN', 'SIGSEGV', '__proto__', 'constructor', '']) {
      const r = await handleToolCall(ctx.registry, 'process', { action: 'signal', session_id: s.id, signal });
      expect(r, signal).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    }
    expect(await handleToolCall(ctx.registry, 'process', { action: 'signal', session_id: s.id, signal: 9 })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    expect((await ctx.registry.poll(s.id)).status).toBe('running');
    expect((await ctx.registry.readLog(s.id, {})).text).not.toContain('got');
  });
});

describe('grace 0 and deadlines against hostile jobs', () => {
  it('grace 0 ends a TERM-deaf tree with a setsid escapee at once', async () => {
    const s = await ctx.start(`trap "" TERM; (trap "" TERM; echo sub; sleep 50) & setsid sh -c 'trap "" TERM; echo esc; sleep 51' & sleep 52`);
    // Both lines come after every trap (the parent's runs before it forks them): a SIGTERM
    // sooner would end the tree at once, with nothing left to escalate (a race under load).
    await until(async () => {
      const lines = (await ctx.registry.readLog(s.id)).lines;
      return lines.includes('sub') && lines.includes('esc');
    }, 10_000, 'the traps');
    const k = await ctx.registry.kill(s.id, { graceMs: 0 });
    expect(k.escalated).toBe(true);
    expect(k.survivors).toEqual([]);
  });

  it('a 1 ms deadline kills a TERM-deaf job and says so', async () => {
    const s = await ctx.start('trap "" TERM; sleep 30', { timeoutMs: 1 });
    const w = await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(w.status).toBe('exited');
    expect(await ctx.registry.poll(s.id)).toMatchObject({ status: 'exited', deadlineExceeded: true });
  });
});

describe('hostile terminal output', () => {
  it('a query flood, an unterminated 20 MB OSC and a 0x0 resize leave the emulator answering', async () => {
    const flood = await ctx.start(`yes $'\\e[6n\\e[c'`, { pty: { cols: 80, rows: 24 } });
    const osc = await ctx.start(`printf '\\e]52;c;'; head -c 20000000 /dev/zero | tr '\\0' B; sleep 20`, { pty: { cols: 80, rows: 24 } });
    await expect(ctx.registry.resize(osc.id, { cols: 0, rows: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await new Promise((r) => setTimeout(r, 1000));
    expect((await ctx.registry.screen(flood.id)).rows).toBe(24);
    expect((await ctx.registry.screen(osc.id)).rows).toBe(24);
    const p = await ctx.start(`printf '\\033[6n'; if IFS= read -rs -t 60 -d R r; then echo ANSWERED; fi`, { pty: { cols: 80, rows: 24 } });
    await until(async () => (await ctx.registry.poll(p.id)).status === 'exited', 90_000, 'the probe');
    expect((await ctx.registry.poll(p.id)).outputPreview).toContain('ANSWERED');
  }, 150_000);
});
