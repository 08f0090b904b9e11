// Shared benchmark helpers: process trees to measure against, medians, and the table.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { descendants, probe } from '../dist/index.mjs';

export const ROOT = join(import.meta.dirname, '..');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts `script` in its own process group and waits until it has `count` live descendants. */
export async function startTree(script, count) {
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' });
  child.unref();
  const pgid = child.pid;
  for (let i = 0; i < 2000; i++) {
    const d = descendants(pgid).filter((p) => p.alive);
    if (d.length >= count) return { pgid, members: d };
    await sleep(10);
  }
  throw new Error(`tree of ${count} did not start`);
}

/** Kills a group the benchmark created (by group id, never by name). */
export function killGroup(pgid) {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {}
}

/**
 * Resolves once every PID has left the process table (also as a zombie), at most `ms`
 * later. PID 1 here reaps orphans only every 1-2 s; a table full of zombies would slow the
 * next measurement of anything that reads the whole table.
 */
export async function reaped(pids, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end && probe(pids).some((p) => p.exists)) await sleep(50);
}

/** Resolves once every PID is gone or a zombie. */
export async function allDead(pids) {
  for (;;) {
    if (probe(pids).every((p) => !p.alive)) return;
    await new Promise((r) => setImmediate(r));
  }
}

/** Median latency in milliseconds of each task, measured with tinybench. */
export async function medians(tasks, { time = 400, iterations = 10 } = {}) {
  const bench = new Bench({ time, iterations, warmupIterations: 3 });
  for (const [name, fn] of Object.entries(tasks)) bench.add(name, fn);
  await bench.run();
  return Object.fromEntries(bench.tasks.map((t) => [t.name, t.result.latency.p50]));
}

/** Median of a list of numbers. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Runs the std-only Rust floor example and returns the median ms of one pass. */
export function rustProbeFloor(pids, rounds = 200) {
  const exe = join(process.env.CARGO_TARGET_DIR ?? join(ROOT, 'target'), 'release', 'examples', 'probe_floor');
  if (!existsSync(exe)) execFileSync('cargo', ['build', '--release', '-q', '-p', 'procward-core', '--example', 'probe_floor'], { cwd: ROOT, stdio: 'inherit' });
  const [ns] = execFileSync(exe, [String(rounds), ...pids.map(String)], { encoding: 'utf8' }).trim().split(' ');
  return Number(ns) / 1e6;
}

export const fmt = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(4));
export const ratio = (a, b) => `${(a / b).toFixed(2)}×`;

/** Prints a markdown table. */
export function table(title, header, rows) {
  const lines = [`### ${title}`, '', `| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`), ''];
  return lines.join('\n');
}
