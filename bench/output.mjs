// Benchmarks for DESIGN section 9's output, latency and spawn targets: the registry against
// Node's child_process, side by side in one run.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessRegistry } from '../dist/index.mjs';
import { execa } from 'execa';
import { fmt, median, ratio, ROOT, table } from './lib.mjs';

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

let floorsBuilt = false;
/** Runs the Rust floors example (see `crates/procward-core/examples/floors.rs`), built once per run so it is never stale. */
function floors(...args) {
  const exe = join(process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target'), 'release', 'examples', 'floors');
  if (!floorsBuilt) execFileSync('cargo', ['build', '--release', '-q', '-p', 'procward-core', '--example', 'floors'], { cwd: ROOT, stdio: 'inherit' });
  floorsBuilt = true;
  return execFileSync(exe, args, { encoding: 'utf8' }).trim().split(' ').map(Number);
}

export async function throughputBench({ bytes = 1_000_000_000, rounds = 3 } = {}) {
  const cmd = `head -c ${bytes} /dev/zero`;
  const r = await ProcessRegistry.open();
  const runs = { node: [], procward: [], rust: [], splice: [] };
  for (let i = 0; i < rounds; i++) {
    let t = nowNs();
    await nodeRun(cmd, () => {});
    runs.node.push(Number(nowNs() - t) / 1e6);
    t = nowNs();
    const s = await r.spawn(cmd);
    await r.wait(s.id);
    runs.procward.push(Number(nowNs() - t) / 1e6);
    runs.rust.push(floors('read', cmd)[0] / 1e6);
    runs.splice.push(floors('splice', cmd)[0] / 1e6);
  }
  await r.close();
  const [n, p, f, z] = [median(runs.node), median(runs.procward), median(runs.rust), median(runs.splice)];
  const mbps = (ms) => ((bytes / 1e6) / (ms / 1000)).toFixed(0);
  const cell = (ms) => `${fmt(ms)} ms (${mbps(ms)} MB/s)`;
  return table(`Output throughput: \`${cmd}\` — median of ${rounds}`, ['Node child_process data events', 'procward registry', 'Rust read() floor', 'Rust splice() floor', 'procward / Node', 'procward / read floor', 'procward / splice floor'], [
    [cell(n), cell(p), cell(f), cell(z), ratio(n, p), ratio(f, p), ratio(z, p)],
  ]) + '\nRatios are throughput ratios (higher is faster for procward). Both floors read the same pipe procward reads: enlarged to 256 KiB with `F_SETPIPE_SZ`; the read() floor copies into a 256 KiB buffer and drops it, the splice() floor moves pages to /dev/null without a copy. procward copies every byte into its rolling tail.\n';
}

/** Latency from the moment the job's last program prints its clock (then exits) to the host noticing. */
export async function latencyBench({ rounds = 15 } = {}) {
  const r = await ProcessRegistry.open();
  const stamp = `sleep 0.2; exec date +%s%N`;
  const orphan = `sleep 30 & date +%s%N; exit 0`;
  const node = [];
  const reg = [];
  const orph = [];
  const rust = [];
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
    rust.push(floors('exit', stamp)[0] / 1e6);
    const o = await r.spawn(orphan);
    const wo = await r.wait(o.id);
    orph.push(wallMs() - stampMs(wo.outputPreview));
    for (const line of (await r.list()).filter((x) => x.id === o.id)) process.kill(-line.pid, 'SIGKILL');
  }
  await r.close();
  return table(`Exit notice latency (ms from the job's last print to the host noticing) — median of ${rounds}`, ['Node exit event', 'procward wait', 'blocking waitpid (std Rust floor)', 'orphan case: procward wait while a grandchild holds the pipe'], [
    [fmt(median(node)), fmt(median(reg)), fmt(median(rust)), fmt(median(orph))],
  ]) + '\nClock reads: `date +%s%N` in the job vs `performance.timeOrigin + performance.now()` in the host (the Rust floor reads the wall clock after `waitpid` returns).\n';
}

/** Spawns and reaps `jobs` jobs with `run`, `parallel` workers each running one after another; total ms. */
async function pool(jobs, parallel, run) {
  const t = nowNs();
  await Promise.all(Array.from({ length: parallel }, async (_, w) => {
    for (let i = w; i < jobs; i += parallel) await run();
  }));
  return Number(nowNs() - t) / 1e6;
}

export async function spawnBench({ jobs = 200, rounds = 5 } = {}) {
  const state = mkdtempSync(join(tmpdir(), 'procward-bench-'));
  // The same durable registry with its state directory in memory (tmpfs): what the job's
  // files cost on this machine's disk, apart from procward's own work.
  const shmState = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/procward-bench-') : mkdtempSync(join(tmpdir(), 'procward-bench-'));
  const eph = await ProcessRegistry.open();
  const dur = await ProcessRegistry.open({ stateDir: state });
  const durShm = await ProcessRegistry.open({ stateDir: shmState });
  const runners = {
    node: () => nodeRun('true', () => {}),
    execa: () => execa('/bin/bash', ['-c', 'true']),
    ephemeral: async () => eph.wait((await eph.spawn('true')).id),
    durable: async () => dur.wait((await dur.spawn('true')).id),
    durableShm: async () => durShm.wait((await durShm.spawn('true')).id),
  };
  const rows = [];
  for (const parallel of [1, 8]) {
    const runs = { node: [], execa: [], rust: [], ephemeral: [], durable: [], durableShm: [] };
    const ratios = { ephemeral: [], durable: [], durableShm: [] };
    // Interleaved rounds, each contender once per round; the ratios are taken within a
    // round (the disk and CPU of this shared machine drift between rounds), then the median.
    for (let round = 0; round < rounds; round++) {
      for (const [name, run] of Object.entries(runners)) runs[name].push(await pool(jobs, parallel, run));
      runs.rust.push(floors('spawn', String(jobs), String(parallel))[0] / 1e6);
      for (const k of ['ephemeral', 'durable', 'durableShm']) ratios[k].push(runs[k][round] / runs.node[round]);
    }
    const m = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)]));
    const r = (k) => `${median(ratios[k]).toFixed(2)}×`;
    rows.push([parallel === 1 ? 'sequential' : `${parallel}-way`, fmt(m.node), fmt(m.execa), fmt(m.rust), fmt(m.ephemeral), fmt(m.durable), fmt(m.durableShm), r('ephemeral'), r('durable'), r('durableShm')]);
  }
  await eph.close();
  await dur.close();
  await durShm.close();
  rmSync(state, { recursive: true, force: true });
  rmSync(shmState, { recursive: true, force: true });
  return (
    table(`Spawn and reap of ${jobs} \`bash -c true\` — total ms, median of ${rounds} rounds`, ['', 'Node child_process.spawn', 'execa', 'std Rust', 'procward ephemeral', 'procward durable (supervisor + log + checkpoint)', 'durable, state dir on tmpfs', 'ephemeral / Node', 'durable / Node', 'durable on tmpfs / Node'], rows) +
    '\nRatios: median of the per-round ratios (each round runs every contender once). A durable job\'s supervisor creates its session directory, session.json, supervisor.json and exit.json (and output.log once there is output), off the host\'s event loop; on a disk where each new inode costs 0.3-1 ms, they still bound the 8-way rate.\n'
  );
}
