// Late output of a sandbox job (written after its end by a process it left running) is best
// effort, but one failed poll (a loaded far side) no longer ends the following: it is tried
// again, up to three polls in a row. The far side is a real local shell; the two failures
// are injected (its exec answers exit 255 twice, as an ssh that could not connect does).
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ExecutionEnvironment, localShell, ProcessRegistry } from '../dist/index.mjs';
import { tempDir, until } from './support.js';

describe('late output after failed polls', () => {
  it('two failed polls in a row after the end (injected) do not stop the reading of late output', async () => {
    const far = tempDir();
    const real = localShell({ tmpDir: far });
    let failures = 0;
    const flaky = Object.assign(Object.create(Object.getPrototypeOf(real)), real, {
      exec(script: string, opts?: { timeoutMs?: number }) {
        if (failures > 0) {
          failures--;
          return Promise.resolve({ stdout: Buffer.alloc(0), stderr: 'injected: connection refused', code: 255, timedOut: false });
        }
        return real.exec(script, opts);
      },
    }) as ExecutionEnvironment;
    const gate = join(tempDir(), 'gate');
    const r = await ProcessRegistry.open({ environments: { far: flaky }, sandbox: { pollIntervalMs: 50 } });
    try {
      const s = await r.spawn(`( while [ ! -e ${gate} ]; do sleep 0.05; done; echo late ) & echo early; exit 0`, { environment: 'far' });
      expect(await r.wait(s.id, { timeoutMs: 20_000 })).toMatchObject({ exitCode: 0, reason: 'exited' });
      failures = 2;
      await until(() => failures === 0, 20_000, 'the two failed polls');
      writeFileSync(gate, '');
      await until(async () => (await r.poll(s.id)).outputPreview.includes('late'), 20_000, 'the late output');
      expect((await r.poll(s.id)).outputPreview).toBe('early\nlate\n');
      expect(existsSync(gate)).toBe(true);
    } finally {
      await r.close();
    }
  }, 90_000);
});
