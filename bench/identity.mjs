// Benchmarks for DESIGN section 9's identity, tree and kill targets: procward against
// the npm tools agents use today and against the kernel floor, side by side in one run.
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import pidtree from 'pidtree';
import pidusage from 'pidusage';
import psList from 'ps-list';
import psTree from 'ps-tree';
import treeKill from 'tree-kill';
import { descendants, identity, killTree, ProcessRegistry, probe } from '../dist/index.mjs';
import { allDead, fmt, killGroup, median, medians, ratio, reaped, rustProbeFloor, sleep, startTree, table } from './lib.mjs';

const psTreeAsync = promisify(psTree);
const treeKillAsync = promisify(treeKill);

export async function probeBench() {
  const tree = await startTree('i=0; while [ $i -lt 1000 ]; do sleep 600 & i=$((i+1)); done; wait', 1000);
  const rows = [];
  try {
    for (const n of [1, 100, 1000]) {
      const pids = tree.members.slice(0, n).map((p) => p.pid);
      const m = await medians(
        {
          'procward probe': () => probe(pids),
          'process.kill(pid, 0)': () => {
            for (const p of pids) process.kill(p, 0);
          },
          'Node readFileSync /proc/<pid>/stat': () => {
            for (const p of pids) readFileSync(`/proc/${p}/stat`, 'latin1');
          },
          'ps-list': () => psList(),
          pidusage: () => pidusage(pids),
        },
        { time: n === 1000 ? 600 : 300 },
      );
      const floor = rustProbeFloor(pids);
      const ours = m['procward probe'];
      rows.push([`${n}`, fmt(floor), fmt(ours), ratio(ours, floor), fmt(m['process.kill(pid, 0)']), fmt(m['Node readFileSync /proc/<pid>/stat']), fmt(m.pidusage), fmt(m['ps-list']), ratio(m['ps-list'], ours)]);
    }
  } finally {
    killGroup(tree.pgid);
    await reaped(tree.members.map((p) => p.pid));
  }
  return table(
    'Probe (identity + state) of live PIDs — median ms per call',
    ['PIDs', 'Rust std floor', 'procward probe', 'procward / floor', 'process.kill(pid,0)¹', 'Node /proc read', 'pidusage', 'ps-list', 'ps-list / procward'],
    rows,
  ) + '\n¹ liveness only: no identity, and a zombie counts as alive.\n';
}

export async function treeBench() {
  const script = 'for i in 1 2 3 4 5 6 7 8 9 10; do (for j in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do sleep 600 & done; wait) & done; wait';
  const tree = await startTree(script, 150);
  let m;
  try {
    m = await medians(
      {
        'procward descendants': () => descendants(tree.pgid),
        pidtree: () => pidtree(tree.pgid),
        'ps-tree': () => psTreeAsync(tree.pgid),
      },
      { time: 500 },
    );
  } finally {
    killGroup(tree.pgid);
    await reaped(tree.members.map((p) => p.pid));
  }
  const ours = m['procward descendants'];
  return table('Descendants of a 150-process tree — median ms per call', ['procward descendants', 'pidtree', 'ps-tree', 'pidtree / procward', 'ps-tree / procward'], [
    [fmt(ours), fmt(m.pidtree), fmt(m['ps-tree']), ratio(m.pidtree, ours), ratio(m['ps-tree'], ours)],
  ]);
}

/**
 * The tree every kill row measures: a shell and 99 `sleep 600` children, 100 processes in
 * one process group (with `deaf`, every one of them ignores SIGTERM: `sleep` inherits the
 * ignored disposition).
 */
const treeScript = (deaf) => `${deaf ? "trap '' TERM; " : ''}i=0; while [ $i -lt 99 ]; do sleep 600 & i=$((i+1)); done; wait`;

/**
 * Milliseconds from the call of `how` until every PID of `pids` is gone or a zombie, by the
 * same poll for every row: probe() of all of them once per event-loop turn.
 */
async function timeUntilDead(pids, how) {
  const t0 = performance.now();
  await how();
  await allDead(pids);
  return performance.now() - t0;
}

/** Starts the tree outside any registry, and times `how(pgid, identity)` killing it. */
async function timeKill(deaf, how) {
  const tree = await startTree(treeScript(deaf), 99);
  const pids = [tree.pgid, ...tree.members.map((p) => p.pid)];
  try {
    return await timeUntilDead(pids, () => how(tree.pgid, identity(tree.pgid)));
  } finally {
    killGroup(tree.pgid);
    await reaped(pids);
  }
}

/** Starts the tree as a job of `registry`, and times `registry.kill` until it is dead. */
async function timeRegistryKill(registry) {
  const s = await registry.spawn(treeScript(false));
  for (let t = 0; t < 500 && descendants(s.pid).filter((p) => p.alive).length < 99; t++) await sleep(10);
  const pids = [s.pid, ...descendants(s.pid).map((p) => p.pid)];
  try {
    return { ms: await timeUntilDead(pids, () => registry.kill(s.id, { graceMs: 200 })), cgroup: Boolean(s.cgroup) };
  } finally {
    killGroup(s.pid);
    await reaped(pids);
  }
}

export async function killBench({ rounds = 5 } = {}) {
  const rows = [];
  let floorNormal = 0;
  for (const deaf of [false, true]) {
    const signal = deaf ? 'SIGKILL' : 'SIGTERM';
    const runs = { floor: [], procward: [], 'tree-kill': [] };
    for (let i = 0; i < rounds; i++) {
      runs.floor.push(await timeKill(deaf, async (pgid) => process.kill(-pgid, signal)));
      runs.procward.push(await timeKill(deaf, (_pgid, id) => killTree(id, { graceMs: 200 })));
      runs['tree-kill'].push(await timeKill(deaf, (pgid) => treeKillAsync(pgid, signal)));
    }
    const [f, p, t] = [median(runs.floor), median(runs.procward), median(runs['tree-kill'])];
    if (!deaf) floorNormal = f;
    rows.push([
      deaf ? 'ignores SIGTERM (grace 200 ms), killTree' : 'normal, killTree',
      `${fmt(f)} (kill(-pgid, ${signal}))`,
      fmt(p),
      deaf ? `${fmt(p - 200)} ms over the grace` : ratio(p, f),
      fmt(t),
      ratio(t, p),
    ]);
  }
  // Through the registry: the same normal tree as a job, killed by registry.kill, without
  // containment and (Linux cgroup v2, when the host may create cgroups) in its own cgroup.
  for (const containment of [false, true]) {
    const registry = await ProcessRegistry.open({ containment });
    const times = [];
    let inCgroup = false;
    for (let i = 0; i < rounds; i++) {
      const { ms, cgroup } = await timeRegistryKill(registry);
      times.push(ms);
      inCgroup = cgroup;
    }
    await registry.close();
    const where = containment ? (inCgroup ? 'in a cgroup' : 'containment on, but no cgroup on this host') : 'no cgroup';
    rows.push([`normal, registry.kill (${where})`, `${fmt(floorNormal)} (kill(-pgid, SIGTERM))`, fmt(median(times)), ratio(median(times), floorNormal), '', '']);
  }
  return (
    table(`Kill of a 100-process tree until every member is dead — median ms of ${rounds} runs`, ['tree', 'floor', 'procward', 'procward vs floor', 'tree-kill', 'tree-kill / procward'], rows) +
    '\nEach tree is a shell and 99 `sleep` children in one process group, started fresh for every run; every column is the time from the call until every one of the 100 PIDs is gone or a zombie, by the same poll (probe() of all of them once per event-loop turn) after the call returns. ' +
    'Floor: `process.kill(-pgid, signal)`, one signal to the group, nothing read before it (the least the kernel can be asked to do; it reaches no process that left the group). ' +
    'procward: `killTree(identity, { graceMs: 200 })`, which snapshots the tree before its first signal, checks every identity and waits until each is dead before it resolves; `registry.kill` adds the session\'s bookkeeping. ' +
    'For the SIGTERM-ignoring tree the floor sends SIGKILL at once (no grace); tree-kill is given the same signal as the floor.\n'
  );
}
