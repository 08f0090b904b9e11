// Attack round 20, a finding: the far-side exit file is the job's to write. One holding a
// 30-digit number was taken as exit code 1e+29: `procward wait` crashed (ERR_OUT_OF_RANGE
// from process.exit) and the next host kept the checkpoint entry read-only (its exitCode
// failed validation), so no host could act on the session again. A shell status is 0 to
// 255: anything else is an end whose status is not known.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localShell, ProcessRegistry } from '../dist/index.mjs';
import { cliHost, configFile } from './envfile.js';
import { cleanupGroup, isAlive, tempDir, until } from './support.js';

describe('attack 20: a far-side exit file with a number no shell status can be', () => {
  it('is an end with no exit code; a later CLI host waits, polls and acts on it without a crash or a read-only entry', async () => {
    const far = tempDir();
    const host = cliHost(configFile({ environments: { box: { kind: 'local', tmpDir: far } } }));
    // The job finds its directory through its own stdout (the far-side log) and writes the exit file itself.
    const job = 'D=$(dirname "$(readlink /proc/$$/fd/1)"); echo 999999999999999999999999999999 > "$D/exit"; echo ready; sleep 300';
    const started = await host('start', '-q', '--in', 'box', '--', job);
    const id = started.stdout.trim();
    expect(id, started.stderr).toMatch(/^proc_[0-9a-f]{12}$/);
    await until(() => existsSync(join(far, id, 'exit')), 30_000, 'the forged exit file');
    // The wrapper leads the job's session; after the test it goes (the session looks ended, so kill will not).
    cleanupGroup(Number(readFileSync(join(far, id, 'pid'), 'utf8')));
    const waited = await host('wait', id);
    expect(waited.stderr).not.toContain('ERR_OUT_OF_RANGE');
    const polled = await host('poll', id, '--json');
    expect(polled.code, polled.stderr).toBe(0);
    const p = JSON.parse(polled.stdout);
    expect(p).toMatchObject({ status: 'exited', exitCode: null });
    expect(p.readOnly).toBeUndefined();
    expect(polled.stderr).not.toContain('read-only');
    // The job itself runs on (its file lied; the session looks ended): kill is answered, not refused.
    const killed = await host('kill', id);
    expect(killed.stderr).not.toContain('SESSION_READ_ONLY');
  }, 90_000);

  // A job that writes `exit` itself looks ended while it runs: kill of the ended sandbox
  // session still runs the far-side kill, which takes what an ended job left running.
  it('a job that wrote its own exit file while it runs is still stopped by kill', async () => {
    const far = tempDir();
    const r = await ProcessRegistry.open({ environments: { far: localShell({ tmpDir: far }) }, sandbox: { pollIntervalMs: 50 } });
    try {
      const s = await r.spawn('D=$(dirname "$(readlink /proc/$$/fd/1)"); echo 0 > "$D/exit"; echo ready; exec sleep 300', { environment: 'far' });
      cleanupGroup(s.pid);
      await until(async () => (await r.poll(s.id)).status === 'exited', 30_000, 'the forged end');
      const job = Number(readFileSync(join(far, s.id, 'job'), 'utf8').split(' ')[0]);
      expect(isAlive(job)).toBe(true);
      await r.kill(s.id, { graceMs: 200 });
      await until(() => !isAlive(job), 5000, 'the job to be killed');
    } finally {
      await r.close();
    }
  }, 90_000);
});
