// DESIGN section 4 on every platform: spawn, merged output, exit codes, and an orphaned
// grandchild that holds the output pipe without keeping the session running.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { echo, lines, orphanedGrandchild, outErrExit } from './commands.mjs';
import { cleanupPid, describeRegistry, isAlive } from './support.mjs';

describe('spawning and output', () => {
  const ctx = describeRegistry();

  it('a spawned command runs and its output arrives', async () => {
    const s = await ctx.registry.spawn(echo('procward-platform'));
    cleanupPid(s.pid);
    assert.match(s.id, /^proc_[0-9a-f]{12}$/);
    assert.ok(Number.isInteger(s.pid) && s.pid > 0, `pid ${s.pid}`);
    const w = await ctx.registry.wait(s.id, { timeoutMs: 30_000 });
    assert.equal(w.timedOut, false);
    assert.equal(w.exitCode, 0);
    assert.deepEqual(lines((await ctx.registry.readLog(s.id)).text), ['procward-platform']);
  });

  it('wait gives the exit code, with stdout and stderr merged in order', async () => {
    for (const code of [0, 3, 42]) {
      const s = await ctx.registry.spawn(outErrExit('to-stdout', 'to-stderr', code));
      cleanupPid(s.pid);
      const w = await ctx.registry.wait(s.id, { timeoutMs: 30_000 });
      assert.equal(w.status, 'exited');
      assert.equal(w.exitCode, code);
      assert.equal(w.signal, null);
      assert.equal(w.reason, 'exited');
      assert.deepEqual(lines((await ctx.registry.readLog(s.id)).text), ['to-stdout', 'to-stderr']);
    }
  });

  it('a grandchild holding the output pipe does not keep the session running', async () => {
    // The grandchild outlives the wait's timeout: a job that waited for the pipe to close
    // would time out here.
    const s = await ctx.registry.spawn(orphanedGrandchild(90));
    cleanupPid(s.pid);
    const w = await ctx.registry.wait(s.id, { timeoutMs: 45_000 });
    assert.equal(w.timedOut, false);
    assert.equal(w.processRunning, false);
    assert.equal(w.exitCode, 0);
    assert.ok(lines(w.outputPreview).includes('started'), w.outputPreview);
    await ctx.registry.kill(s.id, { graceMs: 1000 }).catch(() => {});
  });

  it('kill of an ended session kills what is left of its tree', async () => {
    const s = await ctx.registry.spawn(orphanedGrandchild(90));
    cleanupPid(s.pid);
    assert.equal((await ctx.registry.wait(s.id, { timeoutMs: 45_000 })).exitCode, 0);
    // A grace period, so the forced step follows on Windows too: there grace 0 is the
    // graceful step alone (Ctrl-Break, which ping shrugs off, and which Wine 8 cannot send).
    const k = await ctx.registry.kill(s.id, { graceMs: 1000 });
    assert.equal(k.outcome, 'already_exited');
    assert.deepEqual(k.survivors, []);
    assert.ok(k.signalled.length >= 1, `the orphan was signalled: ${JSON.stringify(k)}`);
    assert.ok(
      k.signalled.every((pid) => !isAlive(pid)),
      `gone: ${JSON.stringify(k.signalled)}`,
    );
  });
});
