// Issue 18 item 3, DESIGN section 3: a durable job has two identities. `pid` is the job's own
// process (what a signal must reach, as for an in-memory job), `supervisorPid` the
// procward-supervise process that runs it. The supervisor is never reported as a survivor
// of the job, both survive a host restart, and a job identity read from the state directory
// (a checkpoint or supervisor.json, both untrusted) is believed only when it is the
// supervisor's job: a stranger's PID is never reported, nor signalled.
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { identity, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, cleanupPid, crashHost, isAlive, startHost, tempDir, until } from './support.js';

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

/** Whether `pid` has a handler for signal number `sig` (SigCgt in /proc/<pid>/status). */
function catches(pid: number, sig: number): boolean {
  try {
    const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return mask !== undefined && ((BigInt(`0x${mask}`) >> BigInt(sig - 1)) & 1n) === 1n;
  } catch {
    return false;
  }
}

function checkpointEntry(stateDir: string, id: string, edit: (entry: Record<string, unknown>) => void): void {
  const path = join(stateDir, 'checkpoint.json');
  const cp = JSON.parse(readFileSync(path, 'utf8'));
  const entry = cp.sessions.find((e: { id: string }) => e.id === id);
  edit(entry);
  // Newer than anything the closed host wrote, so the edited entry wins the merge.
  entry.updatedAt = Date.now() + 60_000;
  writeFileSync(path, JSON.stringify(cp));
}

/** A process that is nobody's job: the test's own `sleep`, in a group of its own. */
function stranger(): number {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  child.unref();
  cleanupPid(child.pid);
  return child.pid as number;
}

describe('the PID a durable session reports is its job’s', () => {
  it('pid is the job’s shell for durable and in-memory jobs; supervisorPid is procward-supervise', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir });
    try {
      // Two commands, so the shell stays (a lone command is exec'd in its place).
      const durable = await r.spawn('sleep 30; exit 0', { durable: true });
      const local = await r.spawn('sleep 30; exit 0', { durable: false });
      cleanupGroup(durable.pid);
      cleanupGroup(local.pid);
      for (const s of [durable, local]) {
        // The PID is named as soon as the job's process exists; its exec of the shell may
        // still be under way (an empty or the parent's command line meanwhile).
        await until(() => cmdline(s.pid as number).includes('-c'), 20_000, `the shell's exec in ${s.pid}`);
        const args = cmdline(s.pid as number);
        expect(args.some((a) => a.includes('procward-supervise'))).toBe(false);
        expect(args).toContain('-c');
        expect(args.at(-1)).toBe('sleep 30; exit 0');
      }
      expect(durable.supervisorPid).toBeGreaterThan(1);
      expect(durable.supervisorPid).not.toBe(durable.pid);
      expect(cmdline(durable.supervisorPid as number)[0]).toMatch(/procward-supervise$/);
      expect(local.supervisorPid).toBeUndefined();
      // poll and list say the same.
      expect(await r.poll(durable.id)).toMatchObject({ pid: durable.pid, supervisorPid: durable.supervisorPid });
      expect((await r.list()).find((s) => s.id === durable.id)).toMatchObject({ pid: durable.pid, supervisorPid: durable.supervisorPid });
    } finally {
      await r.close();
    }
  });

  it('kill -USR1 <pid>, sent by the test, reaches a durable job that traps USR1', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir });
    try {
      const s = await r.spawn(`trap 'echo got USR1' USR1; while :; do sleep 0.05; done`, { durable: true });
      cleanupGroup(s.pid);
      const pid = s.pid as number;
      await until(() => catches(pid, 10), 10_000, 'the USR1 trap');
      process.kill(pid, 'SIGUSR1');
      await until(async () => (await r.readLog(s.id)).lines.includes('got USR1'), 10_000, 'the trap to print');
      expect((await r.poll(s.id)).status).toBe('running');
      const k = await r.kill(s.id, { graceMs: 500 });
      expect(k.outcome).toBe('killed');
      expect(k.signalled).toContain(pid);
    } finally {
      await r.close();
    }
  });

  it('the kill report of a durable job never lists its supervisor as a survivor', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir });
    try {
      // The job ignores SIGTERM (and so does its sleep), so the kill escalates to SIGKILL.
      const s = await r.spawn(`trap '' TERM; echo ready; sleep 30`, { durable: true });
      cleanupGroup(s.pid);
      await until(async () => (await r.readLog(s.id)).lines.includes('ready'), 10_000, 'the TERM trap');
      const k = await r.kill(s.id, { graceMs: 200 });
      expect(k.outcome).toBe('killed');
      expect(k.escalated).toBe(true);
      expect(k.survivors).not.toContain(s.supervisorPid);
      expect(k.survivorIdentities.map((i) => i.pid)).not.toContain(s.supervisorPid);
      expect(k.survivors).toEqual([]);
      await until(() => !isAlive(s.pid as number) && !isAlive(s.supervisorPid as number), 10_000, 'job and supervisor gone');
    } finally {
      await r.close();
    }
  });

  it('a host that recovers after its predecessor crashed reports both identities', async () => {
    const stateDir = tempDir();
    const { line, host } = await startHost(stateDir, `const s = await r.spawn('sleep 30', { durable: true }); console.log(JSON.stringify(s));`);
    cleanupGroup(line.pid);
    expect(line.pid).not.toBe(line.supervisorPid);
    await crashHost(host);
    const r = await ProcessRegistry.open({ stateDir });
    try {
      expect(await r.poll(line.id)).toMatchObject({ status: 'running', detached: true, pid: line.pid, supervisorPid: line.supervisorPid });
      const k = await r.kill(line.id, { graceMs: 500 });
      expect(k.outcome).toBe('killed');
      expect(k.signalled).toContain(line.pid);
      expect(await r.poll(line.id)).toMatchObject({ status: 'exited', reason: 'killed', pid: line.pid, supervisorPid: line.supervisorPid });
    } finally {
      await r.close();
    }
  });
});

describe('a durable job whose supervisor was killed alone', () => {
  // The job writes nothing, so it does not die of SIGPIPE: it runs on, orphaned.
  const QUIET = 'while :; do sleep 0.1; done';

  it('runs on, followed by its own PID, and kill ends it', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn(QUIET, { durable: true });
      cleanupGroup(s.pid);
      process.kill(s.supervisorPid as number, 'SIGKILL');
      await until(async () => (await r.poll(s.id)).detached, 10_000, 'the supervisor’s end seen');
      expect(isAlive(s.pid as number)).toBe(true);
      expect(await r.poll(s.id)).toMatchObject({ status: 'running', pid: s.pid });
      const k = await r.kill(s.id, { graceMs: 500 });
      expect(k).toMatchObject({ outcome: 'killed', survivors: [] });
      expect(k.signalled).toContain(s.pid);
      expect(await r.poll(s.id)).toMatchObject({ status: 'exited', reason: 'killed' });
      await until(() => !isAlive(s.pid as number), 5000, 'the job gone');
    } finally {
      await r.close();
    }
  });

  it('a host that recovers it after that sees it running, and ends it lost once it is gone by itself', async () => {
    const stateDir = tempDir();
    const { line, host } = await startHost(stateDir, `const s = await r.spawn(${JSON.stringify(QUIET)}, { durable: true }); console.log(JSON.stringify(s));`);
    cleanupGroup(line.pid);
    await crashHost(host);
    process.kill(line.supervisorPid, 'SIGKILL');
    await until(() => !isAlive(line.supervisorPid), 5000, 'the supervisor gone');
    const r = await ProcessRegistry.open({ stateDir });
    try {
      expect(await r.poll(line.id)).toMatchObject({ status: 'running', pid: line.pid, supervisorPid: line.supervisorPid });
      process.kill(line.pid, 'SIGKILL');
      const w = await r.wait(line.id, { timeoutMs: 10_000 });
      expect(w).toMatchObject({ status: 'exited', reason: 'lost', exitCode: null, signal: null });
    } finally {
      await r.close();
    }
  });
});

describe('an old or edited record of a durable job', () => {
  it('an entry written before the job identity was recorded reports the job the supervisor names', async () => {
    const stateDir = tempDir();
    const r1 = await ProcessRegistry.open({ stateDir });
    const s = await r1.spawn('sleep 30', { durable: true });
    cleanupGroup(s.pid);
    await r1.close();
    checkpointEntry(stateDir, s.id, (e) => delete e.jobIdentity);
    const r2 = await ProcessRegistry.open({ stateDir });
    try {
      expect(await r2.poll(s.id)).toMatchObject({ status: 'running', pid: s.pid, supervisorPid: s.supervisorPid });
    } finally {
      await r2.close();
    }
  });

  it('with no job named anywhere (a supervisor of an earlier version), pid is null, supervisorPid set, and kill still ends the job', async () => {
    const stateDir = tempDir();
    const r1 = await ProcessRegistry.open({ stateDir });
    const s = await r1.spawn('sleep 30', { durable: true });
    cleanupGroup(s.pid);
    await r1.close();
    checkpointEntry(stateDir, s.id, (e) => delete e.jobIdentity);
    // supervisor.json as earlier supervisors wrote it: their own identity alone.
    const supFile = join(stateDir, 'sessions', s.id, 'supervisor.json');
    const { job: _job, ...own } = JSON.parse(readFileSync(supFile, 'utf8'));
    rmSync(supFile);
    writeFileSync(supFile, `${JSON.stringify(own)}\n`, { mode: 0o600 });
    const r2 = await ProcessRegistry.open({ stateDir });
    try {
      expect(await r2.poll(s.id)).toMatchObject({ status: 'running', pid: null, supervisorPid: s.supervisorPid });
      const k = await r2.kill(s.id, { graceMs: 500 });
      expect(k.outcome).toBe('killed');
      expect(k.signalled).toContain(s.pid);
      await until(() => !isAlive(s.pid as number), 10_000, 'the job gone');
    } finally {
      await r2.close();
    }
  });

  it('a checkpoint naming a stranger as the job is refused: the stranger is never reported nor signalled', async () => {
    const stateDir = tempDir();
    const other = stranger();
    const r1 = await ProcessRegistry.open({ stateDir });
    const s = await r1.spawn('sleep 30', { durable: true });
    cleanupGroup(s.pid);
    await r1.close();
    const id = identity(other);
    expect(id).not.toBeNull();
    checkpointEntry(stateDir, s.id, (e) => {
      e.jobIdentity = id;
    });
    const r2 = await ProcessRegistry.open({ stateDir });
    try {
      const p = await r2.poll(s.id);
      expect(p.pid).not.toBe(other);
      // supervisor.json still names the real job, which passes the check.
      expect(p.pid).toBe(s.pid);
      expect(r2.diagnostics.some((d) => d.includes(`PID ${other}`) && d.includes('which it is not'))).toBe(true);
      const k = await r2.kill(s.id, { graceMs: 500 });
      expect(k.signalled).not.toContain(other);
      expect(isAlive(other)).toBe(true);
    } finally {
      await r2.close();
    }
  });

  it('a supervisor.json naming a stranger as the job (a job can write its session directory) is refused too', async () => {
    const stateDir = tempDir();
    const other = stranger();
    const r1 = await ProcessRegistry.open({ stateDir });
    const s = await r1.spawn('sleep 30', { durable: true });
    cleanupGroup(s.pid);
    await r1.close();
    checkpointEntry(stateDir, s.id, (e) => delete e.jobIdentity);
    const supFile = join(stateDir, 'sessions', s.id, 'supervisor.json');
    const recorded = JSON.parse(readFileSync(supFile, 'utf8'));
    rmSync(supFile);
    writeFileSync(supFile, `${JSON.stringify({ ...recorded, job: identity(other) })}\n`, { mode: 0o600 });
    const r2 = await ProcessRegistry.open({ stateDir });
    try {
      expect(await r2.poll(s.id)).toMatchObject({ status: 'running', pid: null, supervisorPid: s.supervisorPid });
      const k = await r2.kill(s.id, { graceMs: 500 });
      expect(k.outcome).toBe('killed');
      expect(k.signalled).not.toContain(other);
      expect(isAlive(other)).toBe(true);
    } finally {
      await r2.close();
    }
  });
});
