// Faults (DESIGN §6, issue 26): one damaged record breaks only its own session, and a full
// disk loses nothing recorded.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, cli, isAlive, ROOT, startHost, tempDir, until } from './support';

/** A running entry like `base` with `field` set to `value` (a dotted path reaches into an identity), under a new id. */
function damaged(base: Record<string, any>, id: string, field: string, value: unknown): Record<string, any> {
  const e = JSON.parse(JSON.stringify(base));
  e.id = id;
  delete e.mark;
  const [a, b] = field.split('.') as [string, string | undefined];
  if (b === undefined) e[a] = value;
  else e[a] = { ...e[a], [b]: value };
  return e;
}

// Every number a record holds, out of range: past pid_t, past u64, past what a Date holds,
// past a DWORD exit code, negative counts, a deadline past a Node timer.
const OUT_OF_RANGE: [string, unknown][] = [
  ['pid', 4294967297],
  ['pid', 2 ** 31],
  ['identity.pid', 4294967297],
  ['identity.startTime', '18446744073709551616'],
  ['identity.startTime', '1'.repeat(400)],
  ['writer.pid', 2 ** 40],
  ['writer.startTime', '99999999999999999999999'],
  ['startedAt', 1e300],
  ['startedAt', -1],
  ['updatedAt', 8.64e15 + 1],
  ['exitCode', 1e29],
  ['exitCode', -(2 ** 31) - 1],
  ['timeoutMs', 2 ** 31],
  ['watchFired', -3],
  ['watchCursor', 2 ** 60],
];

describe('a damaged record breaks only its own session', () => {
  it('entries with every number out of range are kept read-only; a healthy running job beside them is listed and killed, by the library and the CLI', async () => {
    const state = tempDir();
    const r1 = await ProcessRegistry.open({ stateDir: state });
    const s = await r1.spawn('sleep 60', { durable: true });
    cleanupGroup(s.pid);
    await r1.close();
    const file = join(state, 'checkpoint.json');
    const cp = JSON.parse(readFileSync(file, 'utf8'));
    const healthy = cp.sessions.find((e: { id: string }) => e.id === s.id);
    const bad = OUT_OF_RANGE.map(([field, value], i) => damaged(healthy, `proc_00000000f${i.toString(16).padStart(3, '0')}`, field, value));
    cp.sessions.push(...bad);
    writeFileSync(file, JSON.stringify(cp), { mode: 0o600 });

    const r2 = await ProcessRegistry.open({ stateDir: state });
    try {
      const all = await r2.list();
      expect(all.find((x) => x.id === s.id)).toMatchObject({ status: 'running' });
      for (const b of bad) expect(all.find((x) => x.id === b.id), b.id).toMatchObject({ readOnly: true });
      const listed = await cli(['list', '--state-dir', state, '--json']);
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).map((x: { id: string }) => x.id)).toEqual(expect.arrayContaining([s.id, ...bad.map((b) => b.id)]));
      const k = await r2.kill(s.id, { graceMs: 200 });
      expect(k.outcome).toBe('killed');
      expect(isAlive(s.pid as number)).toBe(false);
    } finally {
      await r2.close();
    }
    // The damaged entries are kept for a later version to read, never rewritten in range.
    const kept = JSON.parse(readFileSync(file, 'utf8')).sessions;
    for (const b of bad) expect(kept.find((e: { id: string }) => e.id === b.id)).toEqual(b);
  });
});

/** Runs a case of fixtures/fulldisk.mjs on a 2 MiB tmpfs in a private mount namespace. */
function onFullDisk(kase: string): Promise<Record<string, any>> {
  const mnt = tempDir();
  const script = `mount -t tmpfs -o size=2m,nr_inodes=400 tmpfs ${mnt} && exec node ${join(ROOT, '__test__', 'fixtures', 'fulldisk.mjs')} ${mnt} ${kase} ${join(ROOT, 'dist', 'index.mjs')}`;
  return new Promise((resolve, reject) => {
    execFile('unshare', ['--mount', 'sh', '-c', script], { timeout: 90_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').pop() as string));
    });
  });
}

const mountNs = (() => {
  try {
    execFileSync('unshare', ['--mount', 'true'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!mountNs && !process.env.CI)('nothing lost on a full disk (a 2 MiB tmpfs in a private mount namespace)', () => {
  for (const kind of ['durable', 'pipe']) {
    it(`a ${kind} spawn that cannot be recorded fails with ENOSPC naming the state directory, starts nothing, and leaves no session behind`, async () => {
      const r = await onFullDisk(`spawn-${kind}`);
      expect(r.spawned).toBeUndefined();
      expect(r.error).toMatchObject({ code: 'ENOSPC', message: expect.stringMatching(/cannot record session proc_[0-9a-f]{12} in the state directory .*state .*nothing was started/) });
      expect(r.listedWhileFull).toEqual([]);
      expect(r.after).toEqual([]);
    }, 120_000);

    it(`a ${kind} job killed while the disk is full is killed, and recorded killed once space returns`, async () => {
      const r = await onFullDisk(`kill-${kind}`);
      expect(r.killError).toBeUndefined();
      expect(r.kill).toEqual({ outcome: 'killed', survivors: [] });
      expect(r.after).toEqual([expect.objectContaining({ id: r.id, status: 'exited', reason: 'killed' })]);
      expect(r.alive).toEqual([]);
    }, 120_000);

    it(`a ${kind} job that ends while the disk is full has its exact end written once space returns`, async () => {
      const r = await onFullDisk(`end-${kind}`);
      expect(r.onDiskBeforeClose).toEqual({ status: 'exited', exitCode: 7 });
      expect(r.after).toEqual([expect.objectContaining({ id: r.id, status: 'exited', reason: 'exited', exitCode: 7 })]);
    }, 120_000);
  }
});

describe('a damaged job file breaks only its own session', () => {
  it('an exit file whose time a Date cannot hold gives the exit code, and the session stays one a host can act on', async () => {
    const state = tempDir();
    const r1 = await ProcessRegistry.open({ stateDir: state });
    const s = await r1.spawn('sleep 60', { durable: true });
    await r1.close();
    process.kill(-(s.supervisorPid as number), 'SIGKILL');
    await until(() => !isAlive(s.pid as number) && !isAlive(s.supervisorPid as number), 5000, 'the job and its supervisor to die');
    writeFileSync(join(state, 'sessions', s.id, 'exit.json'), `${JSON.stringify({ code: 4, exitedAt: 9e15 })}\n`, { mode: 0o600 });
    const r2 = await ProcessRegistry.open({ stateDir: state });
    try {
      const p = await r2.poll(s.id);
      expect(p).toMatchObject({ status: 'exited', exitCode: 4 });
      expect(p).not.toHaveProperty('readOnly');
      expect((await r2.forget(s.id)).id).toBe(s.id);
    } finally {
      await r2.close();
    }
  });
});

describe('lost is lost, in bounded time', () => {
  it('a host that closed its registry and lives on owns nothing: its job SIGKILLed with its group is lost to the next host, and procward wait returns', async () => {
    const state = tempDir();
    const { line, host } = await startHost(state, `const s = await r.spawn('sleep 600', { durable: true }); await r.close(); console.log(JSON.stringify(s));`);
    try {
      // The job's group (its supervisor leads it): SIGKILL, so no exit file is written.
      process.kill(-line.supervisorPid, 'SIGKILL');
      await until(() => !isAlive(line.pid) && !isAlive(line.supervisorPid), 5000, 'the job and its supervisor to die');
      const waited = await cli(['wait', '--state-dir', state, '--json', line.id]);
      expect(JSON.parse(waited.stdout)).toMatchObject({ id: line.id, status: 'exited', reason: 'lost' });
      // While a host keeps its registry open, its entries stay its own.
      const { line: other } = await startHost(state, `const s = await r.spawn('sleep 600', { durable: true }); console.log(JSON.stringify(s));`);
      cleanupGroup(other.supervisorPid);
      const r = await ProcessRegistry.open({ stateDir: state });
      try {
        expect((await r.list()).find((s) => s.id === other.id)).toMatchObject({ status: 'running' });
        expect(r.diagnostics.join('\n')).not.toMatch(/cannot hold this registry's lock/);
      } finally {
        await r.close();
      }
    } finally {
      host.kill('SIGKILL');
    }
  }, 60_000);

  it('a job of a live, open host that cannot record its end (stopped) is lost to another host after lostAfterMs', async () => {
    const state = tempDir();
    const { line, host } = await startHost(state, `const s = await r.spawn('sleep 600', { durable: false }); console.log(JSON.stringify(s));`);
    try {
      host.kill('SIGSTOP');
      process.kill(-line.pid, 'SIGKILL');
      await until(() => !isAlive(line.pid), 5000, 'the job to die');
      const r = await ProcessRegistry.open({ stateDir: state, lostAfterMs: 300 });
      try {
        expect(await r.poll(line.id)).toMatchObject({ status: 'running' });
        await until(async () => (await r.poll(line.id)).status === 'exited', 10_000, 'the session to end');
        expect(await r.poll(line.id)).toMatchObject({ status: 'exited', reason: 'lost' });
      } finally {
        await r.close();
      }
    } finally {
      host.kill('SIGCONT');
      host.kill('SIGKILL');
    }
  }, 60_000);
});
