// What a job leaves behind: processes that outlive its leader are still the job's, found by
// its cgroup or by its session and group, never by name or parent alone (issue 16 items 3, 8).
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { descendants, identity, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, cleanupPid, isAlive, tempDir, until } from './support';

/** Live members of a cgroup outside the tree below `root` (and not `root`): what the job left. */
function cgroupEscapees(cgroup: string, root: number): number[] {
  const inTree = new Set(descendants(root).map((d) => d.pid));
  const members = readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  return members.filter((p) => p !== root && !inTree.has(p) && isAlive(p));
}

/** A live process the test started that no job knows: `sleep 60` in a session of its own. */
function stranger(): number {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  child.unref();
  cleanupPid(child.pid);
  return child.pid as number;
}

describe('kill cleans up the job’s own containment whatever became of its leader', () => {
  for (const durable of [true, false]) {
    it(`a recovered ${durable ? 'durable' : 'pipe-mode'} job whose leader PID now names a stranger: the stranger is never signalled, the daemon in the job's cgroup is killed`, async (tc) => {
      const state = tempDir();
      const r1 = await ProcessRegistry.open({ stateDir: state });
      const s = await r1.spawn(`(setsid sleep 311 &); echo forked; sleep 312`, { durable });
      cleanupGroup(s.pid);
      if (!s.cgroup) {
        await r1.close();
        tc.skip(); // this host may not create cgroups: containment falls back silently
        return;
      }
      let daemon = 0;
      await until(() => {
        daemon = cgroupEscapees(s.cgroup as string, s.pid as number)[0] ?? 0;
        return daemon !== 0;
      }, 5000, 'the daemon outside the tree');
      cleanupPid(daemon);
      await r1.close();
      // The record now names a live stranger's PID with a start time that is not its own.
      const other = stranger();
      const own = identity(other);
      expect(own).not.toBeNull();
      const file = join(state, 'checkpoint.json');
      const cp = JSON.parse(readFileSync(file, 'utf8'));
      const entry = cp.sessions.find((e: { id: string }) => e.id === s.id);
      entry.pid = other;
      entry.identity = { ...entry.identity, pid: other, startTime: String(BigInt(own!.startTime) - 1n) };
      entry.updatedAt = Date.now() + 60_000;
      writeFileSync(file, JSON.stringify(cp));

      const r2 = await ProcessRegistry.open({ stateDir: state });
      try {
        expect(await r2.poll(s.id)).toMatchObject({ status: 'exited', reason: 'lost' });
        const k = await r2.kill(s.id, { graceMs: 300 });
        expect(k.outcome).toBe('already_exited');
        expect(k.refusedReused).toEqual([other]);
        expect(k.signalled).toContain(daemon);
        expect(k.signalled).not.toContain(other);
        expect(k.survivors).toEqual([]);
        expect(isAlive(daemon)).toBe(false);
        expect(isAlive(other)).toBe(true);
      } finally {
        await r2.close();
      }
    });
  }
});
