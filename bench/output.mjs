// Benchmarks for DESIGN section 9's output, latency and spawn targets: the registry against
// Node's child_process, side by side in one run.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessRegistry } from '../dist/index.mjs';
import { fmt, median, ratio, table } from './lib.mjs';

const nowNs = () => process.hrtime.bigint();
/** Wall clock in milliseconds with sub-millisecond precision (comparable with `date +%s%N`). */
const wallMs = () => performance.timeOrigin + performance.now();
const stampMs = (text) => Number(BigInt(text.trim()) / 1000n) / 1000;

function nodeRun(command, onData) {
  return new Promise((resolve) => {
    const child = spawn('/bin/bash', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', resolve);
  });
}

export async function throughputBench({ bytes = 300_000_000, rounds = 3 } = {}) {
  const cmd = `head -c ${bytes} /dev/zero`;
  const r = await ProcessRegistry.open();
  const runs = { node: [], procward: [] };
  for (let i = 0; i < rounds; i++) {
    let t = nowNs();
    await nodeRun(cmd, () => {});
    runs.node.push(Number(nowNs() - t) / 1e6);
    t = nowNs();
    const s = await r.spawn(cmd);
    await r.wait(s.id);
    runs.procward.push(Number(nowNs() - t) / 1e6);
  }
  await r.close();
  const [n, p] = [median(runs.node), median(runs.procward)];
  const mbps = (ms) => ((bytes / 1e6) / (ms / 1000)).toFixed(0);
  return table(`Output throughput: ${bytes / 1e6} MB through stdout — median of ${rounds}`, ['Node child_process data events', 'procward registry', 'throughput ratio (procward / Node)'], [
    [`${fmt(n)} ms (${mbps(n)} MB/s)`, `${fmt(p)} ms (${mbps(p)} MB/s)`, ratio(n, p)],
  ]);
}

/** Latency from the moment the job's last program prints its clock (then exits) to the host noticing. */
export async function latencyBench({ rounds = 15 } = {}) {
  const r = await ProcessRegistry.open();
  const stamp = `sleep 0.1; exec date +%s%N`;
  const orphan = `sleep 30 & date +%s%N; exit 0`;
  const node = [];
  const reg = [];
  const orph = [];
  for (let i = 0; i < rounds; i++) {
    let out = '';
    await new Promise((resolve) => {
      const child = spawn('/bin/bash', ['-c', stamp], { stdio: ['ignore', 'pipe', 'ignore'] });
      child.stdout.on('data', (d) => (out += d));
      child.on('exit', () => {
        node.push(wallMs() - stampMs(out));
        resolve();
      });
    });
    const s = await r.spawn(stamp);
    const w = await r.wait(s.id);
    reg.push(wallMs() - stampMs(w.outputPreview));
    const o = await r.spawn(orphan);
    const wo = await r.wait(o.id);
    orph.push(wallMs() - stampMs(wo.outputPreview));
    for (const line of (await r.list()).filter((x) => x.id === o.id)) process.kill(-line.pid, 'SIGKILL');
  }
  await r.close();
  return table(`Exit notice latency (ms from the job's last print to the host noticing) — median of ${rounds}`, ['Node exit event', 'procward wait', 'orphan case: procward wait while a grandchild holds the pipe'], [
    [fmt(median(node)), fmt(median(reg)), fmt(median(orph))],
  ]) + '\nClock reads: `date +%s%N` in the job vs `performance.timeOrigin + performance.now()` in the host.\n';
}

export async function spawnBench({ jobs = 200 } = {}) {
  const state = mkdtempSync(join(tmpdir(), 'procward-bench-'));
  const eph = await ProcessRegistry.open();
  const dur = await ProcessRegistry.open({ stateDir: state });
  const time = async (fn) => {
    const t = nowNs();
    for (let i = 0; i < jobs; i++) await fn();
    return Number(nowNs() - t) / 1e6;
  };
  const nodeMs = await time(() => nodeRun('true', () => {}));
  const ephMs = await time(async () => eph.wait((await eph.spawn('true')).id));
  const durMs = await time(async () => dur.wait((await dur.spawn('true')).id));
  await eph.close();
  await dur.close();
  rmSync(state, { recursive: true, force: true });
  return table(`Spawn and reap of ${jobs} \`true\`, one after another — total ms`, ['Node child_process.spawn', 'procward ephemeral', 'procward durable (log + supervisor + checkpoint)', 'ephemeral / Node', 'durable / Node'], [
    [fmt(nodeMs), fmt(ephMs), fmt(durMs), ratio(ephMs, nodeMs), ratio(durMs, nodeMs)],
  ]);
}
