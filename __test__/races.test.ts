// Races and bad input (DESIGN sections 3 and 5): outcomes that must not depend on timing,
// and clear errors that lose nothing. Several of these came from adversarial testing.
import { execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry, probe } from '../dist/index.mjs';
import { cleanupGroup, cleanupPid, ROOT, tempDir, perTestRegistry } from './support.js';

const ctx = perTestRegistry();

describe('kill races', () => {
  it('two kills at once: the session ends killed, once, and exactly one kill says `killed`', async () => {
    for (let i = 0; i < 20; i++) {
      const s = await ctx.registry.spawn('sleep 30');
      cleanupGroup(s.pid);
      const [k1, k2] = await Promise.all([ctx.registry.kill(s.id, { graceMs: 500 }), new Promise((r) => setTimeout(r, i % 4)).then(() => ctx.registry.kill(s.id, { graceMs: 500 }))]);
      expect([k1.outcome, k2.outcome].sort()).toEqual(['already_exited', 'killed']);
      expect(await ctx.registry.poll(s.id)).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGTERM' });
    }
  });

  it('two hosts killing one job at once: exactly one says `killed`, and the record names the signal', async () => {
    const dir = tempDir();
    const owner = await ProcessRegistry.open({ stateDir: dir });
    const index = join(ROOT, 'dist', 'index.js');
    // A killer host: opens the registry, waits for the go file, kills, prints the outcome.
    const killer = (id: string, go: string) => `const fs = require('fs'); const { ProcessRegistry } = require(${JSON.stringify(index)});
ProcessRegistry.open({ stateDir: ${JSON.stringify(dir)} }).then(async (r) => {
  process.stdout.write('ready\\n');
  while (!fs.existsSync(${JSON.stringify(go)})) await new Promise((res) => setTimeout(res, 2));
  const k = await r.kill(${JSON.stringify(id)}, { graceMs: 2000 });
  await r.close();
  process.stdout.write(JSON.stringify({ outcome: k.outcome }) + '\\n');
});`;
    try {
      for (let i = 0; i < 5; i++) {
        const s = await owner.spawn('sleep 30', { durable: i % 2 === 1 });
        cleanupGroup(s.pid);
        const go = join(dir, `go-${i}`);
        const hosts = [0, 1].map(() => {
          const child = spawn(process.execPath, ['-e', killer(s.id, go)], { stdio: ['ignore', 'pipe', 'inherit'] });
          cleanupPid(child.pid);
          let out = '';
          const ready = new Promise<void>((res) => child.stdout.on('data', (d) => { out += String(d); if (out.includes('ready')) res(); }));
          const done = new Promise<string>((res, rej) => child.once('exit', (code) => (code === 0 ? res(out) : rej(new Error(`killer exited with ${code}: ${out}`)))));
          return { ready, done };
        });
        await Promise.all(hosts.map((h) => h.ready));
        writeFileSync(go, '');
        const outcomes = (await Promise.all(hosts.map((h) => h.done))).map((o) => JSON.parse(o.split('\n').filter(Boolean).pop() as string).outcome);
        expect(outcomes.sort(), `round ${i}`).toEqual(['already_exited', 'killed']);
        const w = await owner.wait(s.id, { timeoutMs: 10_000 });
        expect(w, `round ${i}`).toMatchObject({ status: 'exited', reason: 'killed' });
        expect(w.signal, `round ${i}`).toMatch(/^SIG(TERM|KILL)$/);
      }
    } finally {
      await owner.close();
    }
  }, 90_000);

  it('a kill racing the job’s own exit never labels a self-exit as killed', async () => {
    for (let i = 0; i < 20; i++) {
      const s = await ctx.registry.spawn('sleep 0.1; exit 7');
      cleanupGroup(s.pid);
      await new Promise((r) => setTimeout(r, 90 + (i % 5) * 5));
      const k = await ctx.registry.kill(s.id, { graceMs: 500 });
      const p = await ctx.registry.poll(s.id);
      if (k.outcome === 'already_exited') expect(p).toMatchObject({ reason: 'exited', exitCode: 7 });
      else expect(p.reason).toBe('killed');
    }
  });
});

describe('bad input gets a clear error', () => {
  it('NUL bytes, bad environment names and non-string ids are INVALID_ARGUMENT', async () => {
    await expect(ctx.registry.spawn('echo a\0b')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ctx.registry.spawn('true', { env: { 'A=B': 'x' } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ctx.registry.spawn('true', { env: { '': 'x' } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ctx.registry.poll(null as unknown as string)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await ctx.registry.list()).toEqual([]);
  });

  it('a PID that is not a positive 32-bit integer is refused by the native helpers', () => {
    expect(() => probe([1.5])).toThrow(/integer/);
    expect(() => probe([2 ** 31])).toThrow(/integer/);
    expect(() => probe([0])).toThrow(/integer/);
  });

  it('a spawn error names the cwd, never the command (it may hold a secret), and leaves no session dir', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    const err = await r.spawn("curl -H 'Authorization: Bearer sk-proj-abcdefghijklmnopqrstuvwxyz123456'", { cwd: '/no/such/dir' }).catch((e) => e);
    expect(err.code).toBe('ENOENT');
    expect(err.message).toContain('/no/such/dir');
    expect(err.message).not.toContain('abcdefghijklmnop');
    expect(await r.list()).toEqual([]);
    await r.close();
  });

  it('a closed registry refuses work with REGISTRY_CLOSED', async () => {
    const r = await ProcessRegistry.open();
    const s = await r.spawn('exit 0');
    cleanupGroup(s.pid);
    await r.close();
    await expect(r.poll(s.id)).rejects.toMatchObject({ code: 'REGISTRY_CLOSED' });
    await expect(r.spawn('true')).rejects.toMatchObject({ code: 'REGISTRY_CLOSED' });
  });
});

describe('output floods', () => {
  it('four `yes` floods for 3 s (gigabytes of output) keep the host RSS growth under the caps plus 32 MiB', async () => {
    const index = join(ROOT, 'dist', 'index.js');
    const script = `const { ProcessRegistry } = require(${JSON.stringify(index)});
(async () => {
  const r = await ProcessRegistry.open({ maxOutputChars: 10000 });
  const base = process.memoryUsage().rss; let peak = base;
  const iv = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 50);
  const all = await Promise.all([1, 2, 3, 4].map(() => r.spawn('timeout 3 yes "$(printf %0100d 0)"')));
  for (const s of all) await r.wait(s.id);
  clearInterval(iv);
  console.log(JSON.stringify({ growth: peak - base, tail: (await r.poll(all[0].id)).outputPreview.length }));
})();`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['-e', script], { timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    const { growth, tail } = JSON.parse(out);
    expect(growth, `RSS grew by ${(growth / 1048576).toFixed(1)} MiB`).toBeLessThan(4 * 10_000 + 32 * 1024 * 1024);
    expect(tail).toBeGreaterThan(0);
  }, 40_000);

  it('`yes` for 30 s grows the host by less than the default tail cap plus 32 MiB', async () => {
    const index = join(ROOT, 'dist', 'index.js');
    const script = `const { ProcessRegistry } = require(${JSON.stringify(index)});
(async () => {
  const r = await ProcessRegistry.open();
  const base = process.memoryUsage().rss; let peak = base;
  const iv = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 100);
  const s = await r.spawn('timeout 30 yes');
  const w = await r.wait(s.id);
  clearInterval(iv);
  console.log(JSON.stringify({ growth: peak - base, end: w.signal ?? w.exitCode }));
})();`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['-e', script], { timeout: 60_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    const { growth } = JSON.parse(out);
    expect(growth, `RSS grew by ${(growth / 1048576).toFixed(1)} MiB`).toBeLessThan(200_000 + 32 * 1024 * 1024);
  }, 70_000);
});
