// DESIGN section 6 on every platform: the checkpoint keeps sessions across hosts, and a
// durable job started by a host that has exited is recovered by the next one, with its whole
// output and its exact exit code.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { echo, gatedExit, lines } from './commands.mjs';
import { assertOwnPid, cleanup, cleanupSession, inOtherHost, isAlive, pkg, tempDir, until } from './support.mjs';

describe('checkpoint and recovery', () => {
  after(cleanup);

  it('a session ended in one registry is listed with its exit code by the next one on the same state directory', async () => {
    const stateDir = join(tempDir(), 'state');
    const first = await pkg.ProcessRegistry.open({ stateDir });
    const s = await first.spawn(echo('checkpointed'), { durable: false, taskId: 'platform-task' });
    cleanupSession(s);
    assert.equal((await first.wait(s.id, { timeoutMs: 30_000 })).exitCode, 0);
    await first.close();

    const checkpoint = JSON.parse(readFileSync(join(stateDir, 'checkpoint.json'), 'utf8'));
    const entry = checkpoint.sessions.find((e) => e.id === s.id);
    assert.ok(entry, `checkpoint lists ${s.id}`);
    assert.equal(entry.status, 'exited');
    assert.equal(entry.exitCode, 0);

    const second = await pkg.ProcessRegistry.open({ stateDir });
    try {
      const [listed] = await second.list({ taskId: 'platform-task' });
      assert.equal(listed?.id, s.id);
      assert.equal(listed.status, 'exited');
      assert.equal(listed.exitCode, 0);
      assert.equal(listed.command, echo('checkpointed'));
    } finally {
      await second.close();
    }
  });

  it('a durable job started by a host that has exited is recovered by the next host: running, then its output and exit code', async () => {
    const work = tempDir();
    const stateDir = join(work, 'state');
    const started = await inOtherHost(
      stateDir,
      `const s = await r.spawn(${JSON.stringify(gatedExit(5))}, { durable: true, cwd: ${JSON.stringify(work)} });
console.log(JSON.stringify(s));`,
    );
    cleanupSession(started);
    assert.equal(started.durable, true);
    assert.equal(typeof started.supervisorPid, 'number');
    // The starting host has exited; the job has not (it waits for the gate).
    assertOwnPid(started);

    const registry = await pkg.ProcessRegistry.open({ stateDir });
    try {
      const [recovered] = await registry.list();
      assert.equal(recovered?.id, started.id);
      assert.equal(recovered.status, 'running');
      assert.equal(recovered.detached, true);
      assert.equal(recovered.pid, started.pid);

      writeFileSync(join(work, 'gate'), '');
      const w = await registry.wait(started.id, { timeoutMs: 60_000 });
      assert.equal(w.timedOut, false);
      assert.equal(w.exitCode, 5);
      assert.equal(w.reason, 'exited');
      await until(() => !isAlive(started.pid), 20_000, 'the job gone (or a zombie)');
      assert.deepEqual(lines((await registry.readLog(started.id)).text), ['first', 'second']);
      assert.ok(existsSync(join(stateDir, 'sessions', started.id, 'exit.json')), 'the supervisor wrote exit.json');
    } finally {
      await registry.close();
    }
  });
});
