// The container environment against a real engine: podman's API service on a private
// socket (see podman.mjs), driven by the docker CLI (or podman's own client), with a busybox
// image built from a tarball. The far-side behaviour suite the SSH environment runs runs here
// too, plus what only a container does: being stopped or removed under a running job.
// In CI (CI=true) a missing engine fails; elsewhere the suite says it skipped and why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CommandEnvironment, dockerExec, ProcessRegistry } from '../dist/index.mjs';
import { farRun, farSideBehaviour } from './environments.behaviour.js';
import { missingForEngine, startPodman } from './podman.mjs';
import { until } from './support.js';

const inCi = process.env.CI === 'true' || process.env.CI === '1';
const missing = missingForEngine as string[];

if (missing.length > 0 && !inCi) {
  console.warn(`[procward] container environment tests SKIPPED: missing ${missing.join(', ')} (apt-get install podman runc busybox-static)`);
}

describe.runIf(inCi && missing.length > 0)('container engine in CI', () => {
  it('podman, runc and busybox-static are installed (CI=true: a missing engine is a failure)', () => {
    expect(missing).toEqual([]);
  });
});

describe.skipIf(missing.length > 0)('container environment against a live podman engine', () => {
  let engine: Awaited<ReturnType<typeof startPodman>>;
  let container: string;
  let env: CommandEnvironment;
  beforeAll(async () => {
    engine = await startPodman();
    container = await engine.container();
    env = dockerExec(container, { engine: engine.client.engine, host: engine.url });
  }, 120_000);
  afterAll(async () => {
    await engine?.stop();
  }, 60_000);

  farSideBehaviour(() => ({
    env,
    envSource: `M.dockerExec(${JSON.stringify(container)}, ${JSON.stringify({ engine: engine.client.engine, host: engine.url })})`,
  }));

  it('the engine is chosen by name: podman (its own client, --url) runs the job as docker does', async () => {
    const viaPodman = dockerExec(container, { engine: 'podman', host: engine.url });
    expect(viaPodman.argv.slice(0, 4)).toEqual(['podman', '--url', engine.url, 'exec']);
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 50 } });
    const s = await r.spawn('echo "in $(hostname)"; exit 5', { environment: viaPodman });
    const w = await r.wait(s.id, { timeoutMs: 20_000 });
    expect(w).toMatchObject({ exitCode: 5, reason: 'exited' });
    expect(w.outputPreview).toMatch(/^in \S+\n$/);
    await r.close();
  });

  it('a container stopped mid-job makes the session lost at once, saying the container is not running', async () => {
    const name = await engine.container();
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 50, lostAfterMs: 600_000 } });
    const s = await r.spawn('echo working; sleep 600', { environment: dockerExec(name, { engine: engine.client.engine, host: engine.url }) });
    await until(async () => (await r.poll(s.id)).outputPreview.includes('working'), 20_000, 'the job running');
    expect((await r.poll(s.id)).status).toBe('running');
    await engine.cli(['stop', '-t', '0', name]);
    const w = await r.wait(s.id, { timeoutMs: 60_000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'lost', exitCode: null });
    expect(w.outputPreview).toContain(`container ${name} is not running`);
    expect(r.diagnostics.join('\n')).toContain(name);
    await r.close();
  }, 90_000);

  it('a container removed mid-job makes the session lost at once, saying why; kill then says the container cannot be reached', async () => {
    const name = await engine.container();
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 50, lostAfterMs: 600_000 } });
    const gone = dockerExec(name, { engine: engine.client.engine, host: engine.url });
    const s = await r.spawn('echo working; sleep 600', { environment: gone });
    await engine.cli(['rm', '-f', name]);
    const w = await r.wait(s.id, { timeoutMs: 60_000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'lost' });
    // The poll may fail while the engine is still stopping it, before it is gone.
    expect(w.outputPreview).toMatch(new RegExp(`container ${name} (no longer exists|is not running)`));
    expect(await gone.goneReason?.()).toBe(`container ${name} no longer exists`);
    await expect(r.kill(s.id, { graceMs: 100 })).rejects.toMatchObject({ code: 'ENVIRONMENT_UNAVAILABLE' });
    await r.close();
  }, 90_000);

  it('a launch into a stopped container is failed_start with the engine’s message, never running', async () => {
    const name = await engine.container();
    await engine.cli(['stop', '-t', '0', name]);
    const r = await ProcessRegistry.open();
    const s = await r.spawn('echo never', { environment: dockerExec(name, { engine: engine.client.engine, host: engine.url }) });
    expect(s).toMatchObject({ status: 'exited', reason: 'failed_start' });
    expect((await r.readLog(s.id)).text).toMatch(/running|state/i);
    await r.close();
  }, 60_000);

  it('a job runs as the user asked for (exec -u) and its files are that user’s', async () => {
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 50 } });
    const s = await r.spawn('id -u', { environment: dockerExec(container, { engine: engine.client.engine, host: engine.url, user: '65534' }) });
    const w = await r.wait(s.id, { timeoutMs: 20_000 });
    expect(w).toMatchObject({ exitCode: 0, outputPreview: '65534\n' });
    expect(await farRun(env, 'stat -c %u /tmp/procward-sandbox-65534')).toBe('65534\n');
    await r.close();
  });
});
