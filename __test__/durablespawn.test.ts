// DESIGN sections 4 and 6, durable spawn (issue 14): the supervisor creates the session
// directory and writes session.json before it starts the job, so the host's event loop
// never waits for the disk to create them, and no job runs without its record on disk.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, crashHost, startHost, tempDir, until } from './support.js';

describe('durable spawn', () => {
  it('the job finds its session.json written, whole, before it started', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir });
    try {
      // The only session directory of this state directory is the job's own.
      const s = await r.spawn(`cat ${join(stateDir, 'sessions')}/*/session.json`);
      cleanupGroup(s.pid);
      const done = await r.wait(s.id, { timeoutMs: 10_000 });
      expect(done.exitCode).toBe(0);
      const record = JSON.parse((await r.readLog(s.id)).lines.join('\n'));
      // The supervisor writes its own identity (the job's follows in supervisor.json).
      expect(record).toMatchObject({ id: s.id, durable: true, status: 'running', pid: s.supervisorPid, identity: { pid: s.supervisorPid } });
      expect(readdirSync(join(stateDir, 'sessions', s.id)).sort()).toEqual(['exit.json', 'output.log', 'session.json', 'supervisor.json']);
    } finally {
      await r.close();
    }
  });

  it('a record too long for the supervisor pipe is written by the host, and the job still runs', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir });
    try {
      const s = await r.spawn(`: ${'x'.repeat(70_000)}; wc -c < ${join(stateDir, 'sessions')}/*/session.json`);
      cleanupGroup(s.pid);
      expect((await r.wait(s.id, { timeoutMs: 10_000 })).exitCode).toBe(0);
      expect(Number((await r.readLog(s.id)).lines[0])).toBeGreaterThan(70_000);
    } finally {
      await r.close();
    }
  });

  it('a host that dies right after the spawn leaves the job findable and its end known', async () => {
    const stateDir = tempDir();
    // No checkpoint write can happen: the host dies in the turn of the spawn.
    const { line, host } = await startHost(stateDir, `const s = await r.spawn('sleep 0.5; exit 4'); console.log(JSON.stringify(s)); process.kill(process.pid, 'SIGKILL');`);
    await crashHost(host);
    cleanupGroup(line.pid);
    await until(() => existsSync(join(stateDir, 'sessions', line.id, 'exit.json')), 10_000, 'exit.json');
    const r = await ProcessRegistry.open({ stateDir });
    try {
      expect(await r.wait(line.id, { timeoutMs: 10_000 })).toMatchObject({ reason: 'exited', exitCode: 4 });
      expect(JSON.parse(readFileSync(join(stateDir, 'sessions', line.id, 'session.json'), 'utf8'))).toMatchObject({ id: line.id, durable: true });
    } finally {
      await r.close();
    }
  });

  it('a job without output leaves no log, and reads as empty without a diagnostic', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir });
    try {
      const s = await r.spawn('true');
      cleanupGroup(s.pid);
      const done = await r.wait(s.id, { timeoutMs: 10_000 });
      expect(done).toMatchObject({ reason: 'exited', exitCode: 0 });
      expect(existsSync(join(stateDir, 'sessions', s.id, 'output.log'))).toBe(false);
      expect(existsSync(join(stateDir, 'sessions', s.id, 'exit.json'))).toBe(true);
      const p = await r.poll(s.id);
      expect(p.outputPreview).toBe('');
      expect((await r.readLog(s.id)).lines).toEqual([]);
      const t = await r.spawn('echo one; echo two');
      cleanupGroup(t.pid);
      await r.wait(t.id, { timeoutMs: 10_000 });
      expect(JSON.stringify(await r.poll(t.id))).toContain('one\\ntwo');
      expect(r.diagnostics.filter((d: string) => d.includes('output not shown'))).toEqual([]);
    } finally {
      await r.close();
    }
  });
});
