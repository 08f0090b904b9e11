// signal(id, name) on sandbox sessions (issue 19 item 3): the far side sends one validated
// JOB_SIGNALS name to the job's own tree, each process checked by its start time right
// before its signal, never to the wrapper that shares the job's process group (a group
// signal would end the wrapper, and with it the record of the job's end). Run against the
// local shell, a real sshd on 127.0.0.1 and a real podman container (BusyBox).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerExec, type ExecutionEnvironment, handleToolCall, localShell, ProcessRegistry, SshEnvironment } from '../dist/index.mjs';
import { connectInMemory } from './mcp-support.js';
import { missingForEngine, startPodman } from './podman.mjs';
import { haveSshd, testSshd, type TestSshd } from './sshd.mjs';
import { cli, isAlive, tempDir, until } from './support.js';

/** A job that says `ready` once its traps are set, then idles in short sleeps (so a trap runs soon). */
const TRAPPING = (sig: string, then: string) => `trap 'echo got-${sig}; ${then}' ${sig}; echo ready; while :; do sleep 0.2; done`;

async function ready(r: ProcessRegistry, id: string): Promise<void> {
  await until(async () => (await r.readLog(id)).text.includes('ready'), 30_000, 'the job to set its trap');
}

/** The signal cases every environment runs. `gnuEnv`: the far side restores SIGINT to the job (GNU env); BusyBox cannot. */
function signalBehaviour(far: () => { env: ExecutionEnvironment; gnuEnv: boolean }): void {
  const open = () => ProcessRegistry.open({ environments: { far: far().env }, sandbox: { pollIntervalMs: 50 } });

  it('SIGUSR1 unhandled ends the job by that signal, and the wrapper lives to record it (reason exited, signal SIGUSR1)', async () => {
    const r = await open();
    try {
      const s = await r.spawn('echo ready; sleep 300', { environment: 'far' });
      await ready(r, s.id);
      const sent = await r.signal(s.id, 'usr1');
      expect(sent).toMatchObject({ id: s.id, signal: 'SIGUSR1', processGroup: false });
      expect(sent.signalled?.[0]).toBe(sent.pid);
      // The wrapper (the session's pid) is never among those signalled.
      expect(sent.signalled).not.toContain(s.pid);
      const w = await r.wait(s.id, { timeoutMs: 30_000 });
      expect(w).toMatchObject({ status: 'exited', reason: 'exited', exitCode: null, signal: 'SIGUSR1' });
    } finally {
      await r.close();
    }
  }, 90_000);

  it('SIGUSR1 to a job trapping it runs the trap; the job runs on until killed', async () => {
    const r = await open();
    try {
      const s = await r.spawn(TRAPPING('USR1', ':'), { environment: 'far' });
      await ready(r, s.id);
      await r.signal(s.id, 'SIGUSR1');
      await until(async () => (await r.readLog(s.id)).text.includes('got-USR1'), 30_000, 'the trap to run');
      expect((await r.poll(s.id)).status).toBe('running');
      expect(await r.kill(s.id, { graceMs: 500 })).toMatchObject({ outcome: 'killed' });
    } finally {
      await r.close();
    }
  }, 90_000);

  it('SIGINT to a job trapping it (prints, exits 3) ends it with exit code 3 where the far side has GNU env; BusyBox jobs ignore SIGINT', async () => {
    const r = await open();
    try {
      const s = await r.spawn(TRAPPING('INT', 'exit 3'), { environment: 'far' });
      await ready(r, s.id);
      const sent = await r.signal(s.id, 'SIGINT');
      expect(sent.signalled?.[0]).toBe(sent.pid);
      if (far().gnuEnv) {
        const w = await r.wait(s.id, { timeoutMs: 30_000 });
        expect(w).toMatchObject({ status: 'exited', reason: 'exited', exitCode: 3, signal: null });
        expect(w.outputPreview).toContain('got-INT');
      } else {
        // The documented limit: an asynchronous job of BusyBox's sh starts with SIGINT
        // ignored and cannot trap it. A USR1 afterwards proves the job was still there.
        await r.signal(s.id, 'SIGUSR1');
        const w = await r.wait(s.id, { timeoutMs: 30_000 });
        expect(w).toMatchObject({ signal: 'SIGUSR1', reason: 'exited' });
        expect(w.outputPreview).not.toContain('got-INT');
      }
    } finally {
      await r.close();
    }
  }, 90_000);

  it('the tool sends it (process signal), snake_case, and a bad name is INVALID_ARGUMENT', async () => {
    const r = await open();
    try {
      const started: any = await handleToolCall(r, 'process_start', { command: 'echo ready; sleep 300', environment: 'far' });
      await ready(r, started.session_id);
      const bad: any = await handleToolCall(r, 'process', { action: 'signal', session_id: started.session_id, signal: "INT'; kill -9 -1; '" });
      expect(bad.error).toMatchObject({ code: 'INVALID_ARGUMENT' });
      const res: any = await handleToolCall(r, 'process', { action: 'signal', session_id: started.session_id, signal: 'SIGUSR2' });
      expect(res).toMatchObject({ session_id: started.session_id, signal: 'SIGUSR2', process_group: false });
      expect((await r.wait(started.session_id, { timeoutMs: 30_000 })).signal).toBe('SIGUSR2');
    } finally {
      await r.close();
    }
  }, 90_000);
}

describe('signal on sandbox sessions through the local shell', () => {
  signalBehaviour(() => ({ env: localShell({ tmpDir: tempDir() }), gnuEnv: true }));

  it('a bad name is refused before any round trip to the far side', async () => {
    const inner = localShell({ tmpDir: tempDir() });
    // Every script the far side runs (the poller's too): a signal script is the one with `kill -s`.
    const scripts: string[] = [];
    const recording: ExecutionEnvironment = {
      description: inner.description,
      tmpDir: inner.tmpDir,
      exec: (script, opts) => {
        scripts.push(script);
        return inner.exec(script, opts);
      },
      close: () => inner.close(),
    };
    const r = await ProcessRegistry.open({ environments: { far: recording } });
    try {
      const s = await r.spawn('echo ready; sleep 300', { environment: 'far' });
      await ready(r, s.id);
      for (const name of ['SIGSEGV', '9', 'INT; kill -9 -1', "INT' -1 '", '$(reboot)', 'SIGBOGUS']) {
        await expect(r.signal(s.id, name)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { allowed: expect.arrayContaining(['SIGINT']) } });
      }
      expect(scripts.filter((x) => x.includes('kill -s'))).toEqual([]);
      // A good name does reach it (so the check above could have failed).
      await r.signal(s.id, 'SIGCONT');
      expect(scripts.filter((x) => x.includes("kill -s 'CONT'")).length).toBe(1);
      await r.kill(s.id, { graceMs: 0 });
    } finally {
      await r.close();
    }
  }, 60_000);

  it('a job file naming a reused PID (another start time) gets nothing signalled; no job file yet is ENOTSUP', async () => {
    const far = tempDir();
    const r = await ProcessRegistry.open({ environments: { far: localShell({ tmpDir: far }) } });
    const decoy = spawn('sleep', ['300'], { stdio: 'ignore' });
    try {
      const s = await r.spawn('echo ready; sleep 300', { environment: 'far' });
      await ready(r, s.id);
      const jobFile = join(far, s.id, 'job');
      const real = readFileSync(jobFile, 'utf8');
      // The decoy is alive under that PID, but not since the tick the file names: never signalled.
      writeFileSync(jobFile, `${decoy.pid} 1\n`);
      await expect(r.signal(s.id, 'SIGKILL')).rejects.toMatchObject({ code: 'SESSION_EXITED' });
      expect(isAlive(decoy.pid!)).toBe(true);
      rmSync(jobFile);
      await expect(r.signal(s.id, 'SIGKILL')).rejects.toMatchObject({ code: 'ENOTSUP', message: expect.stringContaining('not recorded') });
      writeFileSync(jobFile, real);
      expect(await r.signal(s.id, 'SIGTERM')).toMatchObject({ signal: 'SIGTERM', pid: Number(real.split(' ')[0]) });
      expect(await r.wait(s.id, { timeoutMs: 30_000 })).toMatchObject({ reason: 'exited', signal: 'SIGTERM' });
    } finally {
      decoy.kill('SIGKILL');
      await r.close();
    }
  }, 60_000);

  it('MCP: process_control signal reaches a sandbox job (the real client checks the result against the output schema)', async () => {
    const r = await ProcessRegistry.open({ environments: { far: localShell({ tmpDir: tempDir() }) }, sandbox: { pollIntervalMs: 50 } });
    const c = await connectInMemory(r);
    try {
      const started = await c.call('process_start', { command: 'echo ready; sleep 300', environment: 'far' });
      const id = started.structured.session_id;
      await ready(r, id);
      const sent = await c.call('process_control', { action: 'signal', session_id: id, signal: 'SIGUSR1' });
      expect(sent.isError).toBe(false);
      expect(sent.structured).toMatchObject({ session_id: id, signal: 'SIGUSR1', process_group: false });
      const waited = await c.call('process_read', { action: 'wait', session_id: id, timeout_ms: 30_000 });
      expect(waited.structured).toMatchObject({ status: 'exited', signal: 'SIGUSR1', reason: 'exited' });
    } finally {
      await c.close();
      await r.close();
    }
  }, 60_000);

  it('an ended session is SESSION_EXITED and nothing is sent', async () => {
    const r = await ProcessRegistry.open({ environments: { far: localShell({ tmpDir: tempDir() }) } });
    try {
      const s = await r.spawn('exit 0', { environment: 'far' });
      await r.wait(s.id, { timeoutMs: 30_000 });
      await expect(r.signal(s.id, 'SIGINT')).rejects.toMatchObject({ code: 'SESSION_EXITED' });
    } finally {
      await r.close();
    }
  }, 60_000);

  it('from a later CLI call: procward signal ID SIGINT in another process ends the trapping job with exit code 3', async () => {
    const far = tempDir();
    const path = join(tempDir(), 'environments.json');
    writeFileSync(path, JSON.stringify({ environments: { box: { kind: 'local', tmpDir: far } } }), { mode: 0o600 });
    const env = { PROCWARD_STATE_DIR: tempDir(), PROCWARD_ENVIRONMENTS: path };
    const marker = join(tempDir(), 'ready');
    const started = await cli(['start', '-q', '--in', 'box', '--', `trap 'echo got-INT; exit 3' INT; echo ready > ${marker}; while :; do sleep 0.2; done`], env);
    const id = started.stdout.trim();
    expect(id).toMatch(/^proc_[0-9a-f]{12}$/);
    await until(() => existsSync(marker), 30_000, 'the job to set its trap');
    const sent = await cli(['signal', id, 'SIGINT'], env);
    expect(sent).toMatchObject({ code: 0 });
    // The job's shell and its sleep (when one runs at that moment), never the wrapper.
    expect(sent.stdout).toMatch(new RegExp(`^${id}: SIGINT sent to process \\d+( and 1 descendant)?\n$`));
    const waited = await cli(['wait', id], env);
    expect(waited.code).toBe(3);
    const bad = await cli(['signal', id, 'SIGSEGV'], env);
    expect(bad.code).toBe(2);
  }, 90_000);
});

describe.skipIf(!haveSshd)('signal on sandbox sessions over SSH (real sshd on 127.0.0.1)', () => {
  let sshd: TestSshd;
  let dir: string;
  let env: InstanceType<typeof SshEnvironment>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'procward-signal-ssh-'));
    sshd = await testSshd(dir);
    await sshd.start();
    env = new SshEnvironment({ kind: 'ssh', host: '127.0.0.1', port: sshd.port, user: sshd.user, identityFile: sshd.identityFile, options: sshd.options, tmpDir: join(dir, 'far') });
  }, 60_000);
  afterAll(async () => {
    await env?.close();
    await sshd?.stop();
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  });

  signalBehaviour(() => ({ env, gnuEnv: true }));
});

describe.skipIf(missingForEngine.length > 0)('signal on sandbox sessions in a live podman container (BusyBox)', () => {
  let engine: Awaited<ReturnType<typeof startPodman>>;
  let env: ExecutionEnvironment;
  beforeAll(async () => {
    engine = await startPodman();
    env = dockerExec(await engine.container(), { engine: engine.client.engine, host: engine.url });
  }, 120_000);
  afterAll(async () => {
    await engine?.stop();
  }, 60_000);

  signalBehaviour(() => ({ env, gnuEnv: false }));
});

if (missingForEngine.length > 0) console.warn(`[procward] container signal tests SKIPPED: missing ${missingForEngine.join(', ')}`);
