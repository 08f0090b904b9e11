// list (and drainNotifications) refresh sandbox sessions at most 8 at a time (issue 19 item
// 3): a far side that never answers holds its own sessions' refreshes, not the whole list.
// The environment here answers nothing until the test lets it go (no process is left behind).
import { afterEach, describe, expect, it } from 'vitest';
import { type ExecutionEnvironment, type ExecResult, handleToolCall, localShell, ProcessRegistry } from '../dist/index.mjs';
import { tempDir } from './support.js';

/** An environment whose scripts block until `release()` (then they fail as a dead connection would); counts them. */
function hanging(tmpDir: string) {
  const waiting = new Set<() => void>();
  const env: ExecutionEnvironment & { calls: number; release(): void } = {
    description: { kind: 'local', tmpDir },
    tmpDir,
    calls: 0,
    exec: () => {
      env.calls++;
      return new Promise<ExecResult>((resolve) => {
        const done = () => resolve({ stdout: Buffer.alloc(0), stderr: 'connection closed', code: 255, timedOut: false });
        waiting.add(done);
      });
    },
    close: async () => {},
    release: () => {
      for (const done of waiting) done();
      waiting.clear();
    },
  };
  return env;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

describe('list with sessions in an environment that does not answer', () => {
  it('ten sessions: list, the tool list and drainNotifications complete, every session listed in its environment', async () => {
    const stateDir = tempDir();
    const far = tempDir();
    const first = await ProcessRegistry.open({ stateDir, environments: { box: localShell({ tmpDir: far }) } });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await first.spawn(`sleep 300 # job ${i}`, { environment: 'box' })).id);
    await first.close();
    // The jobs run on; whatever happens below, they are killed through a host that reaches them.
    cleanups.push(async () => {
      const last = await ProcessRegistry.open({ stateDir, environments: { box: localShell({ tmpDir: far }) } });
      await Promise.all(ids.map((id) => last.kill(id, { graceMs: 0 }).catch(() => undefined)));
      await last.close();
    });

    const box = hanging(far);
    const second = await ProcessRegistry.open({ stateDir, environments: { box }, sandbox: { lostAfterMs: 600_000 } });
    cleanups.unshift(async () => {
      box.release();
      await second.close();
    });
    const listed = await second.list();
    expect(listed.map((s) => s.id).sort()).toEqual([...ids].sort());
    for (const s of listed) expect(s).toMatchObject({ status: 'running', environment: 'box', pidScope: 'sandbox' });
    expect(new Set(listed.map((s) => s.command))).toEqual(new Set(ids.map((_, i) => `sleep 300 # job ${i}`)));
    const viaTool: any = await handleToolCall(second, 'process', { action: 'list' });
    expect(viaTool.sessions.map((s: { session_id: string }) => s.session_id).sort()).toEqual([...ids].sort());
    expect(await second.drainNotifications()).toEqual([]);
  }, 90_000);
});
