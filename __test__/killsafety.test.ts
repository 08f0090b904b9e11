// DESIGN sections 3 and 11: whatever a record says, a kill never reaches beyond the job.
// Each case runs in its own PID namespace (`unshare --pid --fork --mount-proc`), so a kill
// that escaped would end only the namespace (its `sh` is PID 1, this host's parent there).
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { killTree, identity } from '../dist/index.mjs';
import { tempDir } from './support';

const FIXTURE = join(__dirname, 'fixtures', 'killsafety-ns.mjs');

function canUnshare(): boolean {
  try {
    execFileSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

interface KillSeen {
  outcome?: string;
  code?: string;
  message?: string;
  signalled?: number[];
  refused?: { pid?: number; cgroup?: string; reason: string }[];
  survivors?: number[];
}

interface NsResult {
  host: number;
  sentinel: { leader: number; child: number };
  job: number;
  kill: KillSeen;
  jobAlive?: boolean;
  cgroupKill?: string;
  sentinelAlive: boolean;
  pid1Alive: boolean;
}

/** Runs one scenario of the fixture in a fresh PID namespace; its last stdout line is the result. */
function inNamespace(scenario: string): Promise<NsResult> {
  const state = tempDir();
  // `; exit` keeps sh from exec'ing node: sh stays PID 1, the host's parent.
  const script = `"${process.execPath}" "${FIXTURE}" ${scenario} "${state}"; exit $?`;
  return new Promise((resolve, reject) => {
    execFile('unshare', ['--pid', '--fork', '--mount-proc', 'sh', '-c', script], { timeout: 60_000 }, (err, stdout, stderr) => {
      const line = stdout.trim().split('\n').pop() ?? '';
      if (err || !line.startsWith('{')) reject(new Error(`scenario ${scenario} ended without a result (${err?.message}): ${stdout}\n${stderr}`));
      else resolve(JSON.parse(line) as NsResult);
    });
  });
}

const ns = canUnshare();

describe.skipIf(!ns)('kill safety: records naming PID 1', () => {
  // The record's root is refused and never signalled; the job's own process still carries
  // the session's mark, which proves it the job's whatever the record says: the kill ends it.
  it('a running record naming PID 1 with its real start time ends as lost (no host can follow it); its kill spares PID 1 and ends the marked job', async () => {
    const r = await inNamespace('pid1-running');
    expect(r.kill).toMatchObject({ outcome: 'already_exited', signalled: [r.job], survivors: [] });
    expect(r.kill.refused).toEqual([{ pid: 1, reason: 'pid_le_1' }]);
    expect(r.pid1Alive && r.sentinelAlive).toBe(true);
    expect(r.jobAlive).toBe(false);
  }, 90_000);

  it('an exited record naming PID 1 gives already_exited with the refusal listed; only the marked job is signalled', async () => {
    const r = await inNamespace('pid1-exited');
    expect(r.kill).toMatchObject({ outcome: 'already_exited', signalled: [r.job], survivors: [] });
    expect(r.kill.refused).toEqual([{ pid: 1, reason: 'pid_le_1' }]);
    expect(r.pid1Alive && r.sentinelAlive).toBe(true);
    expect(r.jobAlive).toBe(false);
  }, 90_000);

  it('a session.json naming PID 1 (no checkpoint) is refused the same way', async () => {
    const r = await inNamespace('session-json');
    expect(r.kill.outcome).toBe('already_exited');
    expect(r.kill.signalled).toEqual([r.job]);
    expect(r.kill.refused).toEqual([{ pid: 1, reason: 'pid_le_1' }]);
    expect(r.pid1Alive && r.sentinelAlive).toBe(true);
    expect(r.jobAlive).toBe(false);
  }, 90_000);
});

describe.skipIf(!ns)('kill safety: cgroups and groups a record names', () => {
  it('a running record whose cgroup is a foreign directory kills its job only: the cgroup is refused, cgroup.kill stays unwritten', async () => {
    const r = await inNamespace('cgroup-running');
    expect(r.kill.outcome).toBe('killed');
    expect(r.kill.refused).toContainEqual({ cgroup: expect.stringContaining('foreign-cgroup-'), reason: 'cgroup_not_ours' });
    expect(r.kill.signalled).not.toContain(r.sentinel.leader);
    expect(r.kill.signalled).not.toContain(r.sentinel.child);
    expect(r.cgroupKill).toBe('');
    expect(r.sentinelAlive).toBe(true);
    expect(r.jobAlive).toBe(false);
  }, 90_000);

  it('an exited record whose PID is dead and whose cgroup is foreign signals nothing', async () => {
    const r = await inNamespace('cgroup-exited');
    expect(r.kill).toMatchObject({ outcome: 'already_exited', signalled: [] });
    expect(r.kill.refused).toContainEqual({ cgroup: expect.stringContaining('foreign-cgroup-'), reason: 'cgroup_not_ours' });
    expect(r.cgroupKill).toBe('');
    expect(r.sentinelAlive).toBe(true);
  }, 90_000);

  it('a record naming a live unrelated process that leads no session is refused (not_session_leader); the marked job still ends', async () => {
    const r = await inNamespace('not-leader');
    expect(r.kill).toMatchObject({ outcome: 'already_exited', signalled: [r.job] });
    expect(r.kill.refused).toEqual([{ pid: r.sentinel.child, reason: 'not_session_leader' }]);
    expect(r.sentinelAlive).toBe(true);
    expect(r.jobAlive).toBe(false);
  }, 90_000);
});

describe('kill safety: the low-level killTree goes through the same guard', () => {
  it('killTree of the host itself signals nothing and lists the refusal', async () => {
    const me = identity(process.pid);
    if (!me) throw new Error('no identity for the host');
    // SIGCONT without escalation: harmless should the guard fail.
    const report = await killTree(me, { signal: 'SIGCONT', graceMs: 0, settleMs: 0 });
    expect(report.signalled).toEqual([]);
    expect(report.refused).toEqual([{ pid: process.pid, reason: 'host' }]);
  });

  it('killTree of the host’s parent is refused as an ancestor', async () => {
    const parent = identity(process.ppid);
    if (!parent || parent.pid <= 1) return;
    const report = await killTree(parent, { signal: 'SIGCONT', graceMs: 0, settleMs: 0 });
    expect(report.signalled).toEqual([]);
    expect(report.refused).toEqual([{ pid: parent.pid, reason: 'host_ancestor' }]);
  });
});
