// What a job leaves behind: processes that outlive its leader are still the job's, found by
// its cgroup or by the session's mark, never by number, name or parent alone (issue 16 items
// 3, 8; issue 25).
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { identity, ProcessRegistry, probe, type SessionSummary } from '../dist/index.mjs';
import { cleanupGroup, cleanupPid, isAlive, perTestRegistry, tempDir, until } from './support';

/**
 * Live members of a job's cgroup that left the job's process group (`setsid`): a daemon no
 * group signal reaches. (It may still be below `root` in the tree: a durable job's
 * supervisor adopts orphans as a child subreaper.)
 */
function cgroupEscapees(cgroup: string, root: number): number[] {
  const members = readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  return probe(members)
    .filter((p) => p.alive && p.pid !== root && p.pgid !== root)
    .map((p) => p.pid);
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
      }, 5000, 'the daemon outside the job’s group');
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

const TASK = 'task-leftovers';

/** A job that starts `server` in the background, prints its PID and exits 0 half a second later. */
const leaving = (server: string) => `${server} & echo server=$!; sleep .5; exit 0`;

/** Spawns `command` for TASK, waits for its end, and returns the session and the server's PID. */
async function endedWithServer(registry: ProcessRegistry, command: string, opts: Record<string, unknown> = {}): Promise<{ s: SessionSummary; server: number }> {
  const s = await registry.spawn(command, { taskId: TASK, ...opts });
  cleanupGroup(s.pid);
  const w = await registry.wait(s.id, { timeoutMs: 10_000 });
  expect(w).toMatchObject({ status: 'exited', exitCode: 0, reason: 'exited' });
  const server = Number(/server=(\d+)/.exec(w.outputPreview)?.[1]);
  cleanupPid(server);
  expect(isAlive(server)).toBe(true);
  return { s, server };
}

describe('the live leftovers of ended sessions count for liveness and bulk cleanup', () => {
  const ctx = perTestRegistry();

  it('`server & sleep .5; exit 0`: poll and list say so, hasActiveProcesses is true, and killAll finds and kills it', async () => {
    const { s, server } = await endedWithServer(ctx.registry, leaving('sleep 60'));
    expect(await ctx.registry.poll(s.id)).toMatchObject({ status: 'exited', leftovers: 1 });
    expect((await ctx.registry.list({ taskId: TASK })).find((x) => x.id === s.id)).toMatchObject({ status: 'exited', leftovers: 1 });
    expect(await ctx.registry.hasActiveProcesses(TASK)).toBe(true);
    expect(await ctx.registry.snapshotRunningIds(TASK)).toEqual([s.id]);
    const all = await ctx.registry.killAll({ taskId: TASK, graceMs: 500 });
    expect(all).toEqual([{ id: s.id, result: expect.objectContaining({ outcome: 'already_exited', signalled: expect.arrayContaining([server]) }) }]);
    expect(isAlive(server)).toBe(false);
    expect(await ctx.registry.poll(s.id)).not.toHaveProperty('leftovers');
    expect(await ctx.registry.hasActiveProcesses(TASK)).toBe(false);
    expect(await ctx.registry.killAll({ taskId: TASK })).toEqual([]);
  });

  it('a Node server listening on a port is killed by killStartedSince, and a baseline taken after its job ended spares it', async () => {
    const baseline = await ctx.registry.snapshotRunningIds(TASK);
    const listener = `"${process.execPath}" -e "require('net').createServer().listen(0, '127.0.0.1')"`;
    const { s, server } = await endedWithServer(ctx.registry, leaving(listener));
    // Taken after the job ended: its leftover is part of that baseline, not started since.
    const later = await ctx.registry.snapshotRunningIds(TASK);
    expect(later).toEqual([s.id]);
    expect(await ctx.registry.killStartedSince(TASK, later)).toEqual([]);
    expect(isAlive(server)).toBe(true);
    const killed = await ctx.registry.killStartedSince(TASK, baseline, { graceMs: 500 });
    expect(killed).toEqual([{ id: s.id, result: expect.objectContaining({ outcome: 'already_exited', signalled: expect.arrayContaining([server]) }) }]);
    expect(isAlive(server)).toBe(false);
  });

  it('is tracked until it is gone: a leftover that exits stops counting', async () => {
    const { s, server } = await endedWithServer(ctx.registry, leaving('sleep 60'));
    expect(await ctx.registry.hasActiveProcesses(TASK)).toBe(true);
    process.kill(server, 'SIGKILL');
    await until(() => !isAlive(server), 5000, 'the server to die');
    // Without another call, the periodic look notices it (list shows what it last saw).
    await until(async () => !('leftovers' in ((await ctx.registry.list({ taskId: TASK }))[0] ?? {})), 10_000, 'the leftover to be gone from list');
    expect(await ctx.registry.hasActiveProcesses(TASK)).toBe(false);
    expect(await ctx.registry.poll(s.id)).not.toHaveProperty('leftovers');
  });

  it('a setsid daemon counts only through the job’s cgroup; a stranger of the same name never does', async (tc) => {
    const other = stranger();
    const { s, server } = await endedWithServer(ctx.registry, leaving('setsid sleep 60'));
    if (!s.cgroup) tc.skip(); // it left the job's session and group: only a cgroup proves it the job's
    expect(await ctx.registry.poll(s.id)).toMatchObject({ leftovers: 1 });
    const [k] = await ctx.registry.killAll({ taskId: TASK, graceMs: 500 });
    expect(k).toMatchObject({ id: s.id, result: { signalled: expect.arrayContaining([server]) } });
    expect(k && 'result' in k && k.result.signalled).not.toContain(other);
    expect(isAlive(server)).toBe(false);
    expect(isAlive(other)).toBe(true);
  });

  it('without containment, a setsid daemon is the job’s by the session’s mark: the scoped calls count it and killAll ends it', async () => {
    const r = await ProcessRegistry.open({ containment: false });
    try {
      const { server } = await endedWithServer(r, leaving('setsid sleep 60'));
      expect(await r.hasActiveProcesses(TASK)).toBe(true);
      const [k] = await r.killAll({ taskId: TASK, graceMs: 300 });
      expect(k).toMatchObject({ result: { outcome: 'already_exited', signalled: [server] } });
      expect(isAlive(server)).toBe(false);
    } finally {
      await r.close();
    }
  });

  it('without containment, a setsid daemon that replaced its environment cannot be proved the job’s and is left alone', async () => {
    const r = await ProcessRegistry.open({ containment: false });
    try {
      const { s, server } = await endedWithServer(r, leaving('env -i setsid sleep 60'));
      expect(await r.poll(s.id)).not.toHaveProperty('leftovers');
      expect(await r.hasActiveProcesses(TASK)).toBe(false);
      expect(await r.killAll({ taskId: TASK })).toEqual([]);
      expect(isAlive(server)).toBe(true);
    } finally {
      await r.close();
    }
  });
});

describe('leftovers of durable and recovered sessions', () => {
  it('a durable job’s leftover (its supervisor stays on for it) is counted, also by the next host, and killed', async () => {
    const state = tempDir();
    const r1 = await ProcessRegistry.open({ stateDir: state });
    const { s, server } = await endedWithServer(r1, leaving('sleep 60'), { durable: true });
    expect(await r1.poll(s.id)).toMatchObject({ status: 'exited', leftovers: 1 });
    await r1.close();
    const r2 = await ProcessRegistry.open({ stateDir: state });
    try {
      expect((await r2.list()).find((x) => x.id === s.id)).toMatchObject({ status: 'exited', leftovers: 1 });
      expect(await r2.hasActiveProcesses(TASK)).toBe(true);
      const [k] = await r2.killAll({ taskId: TASK, graceMs: 500 });
      expect(k).toMatchObject({ id: s.id, result: { outcome: 'already_exited', signalled: expect.arrayContaining([server]) } });
      expect(isAlive(server)).toBe(false);
      expect(await r2.hasActiveProcesses(TASK)).toBe(false);
    } finally {
      await r2.close();
    }
  });
});
