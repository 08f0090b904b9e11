// DESIGN: a process is known by (pid, start time, boot id), and every process must read the
// same identity for it. Under qemu-user (the arm64 run) an emulated process that opened its
// own /proc/self/stat or /proc/<own pid>/stat got qemu's fake line (state 0, process group 0,
// a start time of qemu's clock), so a supervisor recorded an identity nobody else could
// match and a durable job's pid was null (issue 15). A child `cat` is never emulated: it
// prints the kernel's line. Linux only (no /proc elsewhere).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sleep } from './commands.mjs';
import { INDEX_CJS, cleanup, cleanupSession, inOtherHost, isAlive, pkg, tempDir, until } from './support.mjs';

/** Fields 3 (state), 5 (process group) and 22 (start time) of `pid`'s stat as `cat` prints it. */
function statSeenByAChild(pid) {
  const text = execFileSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' });
  // After the last ')' (the command name may hold one): index 0 is field 3.
  const fields = text.slice(text.lastIndexOf(')') + 1).trim().split(/\s+/);
  return { state: fields[0], pgid: Number(fields[2]), startTime: fields[19] };
}

describe('own identity under emulation', { skip: process.platform !== 'linux' }, () => {
  after(cleanup);

  it("the host's own identity and probe are what a child reads in /proc/<host pid>/stat", async () => {
    const me = pkg.identity(process.pid);
    const [probed] = pkg.probe([process.pid]);
    const seen = statSeenByAChild(process.pid);
    assert.equal(me.startTime, seen.startTime, `identity ${JSON.stringify(me)}, the child saw ${JSON.stringify(seen)}`);
    assert.equal(probed.startTime, seen.startTime);
    assert.equal(probed.pgid, seen.pgid, `probe ${JSON.stringify(probed)}, the child saw ${JSON.stringify(seen)}`);
    assert.notEqual(probed.pgid, 0, "qemu's fake stat has process group 0");
    assert.match(probed.state, /^[A-Za-z]$/, "qemu's fake state is '0'");

    // The identity a writer records for itself: another host must find this one current.
    const other = await inOtherHost(
      join(tempDir(), 'state'),
      `const { verdict } = require(${JSON.stringify(INDEX_CJS)});
console.log(JSON.stringify({ verdict: verdict(${JSON.stringify(me)}) }));`,
    );
    assert.equal(other.verdict, 'current');
  });

  it("a durable job's supervisor.json names the supervisor and the job as a child reads them", async () => {
    const stateDir = join(tempDir(), 'state');
    const registry = await pkg.ProcessRegistry.open({ stateDir });
    try {
      const s = await registry.spawn(sleep(120), { durable: true });
      cleanupSession(s);
      assert.equal(typeof s.pid, 'number', `the session names its job: ${JSON.stringify(s)}`);
      assert.equal(typeof s.supervisorPid, 'number');
      assert.notEqual(s.pid, s.supervisorPid);

      const path = join(stateDir, 'sessions', s.id, 'supervisor.json');
      await until(() => existsSync(path) && JSON.parse(readFileSync(path, 'utf8')).job, 20_000, 'supervisor.json with the job');
      const recorded = JSON.parse(readFileSync(path, 'utf8'));
      const bootId = pkg.identity(process.pid).bootId;

      assert.equal(recorded.pid, s.supervisorPid);
      assert.equal(recorded.bootId, bootId);
      const supervisor = statSeenByAChild(recorded.pid);
      assert.equal(recorded.startTime, supervisor.startTime, `supervisor.json ${JSON.stringify(recorded)}, the child saw ${JSON.stringify(supervisor)}`);
      assert.equal(pkg.probe([recorded.pid])[0].pgid, supervisor.pgid);

      assert.equal(recorded.job.pid, s.pid);
      assert.equal(recorded.job.bootId, bootId);
      const job = statSeenByAChild(recorded.job.pid);
      assert.equal(recorded.job.startTime, job.startTime, `job ${JSON.stringify(recorded.job)}, the child saw ${JSON.stringify(job)}`);
      // The supervisor leads the session and process group the job runs in.
      assert.equal(supervisor.pgid, recorded.pid, 'the supervisor leads its process group');
      assert.equal(job.pgid, recorded.pid, "the job is in its supervisor's process group");
      assert.equal(pkg.verdict({ pid: recorded.pid, startTime: recorded.startTime, bootId: recorded.bootId }), 'current');
      assert.equal(pkg.verdict(recorded.job), 'current');

      const k = await registry.kill(s.id, { graceMs: 1000 });
      assert.deepEqual(k.survivors, []);
      await until(() => !isAlive(s.pid) && !isAlive(recorded.pid), 20_000, 'the job and its supervisor gone (or zombies)');
    } finally {
      await registry.close();
    }
  });
});
