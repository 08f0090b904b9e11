// DESIGN section 3 (process trees and tree kill), with real process trees.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { descendants, handleToolCall, identity, killTree, ProcessRegistry, probe, verdict } from '../dist/index.mjs';
import { cleanupGroup, cleanupPid, cli, isAlive, until, perTestRegistry, tempDir } from './support.js';

const ctx = perTestRegistry();

async function start(command: string) {
  const s = await ctx.registry.spawn(command);
  cleanupGroup(s.pid);
  return s;
}

/** Waits until the session's tree has at least `n` live descendants, and returns them. */
async function treeOf(pid: number, n: number) {
  await until(() => descendants(pid).filter((d) => d.alive).length >= n, 5000, `${n} descendants`);
  const tree = descendants(pid).filter((d) => d.alive);
  for (const d of tree) if (d.pgid !== pid) cleanupGroup(d.pgid);
  return tree;
}

describe('tree kill reaches every descendant', () => {
  it('nested subshell trees are fully killed', async () => {
    const s = await start(`sh -c '(sleep 300 & sleep 301 & wait) & (sleep 302 & wait) & wait'`);
    const tree = await treeOf(s.pid!, 5);
    const k = await ctx.registry.kill(s.id, { graceMs: 1000 });
    expect(k.survivors).toEqual([]);
    for (const d of tree) expect(isAlive(d.pid)).toBe(false);
  });

  it('children in their own process groups under set -m job control are killed', async () => {
    const s = await start(`bash -c 'set -m; sleep 303 & sleep 304 & wait'`);
    const tree = await treeOf(s.pid!, 2);
    expect(tree.some((d) => d.pgid !== s.pid)).toBe(true);
    await ctx.registry.kill(s.id, { graceMs: 1000 });
    for (const d of tree) expect(isAlive(d.pid)).toBe(false);
  });

  it('a SIGTERM-ignoring parent with two SIGTERM-ignoring children all end by SIGKILL', async () => {
    const s = await start(`sh -c 'trap "" TERM; sh -c "trap \\"\\" TERM; sleep 305" & sh -c "trap \\"\\" TERM; sleep 306" & wait'`);
    const tree = await treeOf(s.pid!, 4);
    const k = await ctx.registry.kill(s.id, { graceMs: 200 });
    expect(k.escalated).toBe(true);
    expect(k.survivors).toEqual([]);
    for (const d of tree) expect(isAlive(d.pid)).toBe(false);
    expect(isAlive(s.pid!)).toBe(false);
  });

  it('killing a session never touches a process outside its tree', async () => {
    const sibling = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    cleanupGroup(sibling.pid);
    const s = await start('sleep 307 & sleep 308 & wait');
    await treeOf(s.pid!, 2);
    await ctx.registry.kill(s.id, { graceMs: 500 });
    expect(isAlive(sibling.pid as number)).toBe(true);
  });

  it('a kill of an exited session says already_exited and still cleans up its group', async () => {
    const s = await start(`sh -c 'sleep 309 & echo bg=$!; exit 0'`);
    const w = await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    const bg = Number(/bg=(\d+)/.exec(w.outputPreview)?.[1]);
    cleanupPid(bg);
    expect(isAlive(bg)).toBe(true);
    const k = await ctx.registry.kill(s.id, { graceMs: 500 });
    expect(k.outcome).toBe('already_exited');
    expect(k.signalled).toContain(bg);
    expect(isAlive(bg)).toBe(false);
    expect((await ctx.registry.poll(s.id)).reason).toBe('exited');
  });
});

describe('containment', () => {
  it('a double-forked setsid daemon that left the tree is still killed when the job has a cgroup', async (tc) => {
    const s = await start(`sh -c '(setsid sleep 310 &); echo forked; sleep 30'`);
    if (!s.cgroup) tc.skip(); // this host may not create cgroups: containment falls back silently
    let daemon = 0;
    await until(() => {
      const inTree = new Set(descendants(s.pid!).map((d) => d.pid));
      const members = readFileSync(join(s.cgroup!, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
      // The daemon is `sleep` itself: setsid(1) may fork once more, and its parent exits at once.
      const isSleep = (p: number) => {
        try {
          return readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'sleep';
        } catch {
          return false;
        }
      };
      daemon = members.find((p) => p !== s.pid && !inTree.has(p) && isAlive(p) && isSleep(p)) ?? 0;
      return daemon !== 0;
    }, 5000, 'daemon outside the tree');
    cleanupPid(daemon);
    const k = await ctx.registry.kill(s.id, { graceMs: 300 });
    expect(k.signalled).toContain(daemon);
    expect(isAlive(daemon)).toBe(false);
  });

  it('without containment the registry still works (PROCWARD_NO_CGROUP or containment: false)', async () => {
    const r = await ProcessRegistry.open({ containment: false });
    const s = await r.spawn('sleep 30');
    cleanupGroup(s.pid);
    expect(s.cgroup).toBeUndefined();
    expect((await r.kill(s.id, { graceMs: 300 })).outcome).toBe('killed');
    await r.close();
  });
});

describe('zombies and reused PIDs', () => {
  it('a real zombie (a child its parent never reaps) is gone and not alive', async () => {
    // `exec sleep` replaces the shell, and sleep never reaps the child that ends after it
    // (a `true` could end first and be reaped by bash before the exec, on a busy machine).
    const s = await start(`bash -c 'sleep 0.3 & exec sleep 30'`);
    await until(() => descendants(s.pid!).some((d) => d.state === 'Z'), 5000, 'zombie');
    const zombie = descendants(s.pid!).find((d) => d.state === 'Z')!;
    expect(zombie.alive).toBe(false);
    expect(probe([zombie.pid])[0]).toMatchObject({ exists: true, alive: false, state: 'Z' });
    expect(verdict(zombie.identity)).toBe('gone');
    expect(identity(zombie.pid)).toBeNull();
  });

  it('a live process recorded one tick off is never signalled by killTree, not even with SIGKILL', async () => {
    const s = await start('sleep 30');
    const id = identity(s.pid!)!;
    const report = await killTree({ ...id, startTime: String(BigInt(id.startTime) - 1n) }, { signal: 'SIGKILL' });
    expect(report).toMatchObject({ signalled: [], refusedReused: [s.pid], survivors: [] });
    expect(isAlive(s.pid!)).toBe(true);
  });
});

describe('grace 0 on a stopped job', () => {
  it('a SIGSTOPped job deaf to SIGTERM is SIGKILLed at once by a grace-0 kill (SIGTERM then SIGKILL, as docker stop -t 0)', async () => {
    // SIGCONT follows SIGTERM (issue 16): a stopped job that ignores TERM runs on, and grace 0
    // escalates at once (issue 18: it used to mean "never escalate").
    const s = await start("trap '' TERM; kill -STOP $$; sleep 30");
    await until(() => probe([s.pid!])[0]?.state === 'T', 5000, 'stopped');
    const k = await ctx.registry.kill(s.id, { graceMs: 0 });
    expect(k).toMatchObject({ outcome: 'killed', escalated: true, survivors: [] });
    const w = await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    expect(w).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGKILL' });
    expect(isAlive(s.pid!)).toBe(false);
  });
});

describe('end reasons are true', () => {
  it('a kill rejected for a bad graceMs leaves no marker: a later natural exit 5 is `exited` with code 5', async () => {
    const dir = tempDir();
    const r = await ProcessRegistry.open({ stateDir: dir });
    try {
      for (const durable of [false, true]) {
        const s = await r.spawn('sleep 0.5; exit 5', { durable });
        cleanupGroup(s.pid);
        for (const graceMs of [-1, 1.5, Number.NaN, '100' as unknown as number]) {
          await expect(r.kill(s.id, { graceMs })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
        }
        expect(existsSync(join(dir, 'sessions', s.id, 'kill-requested'))).toBe(false);
        expect(await r.wait(s.id, { timeoutMs: 10_000 })).toMatchObject({ status: 'exited', reason: 'exited', exitCode: 5 });
      }
    } finally {
      await r.close();
    }
  });

  it('kill of a finished session is `already_exited`, and its end stays as it was', async () => {
    const s = await start('exit 3');
    await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    const k = await ctx.registry.kill(s.id, { graceMs: 100 });
    expect(k).toMatchObject({ outcome: 'already_exited', exitCode: 3, signal: null });
    expect(await ctx.registry.poll(s.id)).toMatchObject({ reason: 'exited', exitCode: 3 });
  });

  it('a job that ended on its own before the kill (its end published, not yet delivered) is `already_exited`', async () => {
    for (let i = 0; i < 10; i++) {
      const s = await start('exit 4');
      // Until the reader has published the end; the event loop has not delivered it yet
      // when kill starts (no await between the check and the call).
      await until(() => isAlive(s.pid!) === false, 5000, 'the job to end');
      const k = await ctx.registry.kill(s.id, { graceMs: 100 });
      expect(k.outcome).toBe('already_exited');
      expect(await ctx.registry.poll(s.id)).toMatchObject({ reason: 'exited', exitCode: 4 });
    }
  });

  // Issue 28, kind 4: `signal` only when a signal ended the process; a job that exits by its
  // own TERM trap keeps its exit code, and the kill's result says what it sent.
  for (const code of [0, 3, 143]) {
    it(`a killed job that exits ${code} from its own trap: reason killed, exitCode ${code}, signal null; the kill sent SIGTERM`, async () => {
      const s = await start(`trap 'exit ${code}' TERM; echo trapped; while :; do sleep 0.05; done`);
      // A SIGTERM before the trap would end the job by the signal, not by its trap's exit.
      await until(async () => (await ctx.registry.readLog(s.id)).lines.includes('trapped'), 10_000, 'the trap');
      const k = await ctx.registry.kill(s.id, { graceMs: 10_000 });
      expect(k).toMatchObject({ outcome: 'killed', exitCode: code, signal: null, killSignal: 'SIGTERM', escalated: false });
      expect(await ctx.registry.poll(s.id)).toMatchObject({ reason: 'killed', exitCode: code, signal: null });
    });
  }

  it('a durable job, and one killed from another host, that exits 0 from its trap: the same (exitCode 0, signal null)', async () => {
    const state = tempDir();
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      const s = await r.spawn("trap 'exit 0' TERM; echo trapped; while :; do sleep 0.05; done", { durable: true });
      cleanupGroup(s.supervisorPid ?? s.pid);
      await until(async () => (await r.readLog(s.id)).lines.includes('trapped'), 10_000, 'the trap');
      const other = await ProcessRegistry.open({ stateDir: state });
      try {
        expect(await other.kill(s.id, { graceMs: 10_000 })).toMatchObject({ outcome: 'killed', exitCode: 0, signal: null, killSignal: 'SIGTERM' });
      } finally {
        await other.close();
      }
      expect(await r.wait(s.id, { timeoutMs: 20_000 })).toMatchObject({ reason: 'killed', exitCode: 0, signal: null });
    } finally {
      await r.close();
    }
  });

  it('a job the kill ends by its signal: exitCode null, signal SIGTERM (or SIGKILL after escalation, as killSignal says)', async () => {
    const plain = await start('sleep 30');
    expect(await ctx.registry.kill(plain.id, { graceMs: 5000 })).toMatchObject({ outcome: 'killed', exitCode: null, signal: 'SIGTERM', killSignal: 'SIGTERM' });
    const stubborn = await start("trap '' TERM; echo armed; while :; do sleep 0.05; done");
    await until(async () => (await ctx.registry.readLog(stubborn.id)).lines.includes('armed'), 10_000, 'the trap');
    const k = await ctx.registry.kill(stubborn.id, { graceMs: 200 });
    expect(k).toMatchObject({ outcome: 'killed', exitCode: null, signal: 'SIGKILL', killSignal: 'SIGKILL', escalated: true });
    const gone = await ctx.registry.kill(plain.id, { graceMs: 200 });
    expect(gone).toMatchObject({ outcome: 'already_exited', killSignal: null });
  });

  it('the tool and the CLI say it too: kill_signal / killSignal beside the job`s own exit code', async () => {
    const trapping = "trap 'exit 5' TERM; echo trapped; while :; do sleep 0.05; done";
    const s = await start(trapping);
    await until(async () => (await ctx.registry.readLog(s.id)).lines.includes('trapped'), 10_000, 'the trap');
    const k = await handleToolCall(ctx.registry, 'process', { action: 'kill', session_id: s.id, grace_ms: 10_000 });
    expect(k).toMatchObject({ outcome: 'killed', exit_code: 5, signal: null, kill_signal: 'SIGTERM' });
    const state = tempDir();
    const started = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', trapping])).stdout);
    cleanupGroup(started.pid);
    await until(async () => (await cli(['log', started.id, '--state-dir', state])).stdout.includes('trapped'), 10_000, 'the trap');
    const c = JSON.parse((await cli(['kill', started.id, '--state-dir', state, '--json', '--grace', '10s'])).stdout);
    expect(c).toMatchObject({ outcome: 'killed', exitCode: 5, signal: null, killSignal: 'SIGTERM' });
  });
});

describe('bulk kill', () => {
  it('kills asked for in one turn run as one batch, and a malformed identity fails only its own kill', async () => {
    const a = spawn('sh', ['-c', 'sleep 312; true'], { detached: true, stdio: 'ignore' });
    const b = spawn('sh', ['-c', 'sleep 313; true'], { detached: true, stdio: 'ignore' });
    cleanupGroup(a.pid);
    cleanupGroup(b.pid);
    await until(() => [a.pid!, b.pid!].every((p) => descendants(p).some((d) => d.alive)), 5000, 'both sleeps');
    const [ia, ib] = [identity(a.pid!)!, identity(b.pid!)!];
    const bad = { ...ib, startTime: 'not a number' };
    const [ka, kbad, kb] = await Promise.allSettled([killTree(ia, { graceMs: 300 }), killTree(bad, { graceMs: 300 }), killTree(ib, { graceMs: 300 })]);
    expect(kbad).toMatchObject({ status: 'rejected', reason: { code: 'EINVAL' } });
    for (const k of [ka, kb]) expect(k).toMatchObject({ status: 'fulfilled', value: { survivors: [] } });
    expect(ka.status === 'fulfilled' && ka.value.signalled).toContain(ia.pid);
    expect(kb.status === 'fulfilled' && kb.value.signalled).toContain(ib.pid);
    expect(isAlive(a.pid!) || isAlive(b.pid!)).toBe(false);
  });

  it('killAll of 50 SIGTERM-ignoring jobs ends every one as killed, every SIGTERM sent before any SIGKILL', async () => {
    const graceMs = 1000;
    const dir = tempDir();
    // On SIGTERM each job records the state of every job's root (field 3 of /proc/<pid>/stat,
    // read by shell builtins alone): a job SIGKILLed already shows as a zombie, or is gone.
    const record =
      `rec() { read -r roots < ${dir}/roots; out=; for p in $roots; do l=; read -r l < /proc/$p/stat; ` +
      `set -- $l; out="$out$p \${3:-gone} "; done; echo "$out" > ${dir}/term.$$; }`;
    const script = `trap '' TERM; sleep 309 & ${record}; trap rec TERM; : > ${dir}/ready.$$; while :; do wait; done`;
    const jobs: Awaited<ReturnType<typeof ctx.registry.spawn>>[] = [];
    for (let i = 0; i < 50; i++) jobs.push(await ctx.registry.spawn(script, { taskId: 'bulk' }));
    for (const s of jobs) cleanupGroup(s.pid!);
    writeFileSync(join(dir, 'roots'), jobs.map((s) => s.pid).join(' '));
    await until(() => jobs.every((s) => existsSync(join(dir, `ready.${s.pid}`))), 10_000, 'every trap');
    const out = await ctx.registry.killAll({ taskId: 'bulk', graceMs });
    expect(out.map((o) => o.id).sort()).toEqual(jobs.map((s) => s.id).sort());
    for (const o of out) expect('result' in o && o.result).toMatchObject({ outcome: 'killed', escalated: true, survivors: [] });
    for (const s of jobs) {
      expect(isAlive(s.pid!)).toBe(false);
      expect(await ctx.registry.poll(s.id)).toMatchObject({ reason: 'killed', signal: 'SIGKILL' });
    }
    // One grace period for all: kills one after another would show earlier jobs dead.
    for (const s of jobs) {
      const seen = readFileSync(join(dir, `term.${s.pid}`), 'utf8').trim().split(' ');
      expect(seen.length).toBe(2 * jobs.length);
      for (let i = 1; i < seen.length; i += 2) expect(['Z', 'gone'], seen.join(' ')).not.toContain(seen[i]);
    }
  }, 60_000);
});
