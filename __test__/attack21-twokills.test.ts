// Attack round 21 (task J), holds: two CLI hosts kill the same sandbox session at once (the
// job ignores SIGTERM, so both escalate). Neither fails, the job is gone, and a third host
// polls it as killed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliHost, configFile } from './envfile.js';
import { cleanupGroup, isAlive, tempDir, until } from './support.js';

describe('attack 21: two hosts kill one sandbox session at once', () => {
  it('both answer, the job is gone, a later poll says killed', async () => {
    const far = tempDir();
    const host = cliHost(configFile({ environments: { box: { kind: 'local', tmpDir: far } } }));
    const started = await host('start', '-q', '--in', 'box', '--', "trap '' TERM; echo up; while :; do sleep 1; done");
    const id = started.stdout.trim();
    expect(id, started.stderr).toMatch(/^proc_[0-9a-f]{12}$/);
    cleanupGroup(Number(readFileSync(join(far, id, 'pid'), 'utf8')));
    await until(() => existsSync(join(far, id, 'job')), 30_000, 'the job file');
    const job = Number(readFileSync(join(far, id, 'job'), 'utf8').split(' ')[0]);
    // `up` comes after the trap: a SIGTERM sooner would end the job with nothing to escalate.
    await until(async () => (await host('log', id)).stdout.includes('up'), 30_000, 'the trap');
    const [a, b] = await Promise.all([host('kill', id), host('kill', id)]);
    expect([a.code, b.code], `${a.stderr}\n${b.stderr}`).toEqual([0, 0]);
    await until(() => !isAlive(job), 10_000, 'the job to be gone');
    const p = JSON.parse((await host('poll', id, '--json')).stdout);
    expect(p).toMatchObject({ status: 'exited', reason: 'killed' });
  }, 120_000);
});
