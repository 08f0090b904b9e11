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

// Without cgroups: open() sweeps the empty cgroups every earlier job left on the machine,
// a cost that depends on what else ran there, not on the state directory's size.
const BIG = { maxSessions: 1_000_000, finishedTtlMs: 24 * 3600_000, containment: false };

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
    table(`Scale: a state directory of N finished sessions (non-durable jobs, no cgroups) — spawn+wait is the mean of ${jobs}, list() the median of 5`, ['sessions', 'checkpoint.json', 'read + parse', 'open()', 'open / parse', 'list()', 'spawn+wait', `spawn+wait / at ${base.n}`], rows.map((r) => [
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

/** Runs `read` with the event loop's delay monitored: its time, the worst stall and what it returned. */
async function stalls(read) {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const t = performance.now();
  const got = await read();
  const ms = performance.now() - t;
  h.disable();
  return { ms, stall: h.max / 1e6, got };
}

/**
 * Pages from the end of a durable log of `seq 1 lines` against the page's size, with the
 * event loop's worst stall while the page is read. The first row is the first page of the
 * log, which also builds its line index (one pass over the log); a size whose page takes
 * longer than `budgetMs` ends the series (larger ones are reported as skipped).
 */
export async function pagingBench({ lines = 2_400_000, limits = [1000, 10_000, 20_000, 100_000], budgetMs = 20_000 } = {}) {
  const state = mkdtempSync(join(tmpdir(), 'procward-growth-log-'));
  const r = await ProcessRegistry.open({ stateDir: state, logMaxBytes: 1024 * 1024 * 1024 });
  const s = await r.spawn(`seq 1 ${lines}`);
  await r.wait(s.id);
  const rows = [];
  let over = false;
  const first = await stalls(() => r.readLog(s.id, { limit: 1 }));
  rows.push(['1 (first page: builds the line index)', `${fmt(first.ms)} ms`, `${first.stall.toFixed(1)} ms`, '0.00 MB']);
  for (const limit of limits) {
    if (over) {
      rows.push([String(limit), 'skipped', '', '']);
      continue;
    }
    const { ms, stall, got } = await stalls(() => r.readLog(s.id, { limit }));
    rows.push([String(limit), `${fmt(ms)} ms`, `${stall.toFixed(1)} ms`, `${(got.text.length / 1e6).toFixed(2)} MB`]);
    over = ms > budgetMs;
  }
  const mid = await stalls(() => r.readLog(s.id, { offset: Math.floor(lines / 2), limit: 20_000 }));
  rows.push([`20000 from line ${Math.floor(lines / 2)}`, `${fmt(mid.ms)} ms`, `${mid.stall.toFixed(1)} ms`, `${(mid.got.text.length / 1e6).toFixed(2)} MB`]);
  await r.close();
  rmSync(state, { recursive: true, force: true });
  return table(`Paging a durable log of \`seq 1 ${lines}\` (${(lines * 7.9 / 1e6).toFixed(0)} MB) — one readLog per row, from the end unless said; pages are capped at 1 MiB`, ['limit (lines)', 'readLog', 'worst event-loop stall', 'page'], rows) + '\n';
}

/** Host RSS now, in MB. */
const rssMb = () => process.memoryUsage().rss / 1e6;

/**
 * A single line of `mb` MB with no line break: the first page (index build) and a page
 * from its start, with the host's RSS growth (the page is cut to its 1 MiB cap).
 */
export async function longLineBench({ mb = 200 } = {}) {
  const state = mkdtempSync(join(tmpdir(), 'procward-growth-line-'));
  const r = await ProcessRegistry.open({ stateDir: state, logMaxBytes: 4 * mb * 1e6 });
  const s = await r.spawn(`head -c ${mb * 1e6} /dev/zero | tr '\\0' x`);
  await r.wait(s.id, { timeoutMs: 600_000 });
  const rss0 = rssMb();
  const rows = [];
  for (const [name, opts] of [['last line (first page)', { limit: 1 }], ['first line', { offset: 0, limit: 10 }]]) {
    const { ms, stall, got } = await stalls(() => r.readLog(s.id, opts));
    rows.push([name, `${fmt(ms)} ms`, `${stall.toFixed(1)} ms`, `${(got.text.length / 1e6).toFixed(2)} MB`, `${(rssMb() - rss0).toFixed(0)} MB`]);
  }
  await r.close();
  rmSync(state, { recursive: true, force: true });
  return table(`A durable log of one ${mb} MB line — host RSS growth since the job ended`, ['page', 'readLog', 'worst event-loop stall', 'page text', 'RSS growth'], rows) + '\n';
}

/**
 * A log of `mb` MB streamed whole by readLog pages at line offsets (1 MiB each, as the CLI's
 * `wait` does), with redaction on and off, against \`cat\` of the same file to /dev/null
 * (the disk's speed, from the page cache as the pages read it).
 */
export async function streamBench({ mb = 1000 } = {}) {
  const state = mkdtempSync(join(tmpdir(), 'procward-growth-stream-'));
  const rows = [];
  const r0 = await ProcessRegistry.open({ stateDir: state, logMaxBytes: 4 * mb * 1e6 });
  const s = await r0.spawn(`yes 'build step 0123456789 compiled src/module/file.ts ok' | head -c ${mb * 1e6}`);
  await r0.wait(s.id, { timeoutMs: 600_000 });
  await r0.close();
  const log = execFileSync('find', [state, '-name', 'output.log'], { encoding: 'utf8' }).trim();
  const t = performance.now();
  execFileSync('sh', ['-c', `cat "${log}" > /dev/null`]);
  const cat = performance.now() - t;
  rows.push(['cat > /dev/null (anchor)', `${fmt(cat)} ms`, `${(mb / (cat / 1000)).toFixed(0)} MB/s`, '']);
  for (const redact of [true, false]) {
    const r = await ProcessRegistry.open({ stateDir: state, logMaxBytes: 4 * mb * 1e6, redact });
    const { ms, stall } = await stalls(async () => {
      let offset = 0;
      for (;;) {
        const page = await r.readLog(s.id, { offset, limit: 1e9, view: 'raw' });
        if (page.lines.length === 0) break;
        offset = page.offset + page.lines.length;
        if (offset >= page.totalLines) break;
      }
    });
    rows.push([`readLog pages, redaction ${redact ? 'on' : 'off'}`, `${fmt(ms)} ms`, `${(mb / (ms / 1000)).toFixed(0)} MB/s`, `${stall.toFixed(1)} ms`]);
    await r.close();
  }
  rmSync(state, { recursive: true, force: true });
  return table(`A ${mb} MB durable log streamed whole (1 MiB pages at line offsets, raw view)`, ['reader', 'time', 'speed', 'worst event-loop stall'], rows) + '\n';
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const which = process.argv.slice(2);
  const all = { scale: scaleBench, memory: memoryBench, paging: pagingBench, longline: longLineBench, stream: streamBench };
  for (const [name, fn] of Object.entries(all)) if (!which.length || which.includes(name)) process.stdout.write(await fn());
  process.exit(0);
}
