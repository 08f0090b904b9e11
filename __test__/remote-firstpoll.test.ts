// Issue 19: a host that never followed a sandbox job reads the far side up to the end of its
// log when asked for output, and finds the job's end with it. Its first poll after the end
// said `running` (the summary was taken before that read) and only the next said `exited`.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localShell, ProcessRegistry } from '../dist/index.mjs';
import { tempDir, until } from './support.js';

describe('the first poll of a host that never followed a sandbox job', () => {
  it('says exited, with the exit code and the output, once the job has ended on the far side', async () => {
    const far = tempDir();
    const stateDir = tempDir();
    const environments = { far: localShell({ tmpDir: far }) };
    const a = await ProcessRegistry.open({ stateDir, environments });
    const s = await a.spawn('echo four; exit 5', { environment: 'far' });
    // The starting host goes before the end: nobody follows the job from here on.
    await a.close();
    await until(() => existsSync(join(far, s.id, 'exit')), 30_000, 'the far-side exit file');
    const b = await ProcessRegistry.open({ stateDir, environments });
    try {
      expect(await b.poll(s.id)).toMatchObject({ status: 'exited', exitCode: 5, outputPreview: 'four\n' });
    } finally {
      await b.close();
    }
  }, 90_000);
});
