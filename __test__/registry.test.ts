// DESIGN sections 4 (spawning and output) and 5 (sessions), with real processes.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, cleanupPid, isAlive, perTestRegistry, tempDir, until } from './support.js';

const ctx = perTestRegistry();
const start = ctx.start;

describe('spawning and output', () => {
  it('wait returns when the job exits though a grandchild holds the pipe (30 s), and the grandchild lives on', async () => {
    const s = await start("sh -c 'echo started; sleep 30 & echo bg=$!; exit 0'");
    // timedOut false: the wait ended with the job, not after its 10 s or the grandchild's 30 s.
    const w = await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(w).toMatchObject({ status: 'exited', exitCode: 0, signal: null, reason: 'exited', timedOut: false, processRunning: false });
    const [first, second] = w.outputPreview.split('\n');
    expect(first).toBe('started');
    const bg = Number(/^bg=(\d+)$/.exec(second ?? '')?.[1]);
    cleanupPid(bg);
    expect(isAlive(bg)).toBe(true);
  });

  it('a UTF-8 character split across writes arrives whole', async () => {
    const s = await start(`sh -c "printf 'caf\\303'; sleep 0.2; printf '\\251 ok\\n'"`);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    const log = await ctx.registry.readLog(s.id);
    expect(log.text).toBe('café ok');
    expect(log.totalLines).toBe(1);
  });

  it('a job killed by a signal reports the signal, never exit code 0', async () => {
    const s = await start("sh -c 'echo before; kill -KILL $$'");
    const w = await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(w.signal).toBe('SIGKILL');
    expect(w.exitCode).toBeNull();
    expect(w.outputPreview).toBe('before\n');
  });

  it('the command string reaches the shell byte for byte', async () => {
    const cmd = `printf '%s|' "a b" 'c"d' \`echo e\` $((1+1)); cat <<'EOF'\nline $HOME\nEOF`;
    const s = await start(cmd);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect((await ctx.registry.readLog(s.id)).lines).toEqual(['a b|c"d|e|2|line $HOME']);
  });

  it('spawn in a missing cwd fails with ENOENT and records nothing', async () => {
    await expect(ctx.registry.spawn('true', { cwd: '/no/such/dir' })).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await ctx.registry.list()).toEqual([]);
  });

  it('an empty command is INVALID_ARGUMENT', async () => {
    await expect(ctx.registry.spawn('  ')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('sessions', () => {
  it('ids are proc_ + 12 hex and any unique prefix of 4+ hex resolves', async () => {
    const s = await start('sleep 5');
    expect(s.id).toMatch(/^proc_[0-9a-f]{12}$/);
    expect((await ctx.registry.poll(s.id.slice(5, 9))).id).toBe(s.id);
    expect((await ctx.registry.poll(s.id.slice(0, 10))).id).toBe(s.id);
    await expect(ctx.registry.poll('proc_ffffffffffff')).rejects.toMatchObject({ code: 'UNKNOWN_SESSION' });
    await expect(ctx.registry.poll('abc')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('wait times out with partial output and process_running', async () => {
    const s = await start('echo partial; sleep 30');
    const w = await ctx.registry.wait(s.id, { timeoutMs: 300 });
    expect(w).toMatchObject({ timedOut: true, processRunning: true, status: 'running' });
    expect(w.outputPreview).toBe('partial\n');
    await expect(ctx.registry.wait(s.id, { timeoutMs: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ctx.registry.wait(s.id, { timeoutMs: -5 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('wait resolves promptly on exit (event-driven, not on a polling tick)', async () => {
    const s = await start('sleep 0.3');
    const w = await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(w.status).toBe('exited');
    expect(w.exitedAt! - w.startedAt).toBeLessThan(1500);
  });

  it('readLog pages by line: default last 200, offset 0 is the first line', async () => {
    const s = await start('seq 1 500');
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    const tail = await ctx.registry.readLog(s.id);
    expect(tail.totalLines).toBe(500);
    expect(tail.lines[0]).toBe('301');
    expect(tail.lines.at(-1)).toBe('500');
    expect(tail.showing).toBe('lines 301-500 of 500');
    const head = await ctx.registry.readLog(s.id, { offset: 0, limit: 3 });
    expect(head.lines).toEqual(['1', '2', '3']);
    await expect(ctx.registry.readLog(s.id, { limit: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('kill with a 300 ms grace ends a SIGTERM-ignoring job with SIGKILL', async () => {
    const s = await start(`sh -c 'trap "" TERM; echo ready; while :; do sleep 1; done'`);
    // The trap is set before `ready` is printed.
    await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('ready'), 10_000, 'ready');
    const k = await ctx.registry.kill(s.id, { graceMs: 300 });
    expect(k).toMatchObject({ outcome: 'killed', escalated: true, survivors: [], signal: 'SIGKILL' });
    const p = await ctx.registry.poll(s.id);
    expect(p).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGKILL' });
    expect(isAlive(s.pid!)).toBe(false);
  });

  it('kill ends the leader, its children and a setsid-escaped grandchild', async () => {
    const s = await start(`sh -c 'setsid sleep 45 & echo esc=$!; sleep 30'`);
    let esc = 0;
    for (let i = 0; i < 200 && !esc; i++) {
      await new Promise((r) => setTimeout(r, 10));
      esc = Number(/esc=(\d+)/.exec((await ctx.registry.poll(s.id)).outputPreview)?.[1] ?? 0);
    }
    cleanupPid(esc);
    expect(isAlive(esc)).toBe(true);
    const k = await ctx.registry.kill(s.id, { graceMs: 1000 });
    expect(k.outcome).toBe('killed');
    expect(k.survivors).toEqual([]);
    expect(isAlive(esc)).toBe(false);
    expect(isAlive(s.pid!)).toBe(false);
    expect((await ctx.registry.poll(s.id)).reason).toBe('killed');
  });

  it('kill of a finished session says already_exited and keeps its real end', async () => {
    const s = await start('exit 3');
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    const k = await ctx.registry.kill(s.id);
    expect(k).toMatchObject({ outcome: 'already_exited', exitCode: 3, signalled: [] });
    expect((await ctx.registry.poll(s.id)).reason).toBe('exited');
  });

  it('list filters by task and flags session-scoped entries', async () => {
    const a = await start('sleep 5', { taskId: 't1', sessionKey: 'k' });
    const b = await start('sleep 5', { taskId: 't2', sessionKey: 'k' });
    await start('sleep 5', { taskId: 't3' });
    const l = await ctx.registry.list({ taskId: 't1', sessionKey: 'k' });
    expect(l.map((s) => [s.id, s.sessionScoped ?? false])).toEqual([
      [a.id, false],
      [b.id, true],
    ]);
    expect((await ctx.registry.list()).length).toBe(3);
  });

  it('durable spawn without a state directory is refused', async () => {
    await expect(ctx.registry.spawn('true', { durable: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('durable sessions in one host', () => {
  it('records exact exit code and output through the log file', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    const s = await r.spawn('echo out; echo err >&2; exit 7');
    cleanupGroup(s.pid);
    const w = await r.wait(s.id, { timeoutMs: 10_000 });
    expect(w).toMatchObject({ exitCode: 7, reason: 'exited', durable: true });
    expect((await r.readLog(s.id)).lines).toEqual(['out', 'err']);
    await r.close();
  });
});

describe('the event loop', () => {
  const index = join(__dirname, '..', 'dist', 'index.js');
  function host(body: string): Promise<{ code: number | null; stdout: string }> {
    const script = `const { ProcessRegistry } = require(${JSON.stringify(index)});\n(async () => {\n${body}\n})();`;
    return new Promise((resolve) => {
      execFile(process.execPath, ['-e', script], { timeout: 20_000 }, (err, stdout) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout });
      });
    });
  }

  it('a running job does not keep the host alive (weak callbacks)', async () => {
    // outliveHost: a job of an in-memory registry otherwise ends with its host (hostdeath.test.ts).
    const { code, stdout } = await host(`const r = await ProcessRegistry.open(); const s = await r.spawn('sleep 20', { outliveHost: true }); console.log(s.pid);`);
    expect(code).toBe(0);
    const pid = Number(stdout.trim());
    cleanupGroup(pid);
    // The host is gone while its job still runs.
    expect(isAlive(pid)).toBe(true);
  });

  it('awaiting wait keeps the host alive until the job ends', async () => {
    const { code, stdout } = await host(
      `const r = await ProcessRegistry.open(); const s = await r.spawn('sleep 0.5; echo finished; exit 4'); const w = await r.wait(s.id); console.log(JSON.stringify(w));`,
    );
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ exitCode: 4, outputPreview: 'finished\n' });
  });
});

describe('registry-wide output budget', () => {
  it('running sessions share the budget and finished ones give up their tails, reporting what was dropped', async () => {
    const r = await ProcessRegistry.open({ maxOutputChars: 10_000, maxTotalOutputChars: 12_000 });
    const a = await r.spawn('head -c 9000 /dev/zero | tr "\\0" a; echo');
    cleanupGroup(a.pid);
    await r.wait(a.id, { timeoutMs: 5000 });
    const b = await r.spawn('head -c 9000 /dev/zero | tr "\\0" b; echo; sleep 30');
    cleanupGroup(b.pid);
    await new Promise((res) => setTimeout(res, 300));
    const c = await r.spawn('sleep 30');
    cleanupGroup(c.pid);
    // Two running sessions share 12 000 characters: 6 000 each; the finished one gave way.
    const logB = await r.readLog(b.id);
    expect(logB.text.length).toBeLessThanOrEqual(6000);
    expect(logB.droppedChars).toBeGreaterThan(0);
    const logA = await r.readLog(a.id);
    expect(logA.droppedChars).toBeGreaterThan(0);
    await r.close();
  });
});

describe('capped in-memory output', () => {
  it('a page never starts with the fragment of a line the cap cut', async () => {
    const r = await ProcessRegistry.open({ maxOutputChars: 10_000 });
    try {
      const s = await r.spawn("seq -f 'line %06g' 1 5000");
      cleanupGroup(s.pid);
      await r.wait(s.id, { timeoutMs: 10_000 });
      const head = await r.readLog(s.id, { offset: 0, limit: 2 });
      expect(head.droppedChars).toBeGreaterThan(0);
      expect(head.lines.every((l) => /^line \d{6}$/.test(l))).toBe(true);
      expect(head.showing).toMatch(/earlier output dropped by the in-memory cap/);
      expect((await r.readLog(s.id, { limit: 1 })).lines).toEqual(['line 005000']);
    } finally {
      await r.close();
    }
  });
});

describe('large durable logs', () => {
  it('are paged by streaming: 40 MB of output, two lines, bounded memory, exact counts', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    const s = await r.spawn(`yes 'line of text that repeats' | head -n 1500000; echo 'secret ghp_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}'; echo last`);
    cleanupGroup(s.pid);
    await r.wait(s.id, { timeoutMs: 30_000 });
    const before = process.memoryUsage().rss;
    const tail = await r.readLog(s.id, { limit: 2 });
    expect(tail).toMatchObject({ totalLines: 1_500_002, offset: 1_500_000 });
    expect(tail.lines[1]).toBe('last');
    expect(tail.lines[0]).not.toContain('I9j0K1l2M3n4');
    const head = await r.readLog(s.id, { offset: 0, limit: 1 });
    expect(head.lines).toEqual(['line of text that repeats']);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    await r.close();
  }, 60_000);
});

describe('poll reconciles first', () => {
  it('a caller that polls in a loop that never yields to the event loop still sees the end', async () => {
    for (const stateDir of [undefined, tempDir()]) {
      const r = await ProcessRegistry.open({ ...(stateDir && { stateDir }) });
      try {
        const s = await r.spawn('exit 2');
        cleanupGroup(s.pid);
        const t0 = Date.now();
        let p = await r.poll(s.id);
        // Only microtasks between polls: the reader's exit event cannot be delivered.
        while (p.status === 'running' && Date.now() - t0 < 5000) p = await r.poll(s.id);
        expect(p).toMatchObject({ status: 'exited', exitCode: 2, reason: 'exited' });
      } finally {
        await r.close();
      }
    }
  });
});

describe('commands that start with a dash', () => {
  it('reach the shell as a command, not as its options', async () => {
    const r = await ProcessRegistry.open();
    try {
      const s = await r.spawn('--version');
      cleanupGroup(s.pid);
      const w = await r.wait(s.id, { timeoutMs: 5000 });
      expect(w.exitCode).toBe(127);
      expect(w.outputPreview).toMatch(/--version: command not found/);
    } finally {
      await r.close();
    }
  });
});
