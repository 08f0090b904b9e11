// Bulk kill (issue 14): `killAll` of N jobs against one tree kill plus the grace period.
// The anchor is one registry kill of a normal 100-process tree with the same grace; the
// target is killAll of 500 jobs within 3× (anchor + grace). Jobs are `sleep 600; true`
// shells (they end on SIGTERM), pipe-mode and durable, each task in its own registry with
// a state directory in a temporary folder.
//
// Usage: node bench/bulkkill.mjs [N, default 500]   (or through bench/run.mjs bulkkill)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { descendants, ProcessRegistry } from '../dist/index.mjs';
import { allDead, fmt, killGroup, median, ratio, sleep, table } from './lib.mjs';

const GRACE_MS = 200;

/** Opens a registry on a fresh state directory, runs `fn`, then closes and removes it. */
async function withRegistry(fn) {
  const stateDir = mkdtempSync(join(tmpdir(), 'procward-bulkkill-'));
  const registry = await ProcessRegistry.open({ stateDir, maxSessions: 10_000 });
  try {
    return await fn(registry);
  } finally {
    await registry.close();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** One registry kill of a normal 100-process tree, until every member is dead: ms. */
async function oneTreeKill() {
  return withRegistry(async (registry) => {
    const s = await registry.spawn('i=0; while [ $i -lt 99 ]; do sleep 600 & i=$((i+1)); done; wait');
    try {
      for (let t = 0; t < 500 && descendants(s.pid).filter((p) => p.alive).length < 99; t++) await sleep(10);
      const pids = [s.pid, ...descendants(s.pid).map((p) => p.pid)];
      const t0 = performance.now();
      await registry.kill(s.id, { graceMs: GRACE_MS });
      await allDead(pids);
      return performance.now() - t0;
    } finally {
      killGroup(s.pid);
    }
  });
}

/** killAll of `n` jobs of one task until it resolves: ms, and outcomes by kind. */
async function killAllOf(n, durable) {
  return withRegistry(async (registry) => {
    const sessions = [];
    try {
      for (let i = 0; i < n; i++) sessions.push(await registry.spawn('sleep 600; true', { taskId: 'bulk', durable }));
      // Every job has started its sleep (a durable job's pid is its supervisor, above the shell).
      const depth = durable ? 2 : 1;
      for (let t = 0; t < 1000 && !sessions.every((s) => descendants(s.pid).filter((p) => p.alive).length >= depth); t++) await sleep(10);
      const t0 = performance.now();
      const out = await registry.killAll({ taskId: 'bulk', graceMs: GRACE_MS });
      const ms = performance.now() - t0;
      const outcomes = {};
      for (const o of out) {
        const k = o.result?.outcome ?? o.error.code;
        outcomes[k] = (outcomes[k] ?? 0) + 1;
      }
      return { ms, outcomes };
    } finally {
      for (const s of sessions) killGroup(s.pid);
    }
  });
}

export async function bulkKillBench({ n = 500, rounds = 3 } = {}) {
  const anchors = [];
  for (let i = 0; i < rounds; i++) anchors.push(await oneTreeKill());
  const anchor = median(anchors);
  const budget = anchor + GRACE_MS;
  const rows = [['one tree kill (100 processes, registry)', '1', fmt(anchor), '', '']];
  for (const durable of [false, true]) {
    const { ms, outcomes } = await killAllOf(n, durable);
    const seen = Object.entries(outcomes).map(([k, v]) => `${v} ${k}`).join(', ');
    rows.push([`killAll, ${durable ? 'durable' : 'pipe-mode'} jobs`, `${n}`, fmt(ms), ratio(ms, budget), seen]);
  }
  return table(
    `Bulk kill, grace ${GRACE_MS} ms — ms until killAll resolves (anchor: median of ${rounds} tree kills until every member is dead)`,
    ['kill', 'jobs', 'ms', `vs (tree kill + grace = ${fmt(budget)} ms), target ≤ 3×`, 'outcomes'],
    rows,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await bulkKillBench({ n: Number(process.argv[2] ?? 500) }));
