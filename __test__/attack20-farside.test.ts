// Attack round 20, findings on the far side: every file in a sandbox session's far-side
// directory is the job's to write (it runs as the same user). A `job`, `pid` or `start` file
// naming another process must never get that process, nor its relatives, signalled: not the
// wrapper, not the far shell's ancestors (its parent here stands in for the host, which the
// local shell environment is the child of), nor their other children.
//
// The far shell of the scripts under attack runs below a decoy parent the test owns (a
// shell with a `sleep` child): the forged files name that parent, so what a hole would
// reach is the decoy `sleep`, never anything outside this test.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CommandEnvironment, type ExecutionEnvironment, localShell, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, cleanupPid, isAlive, tempDir, until } from './support.js';

/** Shell that writes `<pid> <start time>` of the far shell's parent (the decoy) into FILE. */
const forgeParent = (file: string) => `set -- $(sed 's/.*) //' /proc/$PPID/stat); printf '%s %s\\n' "$PPID" "\${20}" > '${file}'`;

/**
 * An environment that runs every script through the local shell, except those `pick`
 * returns a prefix for: those run below a decoy parent (its `sleep` child's PID is pushed
 * to `decoys`), after the prefix.
 */
function decoyEnv(far: string, pick: (script: string) => string | null): { env: ExecutionEnvironment; decoys: number[] } {
  const plain = localShell({ tmpDir: far });
  const marks = tempDir();
  const decoys: number[] = [];
  let n = 0;
  const env: ExecutionEnvironment = {
    description: plain.description,
    tmpDir: far,
    close: () => plain.close(),
    exec: async (script, opts) => {
      const prefix = pick(script);
      if (prefix === null) return plain.exec(script, opts);
      const mark = join(marks, String(n++));
      const under = new CommandEnvironment({ kind: 'local', tmpDir: far }, ['/bin/sh', '-c', `sleep 300 > /dev/null 2>&1 & echo $! > '${mark}'; /bin/sh -s; r=$?; exit $r`]);
      const res = await under.exec(`${prefix}\n${script}`, opts);
      const decoy = Number(readFileSync(mark, 'utf8'));
      cleanupPid(decoy);
      decoys.push(decoy);
      return res;
    },
  };
  return { env, decoys };
}

/** Field 22 of /proc/<pid>/stat (the start time), as the far side reads it. */
function startOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] as string;
}

/** Kills the session the wrapper leads (launched by the test; its files lie, so kill would not), then closes the registry. */
async function closeKilling(r: ProcessRegistry, wrapper: number): Promise<void> {
  if (wrapper > 1) {
    try {
      process.kill(-wrapper, 'SIGKILL');
    } catch {}
  }
  await r.close();
}

const ready = (r: ProcessRegistry, id: string) => until(async () => (await r.readLog(id)).text.includes('ready'), 30_000, 'the job to start');

describe('attack 20: forged far-side files never get a stranger signalled', () => {
  it('signal: a job file naming the far shell`s parent gets neither it nor its other children signalled (the root was skipped, its tree was not)', async () => {
    const far = tempDir();
    let jobFile = '';
    const { env, decoys } = decoyEnv(far, (script) => (script.includes('kill -s') && jobFile ? forgeParent(jobFile) : null));
    const r = await ProcessRegistry.open({ environments: { far: env }, sandbox: { pollIntervalMs: 50 } });
    try {
      const s = await r.spawn('echo ready; sleep 300', { environment: 'far' });
      await ready(r, s.id);
      jobFile = join(far, s.id, 'job');
      const real = readFileSync(jobFile, 'utf8');
      await expect(r.signal(s.id, 'SIGTERM')).rejects.toMatchObject({ code: expect.stringMatching(/^(ENOTSUP|SESSION_EXITED)$/) });
      expect(decoys).toHaveLength(1);
      expect(isAlive(decoys[0] as number)).toBe(true);
      // The real job file again: the same call does reach the job (the refusal above could have been a pass).
      jobFile = '';
      writeFileSync(join(far, s.id, 'job'), real);
      expect(await r.signal(s.id, 'SIGTERM')).toMatchObject({ pid: Number(real.split(' ')[0]) });
      expect(await r.wait(s.id, { timeoutMs: 30_000 })).toMatchObject({ reason: 'exited', signal: 'SIGTERM' });
    } finally {
      await r.close();
    }
  }, 90_000);

  it('signal: a job file naming the wrapper (its PID and real start time) is refused, and the wrapper lives on to record the end', async () => {
    const far = tempDir();
    const r = await ProcessRegistry.open({ environments: { far: localShell({ tmpDir: far }) }, sandbox: { pollIntervalMs: 50 } });
    try {
      const s = await r.spawn('echo ready; sleep 300', { environment: 'far' });
      await ready(r, s.id);
      const wrapper = s.pid as number;
      expect(wrapper).toBeGreaterThan(1);
      const jobFile = join(far, s.id, 'job');
      const real = readFileSync(jobFile, 'utf8');
      writeFileSync(jobFile, `${wrapper} ${startOf(wrapper)}\n`);
      await expect(r.signal(s.id, 'SIGTERM')).rejects.toMatchObject({ code: 'ENOTSUP' });
      expect(isAlive(wrapper)).toBe(true);
      writeFileSync(jobFile, real);
      expect(await r.signal(s.id, 'SIGUSR1')).toMatchObject({ pid: Number(real.split(' ')[0]) });
      // The wrapper recorded the job's end: not lost.
      expect(await r.wait(s.id, { timeoutMs: 30_000 })).toMatchObject({ reason: 'exited', signal: 'SIGUSR1' });
    } finally {
      await r.close();
    }
  }, 90_000);

  it('kill: pid and start files naming the far shell`s parent get neither it nor its other children signalled, and the kill says so', async () => {
    const far = tempDir();
    let dir = '';
    const forge = () => {
      const wrapperFiles = `set -- $(sed 's/.*) //' /proc/$PPID/stat); echo "$PPID" > '${dir}/pid'; echo "\${20}" > '${dir}/start'`;
      return wrapperFiles;
    };
    const { env, decoys } = decoyEnv(far, (script) => (script.includes('stake()') && dir ? forge() : null));
    const r = await ProcessRegistry.open({ environments: { far: env }, sandbox: { pollIntervalMs: 50 } });
    let wrapper = 0;
    try {
      const s = await r.spawn('echo ready; sleep 300', { environment: 'far' });
      await ready(r, s.id);
      wrapper = s.pid as number;
      dir = join(far, s.id);
      await expect(r.kill(s.id, { graceMs: 200 })).rejects.toMatchObject({ code: 'KILL_REFUSED' });
      expect(decoys).toHaveLength(1);
      expect(isAlive(decoys[0] as number)).toBe(true);
      // The job, whose files lie, still runs: it was not reported killed nor exited.
      expect(isAlive(wrapper)).toBe(true);
    } finally {
      await closeKilling(r, wrapper);
    }
  }, 90_000);

  it('signal and kill: pid, start and job files naming a stranger session of the same user (a leader and its child, true start times) reach neither', async () => {
    const far = tempDir();
    // Polled often until the job is ready; then the polls fail (as an unreachable far side's
    // would), so the poller cannot end the session as lost once its wrapper files lie.
    const plain = localShell({ tmpDir: far });
    let frozen = false;
    const env: ExecutionEnvironment = {
      description: plain.description,
      tmpDir: far,
      close: () => plain.close(),
      exec: (script, opts) =>
        frozen && !script.includes('kill -s') && !script.includes('stake()') ? Promise.resolve({ stdout: Buffer.alloc(0), stderr: 'frozen', code: 255, timedOut: false }) : plain.exec(script, opts),
    };
    const r = await ProcessRegistry.open({ environments: { far: env }, sandbox: { pollIntervalMs: 50, lostAfterMs: 600_000 } });
    // The stranger: a session of this test's own, a shell leading it and its sleep.
    const leader = spawn('sh', ['-c', 'sleep 300 & echo $!; wait'], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
    cleanupGroup(leader.pid);
    const child = Number(await new Promise<string>((res) => leader.stdout?.once('data', (d) => res(String(d).trim()))));
    const lead = leader.pid as number;
    let wrapper = 0;
    try {
      const s = await r.spawn('echo ready; sleep 300', { environment: 'far' });
      await ready(r, s.id);
      wrapper = s.pid as number;
      const dir = join(far, s.id);
      frozen = true;
      writeFileSync(join(dir, 'pid'), `${lead}\n`);
      writeFileSync(join(dir, 'start'), `${startOf(lead)}\n`);
      writeFileSync(join(dir, 'job'), `${child} ${startOf(child)}\n`);
      await expect(r.signal(s.id, 'SIGTERM')).rejects.toMatchObject({ code: 'ENOTSUP' });
      await expect(r.kill(s.id, { graceMs: 200 })).rejects.toMatchObject({ code: 'KILL_REFUSED' });
      await new Promise((res) => setTimeout(res, 300));
      expect(isAlive(lead)).toBe(true);
      expect(isAlive(child)).toBe(true);
    } finally {
      await closeKilling(r, wrapper);
    }
  }, 90_000);
});
