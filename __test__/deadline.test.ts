// Issue 17, the deadline half of "inline completion and deadlines on start": `timeoutMs` on
// spawn tree-kills the job once it has run that long (SIGTERM, SIGKILL after the grace
// period, DESIGN section 3) and the ended session says `deadlineExceeded`. A durable job's
// supervisor enforces it, so it holds when the host has crashed and any later host reports it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, crashHost, isAlive, startHost, tempDir, until } from './support.js';

/** Ignores SIGTERM (so does its sleep, which inherits the ignored disposition), then says so. */
const TERM_DEAF = `trap '' TERM; echo ready; sleep 30`;

describe('a deadline on spawn (timeoutMs)', () => {
  for (const durable of [false, true]) {
    const kind = durable ? 'durable' : 'in-memory';
    const open = () => (durable ? ProcessRegistry.open({ stateDir: tempDir(), graceMs: 300 }) : ProcessRegistry.open({ graceMs: 300 }));

    it(`${kind}: sleep 30 with a 1 s deadline ends killed, deadlineExceeded`, async () => {
      const r = await open();
      try {
        const s = await r.spawn('sleep 30', { durable, timeoutMs: 1000 });
        cleanupGroup(s.pid);
        expect(s).toMatchObject({ status: 'running', timeoutMs: 1000 });
        const w = await r.wait(s.id, { timeoutMs: 30_000 });
        expect(w).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGTERM', deadlineExceeded: true, timedOut: false, timeoutMs: 1000 });
        await until(() => !isAlive(s.pid as number), 5000, 'the job gone');
      } finally {
        await r.close();
      }
    });

    it(`${kind}: a job that ends before its deadline reports deadlineExceeded false`, async () => {
      const r = await open();
      try {
        const s = await r.spawn('exit 3', { durable, timeoutMs: 60_000 });
        cleanupGroup(s.pid);
        expect(await r.wait(s.id, { timeoutMs: 30_000 })).toMatchObject({ status: 'exited', reason: 'exited', exitCode: 3, deadlineExceeded: false });
        // A session started without a deadline says nothing of one.
        const plain = await r.spawn('exit 0', { durable });
        const w = await r.wait(plain.id, { timeoutMs: 30_000 });
        expect(w).not.toHaveProperty('deadlineExceeded');
        expect(w).not.toHaveProperty('timeoutMs');
      } finally {
        await r.close();
      }
    });

    it(`${kind}: a job that ignores SIGTERM is SIGKILLed after the grace period`, async () => {
      const r = await open();
      try {
        const s = await r.spawn(TERM_DEAF, { durable, timeoutMs: 3000 });
        cleanupGroup(s.pid);
        const w = await r.wait(s.id, { timeoutMs: 30_000 });
        // The trap ran before the deadline (it precedes the echo), so only SIGKILL could end it.
        expect((await r.readLog(s.id)).lines).toContain('ready');
        expect(w).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGKILL', deadlineExceeded: true });
      } finally {
        await r.close();
      }
    });
  }

  it('a deadline kill does not consume the completion event', async () => {
    const r = await ProcessRegistry.open({ graceMs: 300 });
    try {
      const s = await r.spawn('sleep 30', { timeoutMs: 500, notifyOnComplete: true, sessionKey: 'k' });
      cleanupGroup(s.pid);
      await until(async () => (await r.poll(s.id)).status === 'exited', 30_000, 'the deadline');
      const events = await r.drainNotifications({ sessionKey: 'k' });
      expect(events).toEqual([expect.objectContaining({ type: 'completion', sessionId: s.id, reason: 'killed', signal: 'SIGTERM' })]);
    } finally {
      await r.close();
    }
  });

  it('bad deadlines are refused before anything starts', async () => {
    const r = await ProcessRegistry.open();
    try {
      for (const timeoutMs of [0, -1, 1.5, Number.NaN, 2 ** 31, Number.POSITIVE_INFINITY]) {
        await expect(r.spawn('sleep 30', { timeoutMs })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('timeoutMs') });
      }
      await expect(r.spawn('sleep 30', { timeoutMs: '100' as unknown as number })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      // A misspelt key is refused with a hint, never ignored.
      await expect(r.spawn('sleep 30', { timeout: 100 } as object)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('timeoutMs') });
      expect(await r.list()).toEqual([]);
    } finally {
      await r.close();
    }
  });
});

describe('a durable job’s deadline without its host', () => {
  it('holds when the host is gone: the supervisor kills the job, and a new host reports deadlineExceeded', async () => {
    const stateDir = tempDir();
    const { line, host } = await startHost(stateDir, `const s = await r.spawn('sleep 30', { durable: true, timeoutMs: 1500 }); console.log(JSON.stringify(s));`, '{ "graceMs": 300 }');
    cleanupGroup(line.pid);
    await crashHost(host);
    expect(isAlive(line.pid)).toBe(true);
    // No host runs now: the supervisor alone ends the job and records why.
    const exitFile = join(stateDir, 'sessions', line.id, 'exit.json');
    await until(() => existsSync(exitFile) && readFileSync(exitFile, 'utf8').endsWith('\n'), 30_000, 'exit.json');
    expect(JSON.parse(readFileSync(exitFile, 'utf8'))).toMatchObject({ signal: 15, timedOut: true });
    await until(() => !isAlive(line.pid), 5000, 'the job gone');
    const r = await ProcessRegistry.open({ stateDir });
    try {
      const w = await r.wait(line.id, { timeoutMs: 30_000 });
      expect(w).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGTERM', deadlineExceeded: true, pid: line.pid, supervisorPid: line.supervisorPid });
    } finally {
      await r.close();
    }
  });

  it('a pipe-mode job’s deadline is enforced by the host that recovers it after its own host crashed', async () => {
    const stateDir = tempDir();
    const { line, host } = await startHost(stateDir, `const s = await r.spawn('sleep 30', { durable: false, timeoutMs: 1500 }); console.log(JSON.stringify(s));`);
    cleanupGroup(line.pid);
    await crashHost(host);
    const r = await ProcessRegistry.open({ stateDir, graceMs: 300 });
    try {
      const w = await r.wait(line.id, { timeoutMs: 30_000 });
      expect(w).toMatchObject({ status: 'exited', reason: 'killed', deadlineExceeded: true, pid: line.pid });
      await until(() => !isAlive(line.pid), 5000, 'the job gone');
    } finally {
      await r.close();
    }
  });

  // A durable job whose supervisor no longer enforces its deadline (its own job stopped
  // it): the host that follows it kills it, whether it recovered it at its open (the
  // job's host was gone) or adopted it later (the host was alive at the open, then died).
  for (const adoptedLater of [false, true]) {
    const how = adoptedLater ? 'a foreign durable job adopted after its host crashed' : 'a durable job recovered after its host crashed';
    it(`${how}, whose supervisor was stopped, is killed at its deadline by the new host`, async () => {
      const stateDir = tempDir();
      // Long enough for the new host to open while the first one lives, when that matters.
      const spawn = `r.spawn('kill -STOP $PPID; sleep 30', { durable: true, timeoutMs: ${adoptedLater ? 4000 : 1000} })`;
      const { line, host } = await startHost(stateDir, `const s = await ${spawn}; console.log(JSON.stringify(s));`);
      cleanupGroup(line.supervisorPid);
      if (!adoptedLater) await crashHost(host);
      const r = await ProcessRegistry.open({ stateDir, graceMs: 300 });
      try {
        await crashHost(host);
        const w = await r.wait(line.id, { timeoutMs: 30_000 });
        expect(w).toMatchObject({ status: 'exited', reason: 'killed', deadlineExceeded: true });
        // The supervisor may be stopped before it names the job: the spawn's summary may not.
        const job = (w.pid ?? line.pid) as number;
        expect(job).toBeGreaterThan(0);
        await until(() => !isAlive(job), 5000, 'the job gone');
      } finally {
        await r.close();
      }
    });
  }
});
