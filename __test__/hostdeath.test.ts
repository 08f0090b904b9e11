// Jobs only their host can reach die with it (issue 16 item 6): the jobs of an in-memory
// registry end, whole tree, however the host process ends, SIGKILL included; a job started
// with `outliveHost`, or one a state directory records, does not.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry, probe } from '../dist/index.mjs';
import { cleanupPid, isAlive, ROOT, tempDir, until } from './support';

interface Started {
  /** The job's leader and the processes below it (and, with a cgroup, a daemon that left the tree). */
  pids: number[];
  id: string;
  cgroup: string | null;
}

/**
 * Starts a host process that opens a registry with `options`, spawns each command (with its
 * spawn options), prints the jobs' PIDs as one JSON line, then waits; on a line `exit` on its
 * stdin it calls `process.exit(0)`, on `throw` it throws.
 */
async function host(options: object, jobs: [string, object][]): Promise<{ child: ChildProcess; started: Started[] }> {
  const script = `const { ProcessRegistry, descendants } = require(${JSON.stringify(join(ROOT, 'dist', 'index.js'))});
const { readFileSync } = require('node:fs');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  const r = await ProcessRegistry.open(${JSON.stringify(options)});
  const out = [];
  for (const [command, opts] of ${JSON.stringify(jobs)}) {
    const s = await r.spawn(command, opts);
    // The shell's two sleeps (and, with a cgroup, whatever else runs in it).
    let pids = [];
    for (let i = 0; i < 1000 && pids.length < 3; i++) {
      const inCgroup = s.cgroup ? readFileSync(s.cgroup + '/cgroup.procs', 'utf8').split('\\n').filter(Boolean).map(Number) : [];
      pids = [...new Set([s.pid, ...descendants(s.pid).filter((d) => d.alive).map((d) => d.pid), ...inCgroup])];
      await sleep(10);
    }
    out.push({ id: s.id, pids, cgroup: s.cgroup ?? null });
  }
  console.log(JSON.stringify(out));
  process.stdin.on('data', (d) => {
    if (String(d).includes('throw')) setImmediate(() => { throw new Error('the host fails'); });
    else process.exit(0);
  });
})();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  cleanupPid(child.pid);
  const line = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout?.on('data', (d) => {
      buf += String(d);
      if (buf.includes('\n')) resolve(buf.slice(0, buf.indexOf('\n')));
    });
    child.once('exit', (code) => reject(new Error(`the host exited with ${code} before printing`)));
  });
  const started = JSON.parse(line) as Started[];
  for (const s of started) for (const pid of s.pids) cleanupPid(pid);
  return { child, started };
}

function ended(child: ChildProcess): Promise<void> {
  return new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));
}

const TREE = `sh -c 'sleep 60 & sleep 60'`;
const allGone = (pids: number[]) => pids.every((p) => !isAlive(p));

describe('jobs of an in-memory registry end with their host, whole tree', () => {
  it('when the host is SIGKILLed; a job started with outliveHost survives it', async () => {
    const { child, started } = await host({}, [
      [TREE, {}],
      [TREE, { outliveHost: true }],
    ]);
    const [guarded, outliving] = started as [Started, Started];
    expect(guarded.pids.length).toBe(3);
    expect(outliving.pids.length).toBe(3);
    child.kill('SIGKILL');
    await ended(child);
    // Gone or a zombie: this machine's PID 1 reaps orphans slowly.
    await until(() => allGone(guarded.pids), 15_000, 'the guarded tree to end');
    // The guardian killed its jobs in one batch: the outliving one was never among them.
    expect(outliving.pids.every(isAlive)).toBe(true);
    for (const pid of outliving.pids) process.kill(pid, 'SIGKILL');
  });

  for (const how of ['exit', 'throw', 'SIGINT', 'SIGTERM'] as const) {
    it(`when the host ends by ${how === 'exit' ? 'process.exit' : how === 'throw' ? 'an uncaught error' : how}`, async () => {
      const { child, started } = await host({}, [[TREE, {}]]);
      if (how === 'exit' || how === 'throw') child.stdin?.write(`${how}\n`);
      else child.kill(how);
      await ended(child);
      await until(() => allGone(started[0]!.pids), 15_000, 'the tree to end');
    });
  }

  it('a daemon that left the tree (setsid) ends too, through the job’s cgroup', async (tc) => {
    // `; true`: the shell stays (no exec of its last command), so the tree is three processes.
    const { child, started } = await host({}, [[`(setsid sleep 60 &); sleep 60; true`, {}]]);
    const { cgroup, pids: tree } = started[0]!;
    // Without a cgroup nothing proves the daemon the job's: this host may not create cgroups.
    if (!cgroup) {
      child.kill('SIGKILL');
      tc.skip();
      return;
    }
    const leader = tree[0]!;
    let daemon = 0;
    await until(() => {
      const members = readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
      daemon = probe(members).find((p) => p.alive && p.pgid !== leader)?.pid ?? 0;
      return daemon !== 0;
    }, 5000, 'the daemon outside the job’s group');
    cleanupPid(daemon);
    const pids = [...tree, daemon];
    child.kill('SIGKILL');
    await ended(child);
    await until(() => allGone(pids), 15_000, 'the job and its daemon to end');
  });
});

describe('jobs another host can reach outlive their host', () => {
  it('a pipe-mode job of a registry with a state directory lives on, and the next host kills it', async () => {
    const state = tempDir();
    const { child, started } = await host({ stateDir: state, durable: false }, [[TREE, {}]]);
    const job = started[0]!;
    child.kill('SIGKILL');
    await ended(child);
    // The guardian is not involved: there is nothing of this host's to wait for but a look.
    expect(job.pids.every(isAlive)).toBe(true);
    const next = await ProcessRegistry.open({ stateDir: state });
    try {
      expect(await next.poll(job.id)).toMatchObject({ status: 'running', detached: true });
      expect((await next.kill(job.id, { graceMs: 500 })).outcome).toBe('killed');
      await until(() => allGone(job.pids), 10_000, 'the job to end');
    } finally {
      await next.close();
    }
    expect(readFileSync(join(state, 'checkpoint.json'), 'utf8')).toContain(job.id);
  });
});
