// Remote and sandboxed environments (issue: SSH, docker exec, kubectl exec): sandbox
// sessions against the local shell and a real sshd on 127.0.0.1.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandEnvironment, dockerExec, kubectlExec, localShell, ProcessRegistry, SshEnvironment } from '../dist/index.mjs';
import { farSideBehaviour, QUOTED_OUTPUT, QUOTING } from './environments.behaviour.js';
import { haveSshd, testSshd, type TestSshd } from './sshd.mjs';
import { crashHost, isAlive, startHost, tempDir, until } from './support.js';

/** A temp dir that lives for the whole describe block (tempDir() is removed after each test). */
function tempDirKeep(): string {
  const dir = mkdtempSync(join(tmpdir(), 'procward-ssh-test-'));
  keep.push(dir);
  return dir;
}
const keep: string[] = [];
afterAll(() => {
  for (const d of keep) rmSync(d, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
});

describe('sandbox sessions through the local shell', () => {
  it('quotes, $, backticks, newlines and heredocs reach the far shell byte for byte', async () => {
    const r = await ProcessRegistry.open();
    const env = localShell({ tmpDir: tempDir() });
    const s = await r.spawn(QUOTING, { environment: env });
    expect(s).toMatchObject({ status: 'running', pidScope: 'sandbox' });
    const w = await r.wait(s.id, { timeoutMs: 10_000 });
    expect(w).toMatchObject({ status: 'exited', exitCode: 3, reason: 'exited' });
    expect(w.outputPreview).toBe(QUOTED_OUTPUT);
    await r.close();
  });

  it('a launch that fails is failed_start with the wrapper status and output, never running', async () => {
    const r = await ProcessRegistry.open();
    const s = await r.spawn('true', { environment: localShell({ tmpDir: '/proc/procward-cannot-create' }) });
    expect(s).toMatchObject({ status: 'exited', reason: 'failed_start', pid: null });
    expect(s.exitCode).not.toBe(0);
    expect((await r.readLog(s.id)).text).toMatch(/mkdir|No such file|cannot/i);
    expect((await r.list()).filter((x) => x.status === 'running')).toEqual([]);
    await r.close();
  });

  it('kill runs the tree kill on the far side', async () => {
    const r = await ProcessRegistry.open();
    const s = await r.spawn('sleep 300 & sleep 301; wait', { environment: localShell({ tmpDir: tempDir() }) });
    await new Promise((res) => setTimeout(res, 300));
    expect(isAlive(s.pid!)).toBe(true);
    const k = await r.kill(s.id, { graceMs: 500 });
    expect(k.outcome).toBe('killed');
    expect((await r.poll(s.id)).reason).toBe('killed');
    expect(isAlive(s.pid!)).toBe(false);
    await r.close();
  });

  it('a log that shrank on the far side is read again from its start, without a crash', async () => {
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 50 } });
    const remote = tempDir();
    const s = await r.spawn('echo first-line-of-output; sleep 1; echo after', { environment: localShell({ tmpDir: remote }) });
    await until(async () => (await r.poll(s.id)).outputPreview.includes('first'), 5000, 'first line');
    const { truncateSync } = await import('node:fs');
    truncateSync(join(remote, s.id, 'output.log'), 0);
    const w = await r.wait(s.id, { timeoutMs: 10_000 });
    expect(w.exitCode).toBe(0);
    expect(w.outputPreview).toContain('after');
    await r.close();
  });

  it('a restarted host re-attaches by re-reading the remote files, and never adopts the sandbox PID', async () => {
    const state = tempDir();
    const remote = tempDir();
    const { line: s, host } = await startHost(
      state,
      `const s = await r.spawn('echo a; sleep 1; echo b; exit 4', { environment: 'box' }); console.log(JSON.stringify(s));`,
      `{ environments: { box: require(${JSON.stringify(`${process.cwd()}/dist/index.js`)}).localShell({ tmpDir: ${JSON.stringify(remote)} }) } }`,
    );
    await crashHost(host);
    const next = await ProcessRegistry.open({ stateDir: state, environments: { box: localShell({ tmpDir: remote }) } });
    expect(await next.poll(s.id)).toMatchObject({ pidScope: 'sandbox', status: 'running' });
    const w = await next.wait(s.id, { timeoutMs: 10_000 });
    expect(w).toMatchObject({ exitCode: 4, reason: 'exited', outputPreview: 'a\nb\n' });
    await next.close();
  });
});

describe('the shared far-side behaviour through the local shell', () => {
  const tmpDir = tempDirKeep();
  farSideBehaviour(() => ({ env: localShell({ tmpDir }), envSource: `M.localShell({ tmpDir: ${JSON.stringify(tmpDir)} })` }));
});

describe('sandbox sessions: failure modes', () => {
  it('a job that takes its wrapper down (no exit file) ends lost and says so; kill then says already_exited', async () => {
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 50 } });
    const s = await r.spawn('echo before; kill -KILL 0', { environment: localShell({ tmpDir: tempDir() }) });
    const w = await r.wait(s.id, { timeoutMs: 10_000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'lost' });
    expect(w.outputPreview).toMatch(/before[\s\S]*ended on the far side without an exit status/);
    expect((await r.kill(s.id)).outcome).toBe('already_exited');
    await r.close();
  });

  it('a job killed from outside is never signalled again by kill (the wrapper check fails)', async () => {
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 5000 } });
    const s = await r.spawn('sleep 300', { environment: localShell({ tmpDir: tempDir() }) });
    await new Promise((res) => setTimeout(res, 300));
    // A null PID would make this kill(0): the test's own process group.
    expect(s.pid).toBeGreaterThan(1);
    process.kill(-(s.pid as number), 'SIGKILL');
    await until(() => !isAlive(s.pid as number), 3000, 'death');
    const k = await r.kill(s.id, { graceMs: 200 });
    expect(k).toMatchObject({ outcome: 'already_exited', signalled: [] });
    await r.close();
  });

  it('the session is listed while its launch is in flight, and env, cwd and the host secrets are handled', async () => {
    process.env.PROCWARD_TEST_SECRET_TOKEN = 'hunter2-plain-value';
    try {
      const r = await ProcessRegistry.open();
      const slow = new CommandEnvironment({ kind: 'local', tmpDir: tempDir() }, ['sh', '-c', 'sleep 1; exec sh -s']);
      const pending = r.spawn('echo "[$FOO] [${PROCWARD_TEST_SECRET_TOKEN:-}]"; pwd', { environment: slow, env: { FOO: 'bar' }, cwd: '/usr', taskId: 't1' });
      await until(async () => (await r.list()).length === 1, 2000, 'listed during launch');
      expect(await r.hasActiveProcesses('t1')).toBe(true);
      const s = await pending;
      const w = await r.wait(s.id, { timeoutMs: 10_000 });
      expect(w.outputPreview).toBe('[bar] []\n/usr\n');
      await r.close();
    } finally {
      delete process.env.PROCWARD_TEST_SECRET_TOKEN;
    }
  });

  it('kill after the job ended on its own says already_exited and keeps its exit code', async () => {
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 5000 } });
    const s = await r.spawn('echo hi; exit 3', { environment: localShell({ tmpDir: tempDir() }) });
    await new Promise((res) => setTimeout(res, 300));
    const k = await r.kill(s.id);
    expect(k.outcome).toBe('already_exited');
    expect(await r.poll(s.id)).toMatchObject({ reason: 'exited', exitCode: 3 });
    await r.close();
  });
});

describe('command construction (engines run in container.test.ts; no cluster runs here)', () => {
  it('docker exec and kubectl exec run `sh -s` in the container, with the script on stdin', () => {
    expect(dockerExec('web-1').argv).toEqual(['docker', 'exec', '-i', 'web-1', 'sh', '-s']);
    expect(kubectlExec('api-0', { container: 'app', namespace: 'prod', context: 'k3d' }).argv).toEqual([
      'kubectl', '--context', 'k3d', 'exec', '-i', 'api-0', '-c', 'app', '-n', 'prod', '--', 'sh', '-s',
    ]);
    expect(kubectlExec('api-0').description).toEqual({ kind: 'kubectl', pod: 'api-0' });
  });

  it('the engine is chosen by name: docker takes --host, podman and a podman binary take --url, another binary docker’s syntax', () => {
    expect(dockerExec('web-1', { host: 'tcp://10.0.0.5:2376', user: 'app' }).argv).toEqual(['docker', '--host', 'tcp://10.0.0.5:2376', 'exec', '-i', '-u', 'app', 'web-1', 'sh', '-s']);
    expect(dockerExec('web-1', { engine: 'podman', host: 'unix:///run/podman.sock' }).argv.slice(0, 3)).toEqual(['podman', '--url', 'unix:///run/podman.sock']);
    expect(dockerExec('web-1', { engine: '/opt/bin/podman-remote', host: 'unix:///s' }).argv.slice(0, 3)).toEqual(['/opt/bin/podman-remote', '--url', 'unix:///s']);
    expect(dockerExec('web-1', { engine: '/usr/local/bin/nerdctl', host: 'unix:///s' }).argv.slice(0, 3)).toEqual(['/usr/local/bin/nerdctl', '--host', 'unix:///s']);
    expect(dockerExec('web-1', { engine: 'podman' }).description).toEqual({ kind: 'docker', container: 'web-1', engine: 'podman' });
  });

  it('kubectl (a stand-in script on PATH, since no cluster runs here): a pod that ended or was deleted is gone for good, a running one is not', async () => {
    const bin = tempDirKeep();
    // The stand-in answers `kubectl get pod <pod> ... -o jsonpath={.status.phase}` from the pod's name, and logs its argv.
    writeFileSync(
      join(bin, 'kubectl'),
      `#!/bin/sh\necho "$*" >> "${bin}/argv"\ncase "$*" in *" done-0 "*) echo Succeeded;; *" crashed-0 "*) echo Failed;; *" gone-0 "*) echo 'Error from server (NotFound): pods "gone-0" not found' >&2; exit 1;; *) echo Running;; esac\n`,
      { mode: 0o755 },
    );
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      expect(await kubectlExec('done-0', { namespace: 'prod' }).goneReason?.()).toBe('pod done-0 has ended (Succeeded)');
      expect(await kubectlExec('crashed-0').goneReason?.()).toBe('pod crashed-0 has ended (Failed)');
      expect(await kubectlExec('gone-0').goneReason?.()).toBe('pod gone-0 no longer exists');
      expect(await kubectlExec('api-0', { context: 'k3d' }).goneReason?.()).toBeNull();
      expect(readFileSync(join(bin, 'argv'), 'utf8').split('\n')).toContain('--context k3d get pod api-0 -o jsonpath={.status.phase}');
      expect(readFileSync(join(bin, 'argv'), 'utf8')).toContain('get pod done-0 -n prod -o jsonpath={.status.phase}');
    } finally {
      process.env.PATH = path;
    }
  });
});

describe.skipIf(!haveSshd)('SSH environment against a real sshd on 127.0.0.1', () => {
  let sshd: TestSshd;
  let env: InstanceType<typeof SshEnvironment>;
  beforeAll(async () => {
    sshd = await testSshd(tempDirKeep());
    await sshd.start();
    env = new SshEnvironment({ kind: 'ssh', host: '127.0.0.1', port: sshd.port, user: sshd.user, identityFile: sshd.identityFile, options: sshd.options, tmpDir: tempDirKeep() });
  }, 60_000);
  afterAll(async () => {
    await env?.close();
    await sshd?.stop();
  });

  farSideBehaviour(() => ({
    env,
    envSource: `new M.SshEnvironment(${JSON.stringify(env.description)})`,
  }));

  it('runs a job with exact output and exit code; the checkpoint holds no key material', async () => {
    const state = tempDir();
    const r = await ProcessRegistry.open({ stateDir: state, environments: { far: env } });
    const s = await r.spawn(QUOTING, { environment: 'far' });
    const w = await r.wait(s.id, { timeoutMs: 15_000 });
    expect(w).toMatchObject({ exitCode: 3, outputPreview: QUOTED_OUTPUT });
    await r.close();
    const checkpoint = readFileSync(`${state}/checkpoint.json`, 'utf8');
    // Only the environment's name: no host, port, user, key path or ssh option.
    expect(checkpoint).toMatch(/"environment": ?"far"/);
    expect(checkpoint).not.toContain(sshd.identityFile);
    expect(checkpoint).not.toContain('"kind"');
    expect(checkpoint).not.toContain('PRIVATE KEY');
    expect(checkpoint).not.toContain(readFileSync(sshd.identityFile, 'utf8').split('\n')[1]);
  });

  it('survives sshd going away mid-run: the poller retries and nothing is lost', async () => {
    const r = await ProcessRegistry.open();
    const s = await r.spawn('echo one; sleep 2; echo two; exit 0', { environment: env });
    await until(async () => (await r.poll(s.id)).outputPreview.includes('one'), 10_000, 'first line');
    await sshd.stop();
    await new Promise((res) => setTimeout(res, 2500));
    await sshd.start();
    const w = await r.wait(s.id, { timeoutMs: 20_000 });
    expect(w).toMatchObject({ status: 'exited', exitCode: 0, outputPreview: 'one\ntwo\n' });
    await r.close();
  }, 40_000);

  it('an environment that stays unreachable makes the session lost after the deadline, and says so', async () => {
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 50, lostAfterMs: 1500 } });
    const s = await r.spawn('sleep 30', { environment: env });
    await sshd.stop();
    try {
      const w = await r.wait(s.id, { timeoutMs: 20_000 });
      expect(w).toMatchObject({ status: 'exited', reason: 'lost', exitCode: null });
      expect(w.outputPreview).toMatch(/session lost: environment unreachable/);
      expect(r.diagnostics.join('\n')).toMatch(/unreachable/);
    } finally {
      if (s.pid) process.kill(-s.pid, 'SIGKILL');
      await sshd.start();
      await r.close();
    }
  }, 40_000);

  it('kill while the far side is unreachable is an error and the session stays running', async () => {
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 50, lostAfterMs: 60_000 } });
    const s = await r.spawn('sleep 30', { environment: env });
    await sshd.stop();
    try {
      await expect(r.kill(s.id, { graceMs: 200 })).rejects.toMatchObject({ code: 'ENVIRONMENT_UNAVAILABLE' });
      expect((await r.poll(s.id)).status).toBe('running');
    } finally {
      await sshd.start();
      await r.kill(s.id, { graceMs: 200 });
      await r.close();
    }
  }, 40_000);

  it('kill over SSH stops the far-side process group', async () => {
    const r = await ProcessRegistry.open();
    const s = await r.spawn('sleep 300', { environment: env });
    await new Promise((res) => setTimeout(res, 300));
    expect(isAlive(s.pid!)).toBe(true);
    expect((await r.kill(s.id, { graceMs: 500 })).outcome).toBe('killed');
    expect(isAlive(s.pid!)).toBe(false);
    await r.close();
  });
});
