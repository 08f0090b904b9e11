// Membership by proof (DESIGN §3, issue 25): a process is a job's only when something a
// stranger cannot have says so — the session's mark in its environment, or the job's cgroup —
// never its PID, group or session number, nor a record. Real PID reuse is driven by the
// harness in scripts/reuse (its sample runs in reuse-sample.test.ts).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handleToolCall, identity, ProcessRegistry, probe, type SpawnOptions } from '../dist/index.mjs';
import { cleanupGroup, cleanupPid, cli, deadHostEntry, isAlive, ROOT, tempDir, until } from './support';

const MARK = /^proc_[0-9a-f]{12}:[0-9a-f]{32}$/;

/** A live stranger that leads its own session (as a job's leader does), carrying no mark. */
function sessionLeader(env: NodeJS.ProcessEnv = {}): number {
  const clean = { ...process.env, ...env };
  delete clean.PROCWARD_SESSION_ID;
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore', env: clean });
  child.unref();
  cleanupGroup(child.pid);
  return child.pid as number;
}

describe('every job carries its session’s mark', () => {
  for (const durable of [false, true]) {
    it(`a ${durable ? 'durable' : 'pipe-mode'} job and its children see PROCWARD_SESSION_ID=<id>:<nonce>, the one its record keeps`, async () => {
      const state = tempDir();
      const r = await ProcessRegistry.open({ stateDir: state });
      try {
        const s = await r.spawn('printenv PROCWARD_SESSION_ID; sh -c "printenv PROCWARD_SESSION_ID"', { durable });
        const w = await r.wait(s.id, { timeoutMs: 10_000 });
        const [own = '', child] = w.outputPreview.trim().split('\n');
        expect(own).toMatch(MARK);
        expect(own.startsWith(`${s.id}:`)).toBe(true);
        expect(child).toBe(own);
        const onDisk = JSON.parse(readFileSync(join(state, 'sessions', s.id, 'session.json'), 'utf8'));
        expect(onDisk.mark).toBe(own);
      } finally {
        await r.close();
      }
    });
  }

  it('two sessions never share a mark', async () => {
    const r = await ProcessRegistry.open();
    try {
      const marks = new Set<string>();
      for (let i = 0; i < 5; i++) {
        const s = await r.spawn('printenv PROCWARD_SESSION_ID');
        marks.add((await r.wait(s.id, { timeoutMs: 10_000 })).outputPreview.trim());
      }
      expect(marks.size).toBe(5);
    } finally {
      await r.close();
    }
  });

  it('env and allowEnv can neither set nor remove it, in the library, the tool and the CLI', async () => {
    const r = await ProcessRegistry.open();
    try {
      const forged: SpawnOptions[] = [{ env: { PROCWARD_SESSION_ID: 'proc_000000000000:0' } }, { env: { procward_outer_session_ids: 'x' } }, { allowEnv: ['PROCWARD_SESSION_ID'] }];
      for (const opts of forged) {
        await expect(r.spawn('true', opts)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining("session's mark") });
      }
      expect(await r.list()).toEqual([]);
      const tool = (await handleToolCall(r, 'process_start', { command: 'true', env: { PROCWARD_SESSION_ID: 'forged' } })) as Record<string, any>;
      expect(tool.error ?? tool).toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      await r.close();
    }
    const c = await cli(['start', '--state-dir', tempDir(), '--env', 'PROCWARD_SESSION_ID=forged', '--', 'true']);
    expect(c.code).not.toBe(0);
    expect(c.stderr).toContain("session's mark");
  });

  it('a procward inside another job keeps the outer marks beside its own', async () => {
    const outer = `proc_00000000abcd:${'a'.repeat(32)}`;
    const outerOuter = `proc_00000000abce:${'b'.repeat(32)}`;
    const script = `import { ProcessRegistry } from ${JSON.stringify(join(ROOT, 'dist', 'index.mjs'))};
      const r = await ProcessRegistry.open();
      const s = await r.spawn('printenv PROCWARD_SESSION_ID; printenv PROCWARD_OUTER_SESSION_IDS');
      console.log(JSON.stringify({ id: s.id, out: (await r.wait(s.id, { timeoutMs: 10000 })).outputPreview }));
      await r.close();`;
    const env = { ...process.env, PROCWARD_SESSION_ID: outer, PROCWARD_OUTER_SESSION_IDS: `${outerOuter} not-a-mark` };
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8', timeout: 30_000 });
    expect(run.status, run.stderr).toBe(0);
    const { id, out } = JSON.parse(run.stdout);
    const [own, outers] = out.trim().split('\n');
    expect(own.startsWith(`${id}:`)).toBe(true);
    expect(outers).toBe(`${outer} ${outerOuter}`);
  });
});

describe('a record proves nothing by itself', () => {
  it('a running record naming a live session leader with its true start time is refused (no_proof) on every surface; the leader lives', async () => {
    const state = tempDir();
    const victim = sessionLeader();
    await until(() => identity(victim) !== null, 5000, 'the victim');
    const id = 'proc_0000000bad01';
    // With a mark of the right shape (the victim does not carry it), and without one.
    const entries = [
      deadHostEntry(id, { status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null, pid: victim, identity: identity(victim), mark: `${id}:${'c'.repeat(32)}` }),
      deadHostEntry('proc_0000000bad02', { status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null, pid: victim, identity: identity(victim) }),
    ];
    writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: entries }), { mode: 0o600 });
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      for (const e of entries) {
        await expect(r.kill(e.id as string, { graceMs: 0 })).rejects.toMatchObject({ code: 'KILL_REFUSED', details: { report: { signalled: [], refused: [{ pid: victim, reason: 'no_proof' }] } } });
        await expect(r.signal(e.id as string, 'SIGKILL')).rejects.toMatchObject({ code: 'KILL_REFUSED' });
      }
      const tool = (await handleToolCall(r, 'process', { action: 'kill', session_id: id, grace_ms: 0 })) as Record<string, any>;
      expect(JSON.stringify(tool)).toContain('no_proof');
    } finally {
      await r.close();
    }
    const c = await cli(['kill', '--state-dir', state, '--json', '--grace', '0', 'proc_0000000bad02']);
    expect(c.code).not.toBe(0);
    expect(c.stdout + c.stderr).toContain('no session mark');
    expect(isAlive(victim)).toBe(true);
  });

  it('a job recorded by the previous release (no mark) is refused with a hint, and lives; its cgroup proves it when it has one', async () => {
    const state = tempDir();
    const r1 = await ProcessRegistry.open({ stateDir: state, containment: false });
    const s = await r1.spawn('sleep 60', { durable: true });
    cleanupGroup(s.pid);
    await r1.close();
    // The previous release wrote no mark.
    for (const file of [join(state, 'checkpoint.json'), join(state, 'sessions', s.id, 'session.json')]) {
      const data = JSON.parse(readFileSync(file, 'utf8'));
      for (const e of data.sessions ?? [data]) delete e.mark;
      writeFileSync(file, JSON.stringify(data), { mode: 0o600 });
    }
    const r2 = await ProcessRegistry.open({ stateDir: state });
    try {
      expect((await r2.poll(s.id)).status).toBe('running');
      await expect(r2.kill(s.id, { graceMs: 0 })).rejects.toMatchObject({ code: 'KILL_REFUSED', message: expect.stringContaining('no session mark') });
      expect(isAlive(s.pid as number)).toBe(true);
    } finally {
      await r2.close();
    }
  });
});

describe('signals go through pidfds, and the fallback without them is whole', () => {
  it('with PROCWARD_NO_PIDFD=1 (as on a kernel without pidfd_open) a kill still ends the tree, and a stranger leader is still refused', async () => {
    const victim = sessionLeader();
    await until(() => identity(victim) !== null, 5000, 'the victim');
    const script = `import { ProcessRegistry, killTree, identity } from ${JSON.stringify(join(ROOT, 'dist', 'index.mjs'))};
      const r = await ProcessRegistry.open();
      const s = await r.spawn('sleep 61 & sleep 62 & echo up; wait');
      await r.wait(s.id, { timeoutMs: 300 });
      const k = await r.kill(s.id, { graceMs: 300 });
      const stranger = await killTree(identity(${victim}), { graceMs: 0, mark: s.id + ':' + '0'.repeat(32), requireProof: true });
      console.log(JSON.stringify({ pid: s.pid, outcome: k.outcome, signalled: k.signalled, survivors: k.survivors, stranger }));
      await r.close();`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, PROCWARD_NO_PIDFD: '1' }, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out).toMatchObject({ outcome: 'killed', survivors: [] });
    expect(out.signalled.length).toBeGreaterThanOrEqual(1);
    expect(out.stranger).toMatchObject({ signalled: [], refused: [{ pid: victim, reason: 'no_proof' }] });
    expect(probe([out.pid])[0]?.alive ?? false).toBe(false);
    expect(isAlive(victim)).toBe(true);
  });
});

describe('a contained job’s kill ends with its cgroup empty', () => {
  it('a TERM trap that starts a setsid daemon and exits: the kill escalates, reports the daemon, and leaves nothing in the cgroup', async (tc) => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn("trap '( setsid sleep 3000 >/dev/null 2>&1 & ); sleep 0.1; exit 0' TERM; echo trapped; while :; do sleep 1; done", { durable: true });
      cleanupGroup(s.pid);
      if (!s.cgroup) {
        tc.skip(); // this host may not create cgroups
        return;
      }
      await until(async () => (await r.poll(s.id)).outputPreview.includes('trapped'), 10_000, 'the trap');
      const k = await r.kill(s.id, { graceMs: 2000 });
      const procs = join(s.cgroup, 'cgroup.procs');
      let left: number[] = [];
      try {
        left = readFileSync(procs, 'utf8').split('\n').filter(Boolean).map(Number).filter((p) => probe([p])[0]?.alive);
      } catch {
        // removed with the kill: empty
      }
      for (const p of left) cleanupPid(p);
      expect(left).toEqual([]);
      // Ended by the kill either way: SIGTERMed when the mark scan found it, or by cgroup.kill.
      expect(k).toMatchObject({ outcome: 'killed', survivors: [] });
      expect((await r.poll(s.id)) as { leftovers?: number }).not.toHaveProperty('leftovers');
    } finally {
      await r.close();
    }
  });
});
