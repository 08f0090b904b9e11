// How cost grows with the work (issue 14): spawn+wait, list() and open() against the number
// of sessions in a state directory, host memory per finished session, and readLog pages
// against their size on a large durable log (with the event loop's worst stall). Prints a
// table per axis; each row is one size, so the growth reads down a column.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { identity, ProcessRegistry } from '../dist/index.mjs';
import { fmt, median, ratio, table } from './lib.mjs';

const BIG = { maxSessions: 1_000_000, finishedTtlMs: 24 * 3600_000 };

/** A state directory holding `n` finished sessions written by a host that is gone. */
function stateWith(n) {
  const state = mkdtempSync(join(tmpdir(), 'procward-growth-'));
  const now = Date.now();
  const writer = { pid: 999_999, startTime: '1', bootId: identity(process.pid).bootId };
  const sessions = [];
  for (let i = 0; i < n; i++) {
    sessions.push({
      id: `proc_${(0x100000000000 + i).toString(16)}`,
      command: `make test # ${i}`,
      cwd: '/tmp',
      pid: null,
      identity: null,
      startedAt: now - 60_000,
      exitedAt: now - 30_000,
      status: 'exited',
      exitCode: 0,
      signal: null,
      reason: 'exited',
      terminationSource: 'process',
      durable: false,
      logPath: null,
      exitPath: null,
      writer,
      updatedAt: now - 30_000,
    });
  }
  writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions }), { mode: 0o600 });
  return state;
}

async function scaleRow(n, jobs) {
  const state = stateWith(n);
  const text = readFileSync(join(state, 'checkpoint.json'), 'utf8');
  let t = performance.now();
  JSON.parse(readFileSync(join(state, 'checkpoint.json'), 'utf8'));
  const parse = performance.now() - t;
  t = performance.now();
  const r = await ProcessRegistry.open({ stateDir: state, durable: false, ...BIG });
  const open = performance.now() - t;
  const lists = [];
  for (let i = 0; i < 5; i++) {
    t = performance.now();
    await r.list();
    lists.push(performance.now() - t);
  }
  t = performance.now();
  for (let i = 0; i < jobs; i++) await r.wait((await r.spawn('true')).id);
  const spawn = (performance.now() - t) / jobs;
  await r.close();
  rmSync(state, { recursive: true, force: true });
  return { n, bytes: text.length, parse, open, list: median(lists), spawn };
}

export async function scaleBench({ sizes = [50, 1000, 5000, 10_000], jobs = 100 } = {}) {
  const rows = [];
  for (const n of sizes) rows.push(await scaleRow(n, jobs));
  const base = rows[0];
  return (
    table(`Scale: a state directory of N finished sessions (non-durable jobs) — spawn+wait is the mean of ${jobs}, list() the median of 5`, ['sessions', 'checkpoint.json', 'read + parse', 'open()', 'open / parse', 'list()', 'spawn+wait', `spawn+wait / at ${base.n}`], rows.map((r) => [
      String(r.n), `${(r.bytes / 1e6).toFixed(2)} MB`, `${fmt(r.parse)} ms`, `${fmt(r.open)} ms`, ratio(r.open, r.parse), `${fmt(r.list)} ms`, `${fmt(r.spawn)} ms`, ratio(r.spawn, base.spawn),
    ])) + '\n'
  );
}

/** Heap and RSS per finished session, measured in a child with `--expose-gc`. */
export async function memoryBench({ n = 5000 } = {}) {
  const script = `
    import { ProcessRegistry } from ${JSON.stringify(join(import.meta.dirname, '..', 'dist', 'index.mjs'))};
    const r = await ProcessRegistry.open({ maxSessions: 1e6, finishedTtlMs: 864e5 });
    for (let i = 0; i < 50; i++) await r.wait((await r.spawn('true')).id);
    gc(); const h0 = process.memoryUsage();
    for (let i = 0; i < ${n}; i++) await r.wait((await r.spawn('echo ' + i)).id);
    gc(); const h1 = process.memoryUsage();
    console.log(JSON.stringify({ heap: (h1.heapUsed - h0.heapUsed) / ${n}, rss: (h1.rss - h0.rss) / ${n} }));
    await r.close();`;
  const out = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' }));
  return table(`Host memory per finished session (${n} in-memory sessions of \`echo i\`, after gc)`, ['JS heap', 'RSS'], [
    [`${(out.heap / 1024).toFixed(1)} KB`, `${(out.rss / 1024).toFixed(1)} KB`],
  ]) + '\n';
}

/**
 * Pages from the end of a durable log of `seq 1 lines` against the page's size, with the
 * event loop's worst stall while the page is read. A size whose page takes longer than
 * `budgetMs` ends the series (larger ones are reported as skipped).
 */
export async function pagingBench({ lines = 2_400_000, limits = [1000, 10_000, 20_000, 100_000], budgetMs = 20_000 } = {}) {
  const state = mkdtempSync(join(tmpdir(), 'procward-growth-log-'));
  const r = await ProcessRegistry.open({ stateDir: state, logMaxBytes: 1024 * 1024 * 1024 });
  const s = await r.spawn(`seq 1 ${lines}`);
  await r.wait(s.id);
  const rows = [];
  let over = false;
  for (const limit of limits) {
    if (over) {
      rows.push([String(limit), 'skipped', '', '']);
      continue;
    }
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const t = performance.now();
    const page = await r.readLog(s.id, { limit });
    const ms = performance.now() - t;
    h.disable();
    rows.push([String(limit), `${fmt(ms)} ms`, `${(h.max / 1e6).toFixed(1)} ms`, `${(page.text.length / 1e6).toFixed(2)} MB`]);
    over = ms > budgetMs;
  }
  await r.close();
  rmSync(state, { recursive: true, force: true });
  return table(`Paging the end of a durable log of \`seq 1 ${lines}\` (${(lines * 7.9 / 1e6).toFixed(0)} MB) — one readLog per row`, ['limit (lines)', 'readLog', 'worst event-loop stall', 'page'], rows) + '\n';
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const which = process.argv.slice(2);
  const all = { scale: scaleBench, memory: memoryBench, paging: pagingBench };
  for (const [name, fn] of Object.entries(all)) if (!which.length || which.includes(name)) process.stdout.write(await fn());
  process.exit(0);
}
