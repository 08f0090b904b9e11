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
import { allDead, fmt, killGroup, median, medians, ratio, reaped, rustProbeFloor, startTree, table } from './lib.mjs';

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

/** Time from the call until every member of a 100-process tree is gone or a zombie. */
async function timeKill(ignoreTerm, how) {
  const trap = ignoreTerm ? `trap '' TERM; ` : '';
  const tree = await startTree(`${trap}i=0; while [ $i -lt 99 ]; do sh -c "${trap}sleep 600" & i=$((i+1)); done; wait`, 99 * (ignoreTerm ? 2 : 1));
  const pids = [tree.pgid, ...tree.members.map((p) => p.pid)];
  const id = identity(tree.pgid);
  const t0 = performance.now();
  try {
    await how(tree.pgid, id);
    await allDead(pids);
    return performance.now() - t0;
  } finally {
    killGroup(tree.pgid);
  }
}

export async function killBench({ rounds = 5 } = {}) {
  const rows = [];
  for (const ignoreTerm of [false, true]) {
    const signal = ignoreTerm ? 'SIGKILL' : 'SIGTERM';
    const runs = { floor: [], procward: [], 'tree-kill': [] };
    for (let i = 0; i < rounds; i++) {
      runs.floor.push(await timeKill(ignoreTerm, async (pgid) => process.kill(-pgid, signal)));
      runs.procward.push(await timeKill(ignoreTerm, (_pgid, id) => killTree(id, { graceMs: 200 })));
      runs['tree-kill'].push(await timeKill(ignoreTerm, (pgid) => treeKillAsync(pgid, signal)));
    }
    const [f, p, t] = [median(runs.floor), median(runs.procward), median(runs['tree-kill'])];
    rows.push([
      ignoreTerm ? 'ignores SIGTERM (grace 200 ms)' : 'normal',
      `${fmt(f)} (kill(-pgid, ${signal}))`,
      fmt(p),
      ignoreTerm ? `${fmt(p - 200)} ms over the grace` : ratio(p, f),
      fmt(t),
      ratio(t, p),
    ]);
  }
  // Containment (Linux cgroup v2, when the host may create cgroups): the same normal tree,
  // started through the registry so it runs in its own cgroup, killed through the registry.
  const registry = await ProcessRegistry.open();
  const contained = [];
  let hasCgroup = false;
  for (let i = 0; i < rounds; i++) {
    const s = await registry.spawn('i=0; while [ $i -lt 99 ]; do sleep 600 & i=$((i+1)); done; wait');
    hasCgroup = Boolean(s.cgroup);
    for (let t = 0; t < 500 && descendants(s.pid).filter((p) => p.alive).length < 99; t++) await new Promise((r) => setTimeout(r, 10));
    const pids = [s.pid, ...descendants(s.pid).map((p) => p.pid)];
    const t0 = performance.now();
    await registry.kill(s.id, { graceMs: 200 });
    await allDead(pids);
    contained.push(performance.now() - t0);
    killGroup(s.pid);
  }
  await registry.close();
  const floorNormal = Number.parseFloat(rows[0][1]);
  rows.push([`normal, through the registry${hasCgroup ? ' in a cgroup' : ' (no cgroup on this host)'}`, rows[0][1], fmt(median(contained)), ratio(median(contained), floorNormal), '', '']);
  return table('Kill of a 100-process tree until every member is dead — median ms of 5 runs', ['tree', 'floor', 'procward killTree', 'procward vs floor', 'tree-kill', 'tree-kill / procward'], rows) +
    '\nThe floor for the SIGTERM-ignoring tree sends SIGKILL at once (no grace); tree-kill is given the same signal as the floor.\n';
}
