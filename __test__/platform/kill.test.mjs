// DESIGN section 3 on every platform: a tree kill reaches every level of the job's tree, and
// a member that ignores the graceful step (SIGTERM; Ctrl-Break on Windows) is forced after
// the grace period. Nothing the snapshot saw is left alive, and the report says so.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lines, treeIgnoringGraceful } from './commands.mjs';
import { cleanupPid, describeRegistry, isAlive, pkg, until } from './support.mjs';

describe('tree kill', () => {
  const ctx = describeRegistry();

  it('kills a 3-level tree whose deepest member ignores the graceful signal, escalating after the grace period', async () => {
    const s = await ctx.registry.spawn(treeIgnoringGraceful(120));
    cleanupPid(s.pid);
    // Three levels: a child of the root has a child of its own.
    const threeLevels = (members) => {
      const children = new Set(members.filter((m) => m.ppid === s.pid).map((m) => m.pid));
      return members.some((m) => children.has(m.ppid));
    };
    let members = [];
    await until(
      async () => {
        members = pkg.descendants(s.pid);
        return threeLevels(members) && lines((await ctx.registry.poll(s.id)).outputPreview).includes('ready');
      },
      30_000,
      'a 3-level tree whose member ignores the graceful signal',
    );
    for (const m of members) cleanupPid(m.pid);

    const k = await ctx.registry.kill(s.id, { graceMs: 1000 });
    assert.equal(k.outcome, 'killed');
    assert.deepEqual(k.survivors, []);
    assert.equal(k.escalated, true, `a member ignored the graceful step: ${JSON.stringify(k)}`);
    assert.ok(k.signalled.includes(s.pid), `the root was signalled: ${JSON.stringify(k.signalled)}`);
    await until(() => [s.pid, ...members.map((m) => m.pid)].every((pid) => !isAlive(pid)), 20_000, 'every member gone');

    const p = await ctx.registry.poll(s.id);
    assert.equal(p.status, 'exited');
    assert.equal(p.reason, 'killed');
  });
});
