// Issue 19: a sandbox job's output from later CLI calls. Each CLI call is a fresh host: one
// starts a job in a named environment (a real sshd on 127.0.0.1, a live podman container),
// later ones, which never followed it, poll and page it and must read the far-side log up to
// its end. A log longer than maxOutputChars gives its tail and says what was dropped.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dockerExec, type ExecutionEnvironment, ProcessRegistry, SshEnvironment } from '../dist/index.mjs';
import { cliHost, cliJson, configFile } from './envfile.js';
import { missingForEngine, startPodman } from './podman.mjs';
import { haveSshd, testSshd, type TestSshd } from './sshd.mjs';
import { CLI, cleanupPid, until } from './support.js';

/** A far side under test: `path`, an environments file naming it `far`; `env`, the same environment for this process. */
interface Far {
  path: string;
  env: ExecutionEnvironment;
}

/** A temp dir for the whole describe block (support.ts removes tempDir()s after each test). */
const kept: string[] = [];
function keptDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'procward-hosts-test-'));
  kept.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of kept) rmSync(d, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
});

/** `seq 1 60000`'s output in bytes: 9 of 2, 90 of 3, 900 of 4, 9000 of 5 and 50001 of 6. */
const SEQ_BYTES = 9 * 2 + 90 * 3 + 900 * 4 + 9000 * 5 + 50_001 * 6;

/** `procward log -f ID` as a child process (a host that follows the job): its output so far, and its end. */
function followInCli(procward: ReturnType<typeof cliHost>, path: string, id: string) {
  const child = spawn(process.execPath, [CLI, 'log', '-f', id], { env: { ...process.env, PROCWARD_STATE_DIR: procward.stateDir, PROCWARD_ENVIRONMENTS: path }, stdio: ['ignore', 'pipe', 'pipe'] });
  cleanupPid(child.pid);
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += String(d);
  });
  child.stderr.on('data', (d) => {
    err += String(d);
  });
  const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { output: () => out, ended, errors: () => err };
}

function laterHostsRead(far: () => Far): void {
  it('poll and log in later calls show what a running job wrote, and an ended job’s output and status', async () => {
    const procward = cliHost(far().path);
    const id = (await procward('start', '-q', '--in', 'far', '--', 'echo one; echo two; sleep 300')).stdout.trim();
    expect(id).toMatch(/^proc_[0-9a-f]{12}$/);
    try {
      // Each poll is a host that never followed the job: it reads the far-side log itself.
      await until(async () => (await cliJson(procward('poll', '--json', id))).outputPreview === 'one\ntwo\n', 30_000, 'a later poll showing the output');
      expect(await cliJson(procward('poll', '--json', id))).toMatchObject({ status: 'running', environment: 'far', outputPreview: 'one\ntwo\n' });
      expect(await procward('log', id)).toMatchObject({ code: 0, stdout: 'one\ntwo\n' });
    } finally {
      expect((await procward('kill', id)).stdout).toContain(`${id}: killed`);
    }
    const done = (await procward('start', '-q', '--in', 'far', '--', 'echo three; exit 4')).stdout.trim();
    expect((await procward('wait', done)).code).toBe(4);
    expect(await cliJson(procward('poll', '--json', done))).toMatchObject({ status: 'exited', exitCode: 4, outputPreview: 'three\n' });
    expect(await procward('log', done)).toMatchObject({ code: 0, stdout: 'three\n' });
  }, 120_000);

  it('log -f in one call and kill in another: the follower records the kill with its signal, never lost', async () => {
    const procward = cliHost(far().path);
    const started = await procward('start', '-q', '--in', 'far', '--', "trap 'echo trapped; exit 0' TERM; echo armed; sleep 300 & wait");
    expect(started.code, started.stderr).toBe(0);
    const id = started.stdout.trim();
    const follower = followInCli(procward, far().path, id);
    await until(() => follower.output().includes('armed'), 30_000, 'log -f following the job').catch((e) => {
      throw new Error(`${e.message}; follower stderr: ${follower.errors()}`);
    });
    const killed = await procward('kill', id);
    expect(killed, JSON.stringify(killed)).toMatchObject({ code: 0 });
    expect(killed.stdout).toContain(`${id}: killed`);
    await follower.ended;
    // Both hosts record the end (the follower, whose lost used to overwrite the kill, after it).
    expect(await cliJson(procward('poll', '--json', id))).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGTERM', exitCode: null });
  }, 120_000);

  it('a log longer than maxOutputChars: a later host shows its tail and counts the bytes before it as dropped', async () => {
    const procward = cliHost(far().path);
    const id = (await procward('start', '-q', '--in', 'far', '--', 'seq 1 60000; exit 0')).stdout.trim();
    expect((await procward('wait', id)).code).toBe(0);
    // The CLI keeps the default 200 000 bytes: the last lines, and a note that not all was kept.
    const log = await procward('log', id);
    expect(log.stdout.endsWith('\n59999\n60000\n')).toBe(true);
    expect(log.stdout.startsWith('1\n')).toBe(false);
    expect(log.stderr).toContain('not all output was kept');
    // A library host of the same state directory with a 1000-byte cap.
    const r = await ProcessRegistry.open({ stateDir: procward.stateDir, environments: { far: far().env }, maxOutputChars: 1000 });
    try {
      const page = await r.readLog(id);
      expect(page.droppedChars).toBe(SEQ_BYTES - 1000);
      expect(page.text.endsWith('59999\n60000')).toBe(true);
      expect(page.text.length).toBeLessThanOrEqual(1000);
      expect((await r.poll(id)).outputPreview.endsWith('60000\n')).toBe(true);
    } finally {
      await r.close();
    }
  }, 120_000);
}

describe.skipIf(!haveSshd)('later CLI calls read a sandbox job on a real sshd on 127.0.0.1', () => {
  let sshd: TestSshd;
  let far: Far;
  beforeAll(async () => {
    sshd = await testSshd(keptDir());
    await sshd.start();
    const desc = { kind: 'ssh' as const, host: '127.0.0.1', port: sshd.port, user: sshd.user, identityFile: sshd.identityFile, options: sshd.options, tmpDir: keptDir() };
    far = { path: configFile({ environments: { far: desc } }, 0o600, keptDir()), env: new SshEnvironment(desc) };
  }, 60_000);
  afterAll(async () => {
    await (far?.env as SshEnvironment | undefined)?.close();
    await sshd?.stop();
  });

  laterHostsRead(() => far);
});

describe.skipIf(missingForEngine.length > 0)('later CLI calls read a sandbox job in a live podman container', () => {
  let engine: Awaited<ReturnType<typeof startPodman>>;
  let far: Far;
  beforeAll(async () => {
    engine = await startPodman();
    const container = await engine.container();
    const desc = { kind: 'docker' as const, container, engine: engine.client.engine, host: engine.url };
    far = { path: configFile({ environments: { far: desc } }, 0o600, keptDir()), env: dockerExec(container, desc) };
  }, 120_000);
  afterAll(async () => {
    await engine?.stop();
  }, 60_000);

  laterHostsRead(() => far);
});

if (!haveSshd) console.warn('[procward] later-host tests against sshd SKIPPED: no /usr/sbin/sshd');
if (missingForEngine.length > 0) console.warn(`[procward] later-host tests in a container SKIPPED: missing ${missingForEngine.join(', ')}`);
