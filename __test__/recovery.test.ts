// DESIGN section 6: checkpoint and crash recovery, with separate host processes.
import { readdirSync, readFileSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { identity, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, cli, crashHost, isAlive, startHost, tempDir, until } from './support.js';

/** Live durable-job supervisors whose exit file lives under `stateDir` (read from /proc). */
function supervisorsUnder(stateDir: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.endsWith('procward-supervise') && argv[1]?.startsWith(`${stateDir}/`) && isAlive(Number(name))) {
        found.set(argv[1].split('/').at(-2) as string, Number(name));
      }
    } catch {}
  }
  return found;
}

function checkpointIds(stateDir: string): string[] {
  return JSON.parse(readFileSync(join(stateDir, 'checkpoint.json'), 'utf8')).sessions.map((s: { id: string }) => s.id);
}

describe('crash recovery', () => {
  it('a host SIGKILLed at 50 random moments while spawning in a loop: no job is left untracked, no temp file left behind', async () => {
    const state = tempDir();
    for (let round = 0; round < 50; round++) {
      const { host } = await startHost(
        state,
        `console.log('{}'); let i = 0; const one = async () => { for (;;) await r.spawn('sleep 30; exit ' + (i++ % 5)); }; one(); one(); one();`,
      );
      await new Promise((res) => setTimeout(res, 30 + Math.random() * 250));
      await crashHost(host);
      const next = await ProcessRegistry.open({ stateDir: state });
      const tracked = new Set((await next.list()).map((s) => s.id));
      const live = supervisorsUnder(state);
      for (const [id, pid] of live) {
        cleanupGroup(pid);
        if (!tracked.has(id)) {
          const { existsSync } = await import('node:fs');
          const dir = join(state, 'sessions', id);
          const why = {
            dir: existsSync(dir),
            meta: existsSync(join(dir, 'session.json')) ? readFileSync(join(dir, 'session.json'), 'utf8').slice(0, 400) : null,
            inCheckpoint: checkpointIds(state).includes(id),
            diagnostics: next.diagnostics,
            files: existsSync(dir) ? readdirSync(dir) : [],
          };
          expect.fail(`job ${id} (supervisor ${pid}) is not tracked: ${JSON.stringify(why)}`);
        }
      }
      await next.close();
      expect(readdirSync(state).filter((f) => /\.json\.\d+$/.test(f))).toEqual([]);
      // Never empty while jobs run (a host killed before its first spawn leaves nothing to list).
      if (live.size > 0) expect(checkpointIds(state).length).toBeGreaterThan(0);
    }
  }, 180_000);

  it('two hosts spawning 50 jobs each at once on one state directory: a third host recovers all 100', async () => {
    const state = tempDir();
    const body = `const all = await Promise.all(Array.from({ length: 50 }, () => r.spawn('sleep 30'))); console.log(JSON.stringify(all.map((s) => s.pid)));`;
    const [a, b] = await Promise.all([startHost(state, body), startHost(state, body)]);
    for (const pid of [...a.line, ...b.line]) cleanupGroup(pid);
    await Promise.all([crashHost(a.host), crashHost(b.host)]);
    const third = await ProcessRegistry.open({ stateDir: state });
    const running = (await third.list()).filter((s) => s.status === 'running');
    expect(running.length).toBe(100);
    expect(new Set(running.map((s) => s.pid))).toEqual(new Set([...a.line, ...b.line]));
    await third.close();
  }, 60_000);

  it('a recorded job whose PID now belongs to another process is never signalled, on recovery or on kill', async () => {
    const state = tempDir();
    // Without a cgroup: a PID's new owner is never in the job's cgroup, whose members a kill
    // takes as the job's whatever became of its leader (see leftovers.test.ts).
    const r1 = await ProcessRegistry.open({ stateDir: state, containment: false });
    const s = await r1.spawn('sleep 30');
    cleanupGroup(s.pid);
    await r1.close();
    const cp = JSON.parse(readFileSync(join(state, 'checkpoint.json'), 'utf8'));
    const entry = cp.sessions.find((e: { id: string }) => e.id === s.id);
    entry.identity.startTime = String(BigInt(entry.identity.startTime) + 7n);
    entry.updatedAt = Date.now() + 60_000;
    writeFileSync(join(state, 'checkpoint.json'), JSON.stringify(cp));
    const r2 = await ProcessRegistry.open({ stateDir: state });
    expect((await r2.poll(s.id)).status).toBe('exited');
    const k = await r2.kill(s.id, { graceMs: 100 });
    expect(k.outcome).toBe('already_exited');
    expect(k.signalled).toEqual([]);
    expect(isAlive(s.pid!)).toBe(true);
    await r2.close();
  });

  it('a second host never takes over the entries of a live host, and the real exit code wins', async () => {
    const state = tempDir();
    const { line, host } = await startHost(state, `const s = await r.spawn('sleep 1; exit 3', { durable: false }); console.log(JSON.stringify(s));`);
    cleanupGroup(line.pid);
    const other = await ProcessRegistry.open({ stateDir: state });
    expect(await other.poll(line.id)).toMatchObject({ status: 'running', detached: true });
    const w = await other.wait(line.id, { timeoutMs: 10_000 });
    expect(w).toMatchObject({ status: 'exited', exitCode: 3, reason: 'exited' });
    await other.close();
    await crashHost(host);
    const fresh = await ProcessRegistry.open({ stateDir: state });
    expect(await fresh.poll(line.id)).toMatchObject({ exitCode: 3, reason: 'exited' });
    await fresh.close();
  });

  it('two registries in one process on one state directory keep each other’s exit codes', async () => {
    const state = tempDir();
    const a = await ProcessRegistry.open({ stateDir: state, durable: false });
    const s = await a.spawn('sleep 0.5; exit 3');
    cleanupGroup(s.pid);
    const b = await ProcessRegistry.open({ stateDir: state });
    await a.wait(s.id, { timeoutMs: 10_000 });
    await until(async () => (await b.poll(s.id)).status === 'exited', 5000, 'b sees the end');
    expect(await b.poll(s.id)).toMatchObject({ exitCode: 3, reason: 'exited' });
    await Promise.all([a.close(), b.close()]);
  });

  it('a kill from one CLI while another CLI waits is recorded as killed', async () => {
    const state = tempDir();
    const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', 'sleep 30'])).stdout);
    cleanupGroup(s.pid);
    const waiting = cli(['wait', s.id, '--state-dir', state, '--json']);
    await new Promise((r) => setTimeout(r, 500));
    expect((await cli(['kill', s.id, '--state-dir', state, '--json'])).code).toBe(0);
    expect(JSON.parse((await waiting).stdout)).toMatchObject({ status: 'exited', reason: 'killed' });
    expect(JSON.parse((await cli(['poll', s.id, '--state-dir', state, '--json'])).stdout)).toMatchObject({ reason: 'killed' });
  });
});

describe('checkpoint files', () => {
  const corruptions: [string, string | Buffer][] = [
    ['an empty file', ''],
    ['truncated JSON', '{"version":1,"sessions":[{"id":"proc_'],
    ['random bytes', Buffer.from([0x8f, 0x00, 0xff, 0x13, 0x37, 0xc3])],
    ['a valid document of the wrong shape', '{"version":1,"jobs":[]}'],
    // A newer version is read-only, not corrupt (see statedir.test.ts).
    ['a version that is not a positive integer', '{"version":0,"sessions":[]}'],
  ];
  for (const [what, content] of corruptions) {
    it(`${what} is moved aside with a diagnostic and the previous generation is recovered`, async () => {
      const state = tempDir();
      const r1 = await ProcessRegistry.open({ stateDir: state });
      const a = await r1.spawn('exit 5');
      cleanupGroup(a.pid);
      await r1.wait(a.id, { timeoutMs: 10_000 });
      const b = await r1.spawn('exit 6');
      cleanupGroup(b.pid);
      await r1.wait(b.id, { timeoutMs: 10_000 });
      await r1.close();
      writeFileSync(join(state, 'checkpoint.json'), content);
      const r2 = await ProcessRegistry.open({ stateDir: state });
      expect(r2.diagnostics.join('\n')).toMatch(/checkpoint\.json: .*moved aside to .*corrupt-/);
      expect(readdirSync(state).some((f) => f.startsWith('checkpoint.json.corrupt-'))).toBe(true);
      expect((await r2.poll(a.id)).exitCode).toBe(5);
      await r2.close();
    });
  }

  it('a corrupt checkpoint found at write time does not drop other hosts’ entries', async () => {
    const state = tempDir();
    const a = await ProcessRegistry.open({ stateDir: state });
    const x = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', 'sleep 20'])).stdout);
    cleanupGroup(x.pid);
    writeFileSync(join(state, 'checkpoint.json'), '{"version":1,"sess');
    const mine = await a.spawn('sleep 20');
    cleanupGroup(mine.pid);
    // The spawn's checkpoint write follows within 200 ms; close() flushes it now.
    await a.close();
    expect(checkpointIds(state)).toEqual(expect.arrayContaining([x.id, mine.id]));
    expect(a.diagnostics.join('\n')).toMatch(/moved aside/);
  });

  it('a symlink planted at the checkpoint path is refused, not followed', async () => {
    const state = tempDir();
    const target = join(tempDir(), 'elsewhere.json');
    writeFileSync(target, JSON.stringify({ version: 1, sessions: [] }));
    mkdirSync(state, { recursive: true });
    symlinkSync(target, join(state, 'checkpoint.json'));
    const r = await ProcessRegistry.open({ stateDir: state });
    expect(r.diagnostics.join('\n')).toMatch(/symlink/);
    const s = await r.spawn('exit 0');
    cleanupGroup(s.pid);
    await r.close();
    expect(readFileSync(target, 'utf8')).toBe(JSON.stringify({ version: 1, sessions: [] }));
  });

  it('a burst of 100 spawns shares checkpoint writes (group commit)', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir(), durable: false });
    const all = await Promise.all(Array.from({ length: 100 }, () => r.spawn('exit 0')));
    for (const s of all) cleanupGroup(s.pid);
    expect(r.stats().checkpointWrites).toBeLessThan(30);
    expect((await r.list()).length).toBe(100);
    await r.close();
  });

  it('every entry records its writer’s identity', async () => {
    const state = tempDir();
    const r = await ProcessRegistry.open({ stateDir: state });
    const s = await r.spawn('exit 0');
    cleanupGroup(s.pid);
    await r.close();
    const entry = JSON.parse(readFileSync(join(state, 'checkpoint.json'), 'utf8')).sessions[0];
    expect(entry.writer).toMatchObject(identity(process.pid)!);
  });
});
