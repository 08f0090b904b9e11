// Attack round 21 (task J), holds: a job that makes its far-side log a sparse 10 GB file. A
// later CLI host (it never followed the job) reads up to the log's end: bounded to the last
// maxOutputChars, the rest counted as skipped; it neither hangs nor reads the 10 GB.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliHost, configFile } from './envfile.js';
import { cleanupGroup, tempDir, until } from './support.js';

describe('attack 21: a sparse 10 GB far-side log read by a host that never followed it', () => {
  it('poll from a later CLI host returns the tail only, promptly', async () => {
    const far = tempDir();
    const host = cliHost(configFile({ environments: { box: { kind: 'local', tmpDir: far } } }));
    const job = 'D=$(dirname "$(readlink /proc/$$/fd/1)"); truncate -s 10G "$D/output.log"; printf "\\nTAILMARK\\n" >> "$D/output.log"; exec sleep 300';
    const started = await host('start', '-q', '--in', 'box', '--', job);
    const id = started.stdout.trim();
    expect(id, started.stderr).toMatch(/^proc_[0-9a-f]{12}$/);
    cleanupGroup(Number(readFileSync(join(far, id, 'pid'), 'utf8')));
    await until(() => existsSync(join(far, id, 'output.log')) && statSync(join(far, id, 'output.log')).size > 10 * 2 ** 30, 30_000, 'the sparse log');
    const polled = await host('poll', id, '--json');
    expect(polled.code, polled.stderr).toBe(0);
    const p = JSON.parse(polled.stdout);
    expect(p.status).toBe('running');
    expect(JSON.stringify(p)).toContain('TAILMARK');
    expect(polled.stdout.length).toBeLessThan(2_000_000);
    await host('kill', id);
  }, 120_000);
});
