// DESIGN sections 3 and 5 (issue 16 item 4): a stopped job says so, still counts as
// running, and a kill resumes it (SIGCONT right after SIGTERM) so its TERM trap runs.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { descendants, ProcessRegistry, probe } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, tempDir, until } from './support.js';

const ctx = perTestRegistry();
const start = ctx.start;

const stateOf = (pid: number) => probe([pid])[0]?.state;

/** Waits until the session's poll says `stopped` is `want`. */
async function untilStopped(registry: ProcessRegistry, id: string, want: boolean): Promise<void> {
  await until(async () => (await registry.poll(id)).stopped === want, 10_000, `stopped: ${want}`);
}

/** A shell that cleans up on SIGTERM, then stops itself. */
const TRAPS_THEN_STOPS = `trap 'echo cleaned; exit 0' TERM; echo ready; kill -STOP $$; while :; do sleep 0.1; done`;

describe('a stopped job', () => {
  it('is running, stopped and active, and says so in poll and list until SIGCONT resumes it', async () => {
    const s = await start('sleep 30', { taskId: 'stop-task' });
    expect((await ctx.registry.poll(s.id)).stopped).toBe(false);
    process.kill(s.pid as number, 'SIGSTOP');
    await untilStopped(ctx.registry, s.id, true);
    const polled = await ctx.registry.poll(s.id);
    expect(polled.status).toBe('running');
    const listed = (await ctx.registry.list()).find((x) => x.id === s.id);
    expect(listed?.stopped).toBe(true);
    expect(await ctx.registry.hasActiveProcesses('stop-task')).toBe(true);
    process.kill(s.pid as number, 'SIGCONT');
    await untilStopped(ctx.registry, s.id, false);
  });

  it('runs its TERM trap when killed: SIGCONT follows SIGTERM, no SIGKILL', async () => {
    const s = await start(TRAPS_THEN_STOPS);
    await until(() => stateOf(s.pid as number) === 'T', 10_000, 'the job stopped itself');
    expect((await ctx.registry.poll(s.id)).stopped).toBe(true);
    const k = await ctx.registry.kill(s.id, { graceMs: 30_000 });
    expect(k.escalated).toBe(false);
    expect(k.killSignal).toBe('SIGTERM');
    // Its trap's own exit 0 ended it (issue 28, kind 4): no signal, its exit code.
    expect([k.signal, k.exitCode]).toEqual([null, 0]);
    expect(k.outcome).toBe('killed');
    const w = await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    expect(w.outputPreview).toContain('cleaned');
    expect(w.stopped).toBeUndefined();
  });

  it('a stopped grandchild runs its TERM trap too, while the job itself is not stopped', async () => {
    const dir = tempDir();
    const mark = join(dir, 'gc');
    const s = await start(`sh -c 'trap "echo gc-cleaned > ${mark}; exit 0" TERM; kill -STOP $$; sleep 30' & wait`);
    let grandchild = 0;
    await until(
      () => {
        grandchild = descendants(s.pid as number).find((p) => p.state === 'T')?.pid ?? 0;
        return grandchild > 0;
      },
      10_000,
      'the grandchild stopped',
    );
    // The job's own process (the shell waiting for it) is what `stopped` reports.
    expect((await ctx.registry.poll(s.id)).stopped).toBe(false);
    const k = await ctx.registry.kill(s.id, { graceMs: 30_000 });
    expect(k.escalated).toBe(false);
    expect(k.signalled).toContain(grandchild);
    await until(() => existsSync(mark) && readFileSync(mark, 'utf8') === 'gc-cleaned\n', 10_000, 'the trap wrote its mark');
  });

  it('a PTY job stopped by Ctrl-Z is stopped, and its TERM trap runs on kill', async () => {
    // The job's process group is orphaned (its leader leads the session), so the kernel
    // drops the default stop action of the terminal's SIGTSTP; programs that handle it (as
    // vim and less do) stop themselves with SIGSTOP, as this trap does.
    const s = await start(`trap 'echo cleaned; exit 0' TERM; trap 'kill -STOP $$' TSTP; echo ready; while :; do sleep 0.1; done`, { pty: { cols: 80, rows: 24 } });
    await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('ready'), 10_000, 'ready');
    await ctx.registry.write(s.id, '\x1a');
    await untilStopped(ctx.registry, s.id, true);
    const k = await ctx.registry.kill(s.id, { graceMs: 30_000 });
    expect(k.escalated).toBe(false);
    const w = await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    expect(w.outputPreview).toContain('cleaned');
  });
});

describe('a stopped durable job', () => {
  /** Runs `body` with a durable job of `command` in a registry of its own. */
  async function durableJob(command: string, body: (registry: ProcessRegistry, id: string, supervisor: number) => Promise<void>): Promise<void> {
    const registry = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await registry.spawn(command, { durable: true });
      cleanupGroup(s.pid);
      await body(registry, s.id, s.supervisorPid as number);
    } finally {
      await registry.close();
    }
  }

  it('is the job stopped, not its supervisor, and its TERM trap runs on kill', () =>
    durableJob(TRAPS_THEN_STOPS, async (registry, id, supervisor) => {
      await untilStopped(registry, id, true);
      // Its supervisor runs on.
      expect(stateOf(supervisor)).not.toBe('T');
      const k = await registry.kill(id, { graceMs: 30_000 });
      expect(k.escalated).toBe(false);
      const w = await registry.wait(id, { timeoutMs: 10_000 });
      expect(w.outputPreview).toContain('cleaned');
    }));

  it('a stopped supervisor is not a stopped job', () =>
    durableJob('echo ready; sleep 30', async (registry, id, supervisor) => {
      await untilStopped(registry, id, false);
      process.kill(supervisor, 'SIGSTOP');
      await until(() => stateOf(supervisor) === 'T', 10_000, 'the supervisor stopped');
      expect((await registry.poll(id)).stopped).toBe(false);
      process.kill(supervisor, 'SIGCONT');
    }));
});
