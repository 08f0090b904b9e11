// How cost grows with the work (issue 14): spawn+wait, list() and open() against the number
// of sessions in a state directory, host memory per finished session, and readLog pages
// against their size on a large durable log (with the event loop's worst stall). Prints a
// table per axis; each row is one size, so the growth reads down a column.
import { execFileSync } from 'node:child_process';
import { closeSync, createReadStream, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { identity, ProcessRegistry, redact } from '../dist/index.mjs';
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

/**
 * Host memory per finished session, measured in a child with `--expose-gc`: JS heap in use,
 * memory outside the heap that V8 knows of (external, array buffers) and RSS, after gc. The
 * first `n` sessions also pay the heap's one-off growth (V8 sizes its young generation by
 * the allocation rate, about 20 MB here); the next `n` show what one more session costs.
 */
export async function memoryBench({ n = 5000 } = {}) {
  const script = `
    import { ProcessRegistry } from ${JSON.stringify(join(import.meta.dirname, '..', 'dist', 'index.mjs'))};
    const r = await ProcessRegistry.open({ maxSessions: 1e6, finishedTtlMs: 864e5 });
    const run = async () => { for (let i = 0; i < ${n}; i++) await r.wait((await r.spawn('echo ' + i)).id); };
    const mem = () => { gc(); gc(); return process.memoryUsage(); };
    for (let i = 0; i < 50; i++) await r.wait((await r.spawn('true')).id);
    const m0 = mem(); await run(); const m1 = mem(); await run(); const m2 = mem();
    const per = (a, b) => Object.fromEntries(['heapUsed', 'external', 'arrayBuffers', 'rss'].map((k) => [k, (b[k] - a[k]) / ${n}]));
    console.log(JSON.stringify([per(m0, m1), per(m1, m2)]));
    await r.close();`;
  const rows = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' }));
  const kb = (b) => `${(b / 1024).toFixed(1)} KB`;
  return table(`Host memory per finished session (in-memory sessions of \`echo i\`, after gc)`, ['sessions', 'JS heap', 'external', 'array buffers', 'RSS'], [
    [`first ${n} (with the heap's one-off growth)`, ...['heapUsed', 'external', 'arrayBuffers', 'rss'].map((k) => kb(rows[0][k]))],
    [`next ${n}`, ...['heapUsed', 'external', 'arrayBuffers', 'rss'].map((k) => kb(rows[1][k]))],
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
  return { ms, stall: h.max / 1e6, p99: h.percentile(99) / 1e6, got };
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

/** Every readLog page of a session from line 0, each where the last one ended; the bytes of text they held. */
async function streamPages(r, id, opts) {
  let bytes = 0;
  for (let offset = 0; ; ) {
    const page = await r.readLog(id, { offset, limit: 1e9, ...opts });
    bytes += Buffer.byteLength(page.text) + (page.lines.length > 0 ? 1 : 0);
    if (page.lines.length === 0) return bytes;
    offset = page.offset + page.lines.length;
    if (offset >= page.totalLines) return bytes;
  }
}

/** Drains a read stream of `path`, with `onChunk` called for each chunk (the floors' work). */
function drain(path, onChunk = () => {}, encoding) {
  return new Promise((resolve, reject) => {
    const stream = createReadStream(path, { highWaterMark: 1024 * 1024, ...(encoding && { encoding }) });
    stream.on('data', onChunk).on('end', resolve).on('error', reject);
  });
}

/** Yields to the event loop (so the stall monitor sees a floor's work as a series of tasks, as readLog's). */
const yieldLoop = () => new Promise((r) => setImmediate(r));

/** `redact()` over the first `bytes` of `path` in 64 KiB slices, yielding between them (the text is let go after). */
async function redactFloor(path, bytes) {
  const fd = openSync(path, 'r');
  const buf = Buffer.alloc(bytes);
  readSync(fd, buf, 0, bytes, 0);
  closeSync(fd);
  const text = buf.toString('utf8');
  return stalls(async () => {
    for (let i = 0; i < text.length; i += 64 * 1024) {
      redact(text.slice(i, i + 64 * 1024));
      await yieldLoop();
    }
  });
}

/**
 * A durable log of `mb` MB streamed whole, against floors measured on the same file in the
 * same run: `cat` to /dev/null (the page cache: the log was just written), Node's
 * `fs.createReadStream` to nothing, and the same stream decoded as UTF-8 and split into
 * lines (what a page must hand back, without the line index or redaction), plus
 * `redact()` alone over the first `redactMb` MB in 64 KiB slices (what redaction costs per
 * byte). Then readLog page after page (1 MiB pages at line offsets, as the CLI's `wait`
 * reads them) with redaction off and on, and the CLI's `procward wait` writing the log to
 * /dev/null (plain view, redaction on). Each row says the event loop's worst stall (the
 * floors' rows: what the machine itself adds).
 */
export async function streamBench({ mb = 1000, redactMb = 64 } = {}) {
  const state = mkdtempSync(join(tmpdir(), 'procward-growth-stream-'));
  const rows = [];
  const row = (name, ms, bytes, loop) => rows.push([name, `${fmt(ms)} ms`, `${(bytes / 1e6 / (ms / 1000)).toFixed(0)} MB/s`, loop ? `${loop.stall.toFixed(1)} ms (${loop.p99.toFixed(1)} ms)` : '']);
  const r0 = await ProcessRegistry.open({ stateDir: state, logMaxBytes: 4 * mb * 1e6 });
  const s = await r0.spawn(`yes 'build step 0123456789 compiled src/module/file.ts ok' | head -c ${mb * 1e6}`);
  await r0.wait(s.id, { timeoutMs: 600_000 });
  await r0.close();
  const log = join(state, 'sessions', s.id, 'output.log');
  const bytes = statSync(log).size;
  const t = performance.now();
  execFileSync('sh', ['-c', `cat "${log}" > /dev/null`]);
  row('floor: cat > /dev/null (page cache)', performance.now() - t, bytes);
  const read = await stalls(() => drain(log));
  row('floor: fs.createReadStream, 1 MiB chunks, to nothing', read.ms, bytes, read);
  const lines = await stalls(() => drain(log, (chunk) => chunk.split('\n'), 'utf8'));
  row('floor: fs.createReadStream decoded as UTF-8, split into lines', lines.ms, bytes, lines);
  const red = await redactFloor(log, Math.min(bytes, redactMb * 1e6));
  row(`floor: redact() alone, first ${redactMb} MB in 64 KiB slices`, red.ms, Math.min(bytes, redactMb * 1e6), red);
  for (const redaction of [false, true]) {
    const r = await ProcessRegistry.open({ stateDir: state, logMaxBytes: 4 * mb * 1e6, redact: redaction });
    const got = await stalls(() => streamPages(r, s.id, { view: 'raw' }));
    // Each page's last line break is not in its text; a log that ends inside a line has one fewer.
    if (Math.abs(got.got - bytes) > 1) throw new Error(`streamed ${got.got} bytes of ${bytes}`);
    row(`readLog page after page (first page builds the index), redaction ${redaction ? 'on' : 'off'}`, got.ms, bytes, got);
    await r.close();
  }
  const cli = join(import.meta.dirname, '..', 'dist', 'cli.mjs');
  const tc = performance.now();
  execFileSync('sh', ['-c', `"${process.execPath}" "${cli}" wait ${s.id} --state-dir "${state}" > /dev/null 2>&1`]);
  row('procward wait > /dev/null (CLI: a fresh host, plain view, redaction on)', performance.now() - tc, bytes);
  rmSync(state, { recursive: true, force: true });
  return table(`A ${(bytes / 1e6).toFixed(0)} MB durable log (\`yes\` of a 53-byte build line) streamed whole — floors first, measured on the same file in the same run`, ['reader', 'time', 'speed', 'event-loop stall: worst (p99)'], rows) + '\n';
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const which = process.argv.slice(2);
  const all = { scale: scaleBench, memory: memoryBench, paging: pagingBench, longline: longLineBench, stream: streamBench };
  for (const [name, fn] of Object.entries(all)) if (!which.length || which.includes(name)) process.stdout.write(await fn());
  process.exit(0);
}
