// Entries no host can follow end as `lost`, with a diagnostic saying why (issue 16 item 9):
// well-formed field by field, but leading to nothing to watch or signal.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { identity, type KillResult, ProcessRegistry } from '../dist/index.mjs';
import { cleanupPid, deadHostEntry, isAlive, tempDir, until } from './support';

const TASK = 'task-lost';

/** A running entry of a dead host, with `fields` over it. */
function running(id: string, fields: Record<string, unknown>): Record<string, unknown> {
  return deadHostEntry(id, { status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null, taskId: TASK, ...fields });
}

function stateWith(entries: Record<string, unknown>[]): string {
  const state = tempDir();
  writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: entries }), { mode: 0o600 });
  return state;
}

/** A live `sleep 60` in a session of its own that no job knows. */
function stranger(): { pid: number; exit: Promise<unknown> } {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  cleanupPid(child.pid);
  return { pid: child.pid as number, exit: new Promise((r) => child.once('exit', r)) };
}

/** Opens the state directory and checks the promise of item 9 for `id`: lost, said why, inactive, and a kill that finds it ended. */
async function expectLost(state: string, id: string, why: RegExp): Promise<{ r: ProcessRegistry; k: KillResult }> {
  const r = await ProcessRegistry.open({ stateDir: state });
  expect(await r.poll(id)).toMatchObject({ status: 'exited', reason: 'lost', exitCode: null });
  expect(r.diagnostics.filter((d) => d.startsWith(`${id}: ended as lost:`))).toEqual([expect.stringMatching(why)]);
  expect(await r.hasActiveProcesses(TASK)).toBe(false);
  const k = await r.kill(id, { graceMs: 100 });
  expect(k).toMatchObject({ outcome: 'already_exited', signalled: [], survivors: [] });
  expect(await r.poll(id)).toMatchObject({ status: 'exited', reason: 'lost' });
  expect(await r.killAll({ taskId: TASK })).toEqual([]);
  return { r, k };
}

describe('an entry no host can follow ends as lost, with a diagnostic', () => {
  it('a sandbox entry without an environment (with a far-side PID, or none)', async () => {
    const a = 'proc_00000000a901';
    const b = 'proc_00000000a902';
    const state = stateWith([running(a, { pidScope: 'sandbox', pid: 4242 }), running(b, { pidScope: 'sandbox' })]);
    const { r } = await expectLost(state, a, /environment that was not named/);
    expect((await r.list()).map((s) => [s.id, s.status])).toEqual([
      [a, 'exited'],
      [b, 'exited'],
    ]);
    await r.close();
    // The end is written: the next host finds it ended and says nothing more.
    const again = await ProcessRegistry.open({ stateDir: state });
    expect(await again.poll(b)).toMatchObject({ status: 'exited', reason: 'lost' });
    expect(again.diagnostics.some((d) => d.includes('ended as lost'))).toBe(false);
    await again.close();
  });

  it('a host entry naming PID 1 with its true identity (it never ends, and is never signalled)', async () => {
    const init = identity(1);
    expect(init).not.toBeNull();
    const id = 'proc_00000000a903';
    const { r, k } = await expectLost(stateWith([running(id, { pid: 1, identity: init })]), id, /names PID 1, which is never a job/);
    // The kill still goes through the guard, which says why it signalled nothing.
    expect(k.refused).toEqual([{ pid: 1, reason: 'pid_le_1' }]);
    expect(isAlive(1)).toBe(true);
    await r.close();
  });

  it('a host entry whose pid and identity name different processes: neither is signalled', async () => {
    const other = stranger();
    const id = 'proc_00000000a904';
    const { r } = await expectLost(stateWith([running(id, { pid: 999_999, identity: identity(other.pid) })]), id, /names PID 999999 but the identity of PID \d+/);
    expect(isAlive(other.pid)).toBe(true);
    await r.close();
  });

  it('a pipe-mode host entry without an identity', async () => {
    const id = 'proc_00000000a905';
    const { r } = await expectLost(stateWith([running(id, { pid: 4243 })]), id, /no process identity/);
    await r.close();
  });

  it('is left to the live host that owns it, and ended once that host is gone', async () => {
    const owner = stranger();
    const id = 'proc_00000000a906';
    const state = stateWith([running(id, { pidScope: 'sandbox', pid: 4244, writer: identity(owner.pid) })]);
    const r = await ProcessRegistry.open({ stateDir: state });
    expect(await r.poll(id)).toMatchObject({ status: 'running' });
    expect(await r.hasActiveProcesses(TASK)).toBe(true);
    process.kill(owner.pid, 'SIGKILL');
    await owner.exit;
    await until(async () => (await r.poll(id)).status === 'exited', 5000, 'the entry to end once its owner is gone');
    expect(await r.poll(id)).toMatchObject({ reason: 'lost' });
    expect(r.diagnostics).toContainEqual(expect.stringMatching(new RegExp(`^${id}: ended as lost: .*not named`)));
    expect(await r.hasActiveProcesses(TASK)).toBe(false);
    await r.close();
  });

  it('a sandbox entry in a named environment this host has not configured stays running (a host that has may follow it)', async () => {
    const id = 'proc_00000000a907';
    const r = await ProcessRegistry.open({ stateDir: stateWith([running(id, { pidScope: 'sandbox', pid: 4245, environment: 'elsewhere' })]) });
    expect(await r.poll(id)).toMatchObject({ status: 'running' });
    expect(r.diagnostics.some((d) => d.includes('ended as lost'))).toBe(false);
    await expect(r.kill(id, { graceMs: 100 })).rejects.toMatchObject({ code: 'ENVIRONMENT_UNAVAILABLE' });
    await r.close();
  });
});
