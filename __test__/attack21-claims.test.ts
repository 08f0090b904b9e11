// Attack round 21 (task J): the far-side kill claims (`kill`, `killed`) and the wrapper's
// `wstatus` are files the job itself can write (it runs as the same user, and finds its
// session directory through its own stdout). Each test here is a job that lies through them.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localShell, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, isAlive, tempDir, until } from './support.js';

const DIR = 'D=$(dirname "$(readlink /proc/$$/fd/1)")';

async function registry(far: string) {
  return ProcessRegistry.open({ environments: { far: localShell({ tmpDir: far }) }, sandbox: { pollIntervalMs: 50 } });
}

function jobPid(far: string, id: string): number {
  return Number(readFileSync(join(far, id, 'job'), 'utf8').split(' ')[0]);
}

describe('attack 21: kill claims and wstatus written by the job', () => {
  // Finding 1: a running job writes `killed` itself; the follower believes it and reports the
  // session killed (SIGKILL) while the job runs on.
  it('a job that writes its own `killed` file is not reported killed while it runs', async () => {
    const far = tempDir();
    const r = await registry(far);
    try {
      const s = await r.spawn(`${DIR}; echo SIGKILL > "$D/killed"; echo ready; exec sleep 300`, { environment: 'far' });
      cleanupGroup(s.pid);
      await until(() => existsSync(join(far, s.id, 'killed')), 30_000, 'the forged killed file');
      await until(() => existsSync(join(far, s.id, 'job')), 30_000, 'the job file');
      const job = jobPid(far, s.id);
      // Several polls' worth of time for the follower to read the forged claim.
      await until(async () => (await r.poll(s.id)).outputPreview.includes('ready'), 30_000, 'the output');
      await new Promise((res) => setTimeout(res, 1000));
      const p = await r.poll(s.id);
      expect(isAlive(job)).toBe(true);
      expect(p.status).toBe('running');
    } finally {
      await r.close();
    }
  }, 90_000);

  // Finding 2: a `kill` file with a far-future deadline (18 digits pass `num`): the follower
  // holds off every end while it is "pending", so a job that then exits by itself is never
  // reported ended: `wait` waits forever on a job that is gone.
  it('a forged far-future kill deadline does not hold off the end of a job that exited', async () => {
    const far = tempDir();
    const r = await registry(far);
    try {
      const s = await r.spawn(`${DIR}; echo 999999999999999999 > "$D/kill"; echo done; exit 7`, { environment: 'far' });
      cleanupGroup(s.pid);
      await until(() => existsSync(join(far, s.id, 'exit')), 30_000, 'the exit file');
      await until(async () => (await r.poll(s.id)).status === 'exited', 15_000, 'the end to be reported (stays running while the forged claim is pending)');
      expect((await r.poll(s.id)).exitCode).toBe(7);
    } finally {
      await r.close();
    }
  }, 90_000);

  // Finding 3: the job plants a FIFO as `wstatus`. Once the job is a zombie the watcher's
  // `echo "$X" > "$D/wstatus"` blocks opening the FIFO (no reader), while the wrapper waits
  // for the watcher on fd 9: the exit file is never written, the wrapper never ends, and the
  // session looks running forever (farshell.ts WRAPPER, the watcher's write).
  it('a FIFO planted as wstatus does not keep the session running after the job exited', async () => {
    const far = tempDir();
    const r = await registry(far);
    try {
      const s = await r.spawn(`${DIR}; mkfifo "$D/wstatus"; echo done; exit 3`, { environment: 'far' });
      cleanupGroup(s.pid);
      await until(async () => (await r.poll(s.id)).outputPreview.includes('done'), 30_000, 'the output');
      await until(async () => (await r.poll(s.id)).status === 'exited', 15_000, 'the end (the wrapper hangs on the FIFO)');
      expect((await r.poll(s.id)).exitCode).toBe(3);
    } finally {
      await r.close();
    }
  }, 90_000);
});
