// A durable job's stdin (DESIGN sections 4 and 8): a FIFO in its session directory that any
// host may write to, also after the host that started the job is gone.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, cli, tempDir, until } from './support.js';

describe('durable stdin', () => {
  it('outlives the starting host: another host submits, writes and closes, and the job reads it all', async () => {
    const stateDir = tempDir();
    const a = await ProcessRegistry.open({ stateDir });
    const s = await a.spawn('read a; echo "got $a"; cat; echo after-eof', { stdin: true });
    cleanupGroup(s.pid);
    await a.close();
    const fifo = statSync(join(stateDir, 'sessions', s.id, 'stdin'));
    expect(fifo.isFIFO()).toBe(true);
    expect(fifo.mode & 0o777).toBe(0o600);

    const b = await ProcessRegistry.open({ stateDir });
    try {
      expect(await b.submit(s.id, 'hello')).toEqual({ id: s.id, bytes: 6 });
      await b.write(s.id, 'raw\n');
      expect((await b.poll(s.id)).status).toBe('running');
      expect(await b.closeStdin(s.id)).toEqual({ id: s.id, closed: true });
      const w = await b.wait(s.id, { timeoutMs: 10_000 });
      expect(w).toMatchObject({ status: 'exited', exitCode: 0 });
      expect((await b.readLog(s.id)).lines).toEqual(['got hello', 'raw', 'after-eof']);
      await expect(b.submit(s.id, 'late')).rejects.toMatchObject({ code: 'SESSION_EXITED' });
      await expect(b.closeStdin(s.id)).rejects.toMatchObject({ code: 'SESSION_EXITED' });
    } finally {
      await b.close();
    }
  });

  it('a write larger than the FIFO reaches a job that reads it, whole', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn('wc -c', { stdin: true });
      cleanupGroup(s.pid);
      expect(await r.write(s.id, 'x'.repeat(1 << 20))).toEqual({ id: s.id, bytes: 1 << 20 });
      await r.closeStdin(s.id);
      await r.wait(s.id, { timeoutMs: 10_000 });
      expect((await r.readLog(s.id)).lines).toEqual([String(1 << 20)]);
    } finally {
      await r.close();
    }
  });

  it('a job that does not read: WRITE_TIMEOUT once the FIFO is full and the timeout passed, nothing blocks', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn('sleep 30', { stdin: true });
      cleanupGroup(s.pid);
      await expect(r.write(s.id, 'x'.repeat(1 << 20), { timeoutMs: 300 })).rejects.toMatchObject({ code: 'WRITE_TIMEOUT', details: { written: expect.any(Number) } });
      await r.kill(s.id, { graceMs: 200 });
    } finally {
      await r.close();
    }
  });

  it('close is for good: a later write is refused, never read by a later `cat`', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn('cat; echo first-eof; sleep 0.5; cat; echo second-eof', { stdin: true });
      cleanupGroup(s.pid);
      await r.write(s.id, 'a\n');
      await r.closeStdin(s.id);
      await new Promise((res) => setTimeout(res, 200));
      await expect(r.write(s.id, 'LEAK\n')).rejects.toMatchObject({ code: 'STDIN_CLOSED' });
      await r.closeStdin(s.id);
      await r.wait(s.id, { timeoutMs: 10_000 });
      expect((await r.readLog(s.id)).lines).toEqual(['a', 'first-eof', 'second-eof']);
    } finally {
      await r.close();
    }
  });

  it('a background reader of the same stdin gets EOF when the job ends', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir });
    try {
      const mark = join(stateDir, 'eof-seen');
      const s = await r.spawn(`(cat >/dev/null; echo done > ${mark}) <&0 & exit 4`, { stdin: true });
      cleanupGroup(s.pid);
      expect((await r.wait(s.id, { timeoutMs: 10_000 })).exitCode).toBe(4);
      await until(() => existsSync(mark), 5000, 'the background cat saw EOF');
    } finally {
      await r.close();
    }
  });

  it('a durable job started without stdin says so', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn('sleep 30');
      cleanupGroup(s.pid);
      await expect(r.submit(s.id, 'x')).rejects.toMatchObject({ code: 'NO_STDIN' });
      await r.kill(s.id, { graceMs: 200 });
    } finally {
      await r.close();
    }
  });

  it('the CLI answers a prompt of a job started by another invocation', async () => {
    const state = tempDir();
    const s = JSON.parse((await cli(['start', '--stdin', '--state-dir', state, '--json', '--', 'read -p "name? " n; echo "hi $n"'])).stdout);
    cleanupGroup(s.pid);
    const sent = await cli(['submit', s.id, 'Ada', '--state-dir', state, '--json']);
    expect(JSON.parse(sent.stdout)).toEqual({ id: s.id, bytes: 4 });
    const waited = await cli(['wait', s.id, '--state-dir', state, '--timeout', '10s']);
    expect(waited.code).toBe(0);
    expect(waited.stdout).toBe('hi Ada\n');
    const late = await cli(['close', s.id, '--state-dir', state]);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/SESSION_EXITED/);
  });
});
