// DESIGN section 3: one signal with no escalation is its own operation, `signal(id, name)`:
// to the job's process group, identity-checked, never escalated. Real jobs with traps.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { identity, JOB_SIGNALS, ProcessRegistry, probe, signalJob } from '../dist/index.mjs';
import { cleanupGroup, isAlive, perTestRegistry, tempDir, until } from './support.js';

const ctx = perTestRegistry();

/** Whether `pid` has a handler for signal number `n` (`SigCgt` in /proc/<pid>/status): its trap line ran. */
function catches(pid: number, n: number): boolean {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('SigCgt:')) ?? '';
    return (BigInt(`0x${line.slice(7).trim() || '0'}`) & (1n << BigInt(n - 1))) !== 0n;
  } catch {
    return false;
  }
}

async function output(id: string): Promise<string> {
  return (await ctx.registry.readLog(id)).lines.join('\n');
}

async function startTrapping(command: string, signo: number, opts = {}) {
  const s = await ctx.registry.spawn(command, opts);
  cleanupGroup(s.pid);
  await until(() => catches(s.pid!, signo), 5000, `the trap for signal ${signo}`);
  return s;
}

const SIGINT = 2;
const SIGUSR1 = 10;
const SIGHUP = 1;

describe.skipIf(process.platform !== 'linux')('signal(id, name) sends one signal and never escalates', () => {
  it('SIGINT to a job that traps INT runs the trap and the job keeps running', async () => {
    const s = await startTrapping(`trap 'echo got INT' INT; while :; do sleep 0.1; done`, SIGINT);
    const res = await ctx.registry.signal(s.id, 'SIGINT');
    expect(res).toEqual({ id: s.id, signal: 'SIGINT', pid: s.pid, processGroup: true });
    await until(async () => (await output(s.id)).includes('got INT'), 5000, 'the trap output');
    expect((await ctx.registry.poll(s.id)).status).toBe('running');
    expect(isAlive(s.pid!)).toBe(true);
  });

  it('SIGINT to a job whose trap exits: the job ends by its own choice (reason exited, its code)', async () => {
    const s = await startTrapping(`trap 'echo bye; exit 7' INT; while :; do sleep 0.1; done`, SIGINT);
    await ctx.registry.signal(s.id, 'int');
    const w = await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'exited', exitCode: 7 });
  });

  it('the whole process group gets it: a child in the group traps it too (a dev server and its workers)', async () => {
    const s = await ctx.registry.spawn(`sh -c 'trap "echo child got USR1" USR1; while :; do sleep 0.1; done' & trap 'echo parent got USR1' USR1; while :; do sleep 0.1; done`);
    cleanupGroup(s.pid);
    await until(() => catches(s.pid!, SIGUSR1), 5000, 'the parent trap');
    const kids = () => readFileSync(`/proc/${s.pid}/task/${s.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    // The child is the `sh -c` that sets its own trap, found by its command line: a forked copy of
    // the parent (about to exec `sleep`) inherits the parent's trap and must not count.
    const childShell = (k: number) => readFileSync(`/proc/${k}/cmdline`, 'utf8').split('\0').filter(Boolean).at(-1)?.startsWith('trap "echo child') === true;
    await until(() => kids().some((k) => { try { return childShell(k) && catches(k, SIGUSR1); } catch { return false; } }), 5000, 'the child trap');
    await ctx.registry.signal(s.id, 'SIGUSR1');
    await until(async () => /child got USR1/.test(await output(s.id)) && /parent got USR1/.test(await output(s.id)), 5000, 'both traps');
    expect((await ctx.registry.poll(s.id)).status).toBe('running');
  });

  it('SIGTERM through signal is not a kill: a job that traps TERM keeps running (no SIGKILL follows)', async () => {
    const s = await startTrapping(`trap 'echo got TERM' TERM; while :; do sleep 0.1; done`, 15);
    await ctx.registry.signal(s.id, 'SIGTERM');
    await until(async () => (await output(s.id)).includes('got TERM'), 5000, 'the trap output');
    expect((await ctx.registry.poll(s.id)).status).toBe('running');
  });

  it('signal to an ended session is SESSION_EXITED and sends nothing', async () => {
    const s = await ctx.registry.spawn('exit 0');
    await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    const err = await ctx.registry.signal(s.id, 'SIGINT').catch((e) => e);
    expect(err.code).toBe('SESSION_EXITED');
    expect(err.message).toContain(s.id);
  });

  it('signal to a killed session is SESSION_EXITED too', async () => {
    const s = await startTrapping(`trap 'echo x' HUP; while :; do sleep 0.1; done`, SIGHUP);
    await ctx.registry.kill(s.id, { graceMs: 0 });
    expect((await ctx.registry.signal(s.id, 'SIGHUP').catch((e) => e)).code).toBe('SESSION_EXITED');
  });

  it('an unknown signal name is INVALID_ARGUMENT naming the allowed list, and nothing is sent', async () => {
    const s = await startTrapping(`trap 'echo got INT' INT; while :; do sleep 0.1; done`, SIGINT);
    for (const bad of ['SIGFOO', 'SIGSEGV', '9', '', 'KILL -9', 'SIGINT; rm -rf /']) {
      const err = await ctx.registry.signal(s.id, bad).catch((e) => e);
      expect(err.code, bad).toBe('INVALID_ARGUMENT');
      expect(err.message).toContain('SIGINT');
      expect(err.details.allowed).toEqual([...JOB_SIGNALS]);
    }
    expect(await output(s.id)).not.toContain('got INT');
    expect(isAlive(s.pid!)).toBe(true);
  });

  it('an unknown session id is UNKNOWN_SESSION', async () => {
    expect((await ctx.registry.signal('proc_000000000000', 'SIGINT').catch((e) => e)).code).toBe('UNKNOWN_SESSION');
  });

  it('a durable job gets SIGINT through its group; the supervisor ignores it and records the end', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn(`trap 'echo bye; exit 3' INT; while :; do sleep 0.1; done`, { durable: true });
      cleanupGroup(s.pid);
      await until(async () => {
        const ids = [s.pid!, ...readChildren(s.pid!)];
        return ids.some((p) => catches(p, SIGINT));
      }, 5000, 'the durable job trap');
      await r.signal(s.id, 'SIGINT');
      expect(await r.wait(s.id, { timeoutMs: 5000 })).toMatchObject({ status: 'exited', exitCode: 3 });
    } finally {
      await r.close();
    }
  });
});

describe.skipIf(process.platform !== 'linux')('signal to a durable job', () => {
  it('SIGUSR1 reaches the job alone, not its supervisor (whose SIGUSR1 would close the job stdin): the job traps it and runs on', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn(`trap 'echo got USR1' USR1; while :; do sleep 0.1; done`, { durable: true, stdin: true });
      cleanupGroup(s.supervisorPid ?? s.pid);
      await until(() => catches(s.pid!, SIGUSR1), 5000, 'the durable job trap');
      let res: Awaited<ReturnType<typeof r.signal>> | undefined;
      await until(async () => {
        res = await r.signal(s.id, 'SIGUSR1').catch((e) => {
          if (e.code !== 'ENOTSUP') throw e;
          return undefined;
        });
        return res !== undefined;
      }, 5000, 'the job identity to be known');
      expect(res).toMatchObject({ signal: 'SIGUSR1', pid: s.pid, processGroup: false });
      await until(async () => (await r.readLog(s.id)).lines.join('\n').includes('got USR1'), 5000, 'the trap output');
      // The supervisor got nothing: the job's stdin is still open for writes.
      await r.write(s.id, 'still open\n');
      expect((await r.poll(s.id)).status).toBe('running');
      await r.kill(s.id, { graceMs: 0 });
    } finally {
      await r.close();
    }
  });
});

describe.skipIf(process.platform !== 'linux')('signalJob, the low-level helper', () => {
  it('never signals a PID whose start time differs (reused), not even SIGKILL', async () => {
    const s = await ctx.registry.spawn('sleep 30');
    cleanupGroup(s.pid);
    const id = identity(s.pid!)!;
    const report = signalJob({ ...id, startTime: String(BigInt(id.startTime) - 1n) }, 'SIGKILL');
    expect(report).toMatchObject({ signalled: [], refusedReused: [s.pid], escalated: false });
    expect(isAlive(s.pid!)).toBe(true);
  });

  it('refuses the host itself, PID 1 and a bad PID', () => {
    const me = identity(process.pid)!;
    expect(signalJob(me, 'SIGCONT').refused.map((r) => r.reason)).toEqual(['host']);
    expect(signalJob({ ...me, pid: 1 }, 'SIGCONT').refused.map((r) => r.reason)).toEqual(['pid_le_1']);
    expect(() => signalJob({ ...me, pid: -1 }, 'SIGCONT')).toThrow(/PID/);
    expect(() => signalJob({ ...me, pid: 0 }, 'SIGCONT')).toThrow(/PID/);
  });

  it('a gone job is reported alreadyGone', async () => {
    const s = await ctx.registry.spawn('exit 0');
    await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    const id = { pid: s.pid!, startTime: '1', bootId: identity(process.pid)!.bootId };
    await until(() => probe([s.pid!])[0]?.alive !== true, 5000, 'gone');
    const report = signalJob(id, 'SIGINT');
    expect(report.signalled).toEqual([]);
    expect([...report.alreadyGone, ...report.refusedReused]).toContain(s.pid);
  });
});

function readChildren(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
