// Live jobs (issue 14): what N concurrent jobs cost the host. For N = 100, 1000 and 10 000
// live `sleep` jobs in pipe mode, a fresh Node process (one per N, so nothing carries over)
// reports its threads (`Threads:` of /proc/self/status), open file descriptors
// (/proc/self/fd) and RSS, before the first job and with all N running. The reactor
// follows every job on one thread; a thread per job made 500 jobs cost 511 threads.
//
// Each child runs under `prlimit --nofile`, raised to 2N + 1024 but never past the hard
// limit (raising that needs CAP_SYS_RESOURCE): every job holds two descriptors, its output
// pipe and its pidfd. A count the machine cannot reach (the hard limit, pid_max) is
// reported as such, with how far it got and why.
//
// Usage: node bench/livejobs.mjs [N ...]        (default 100 1000 10000)
//        PROCWARD_BENCH_DIST=/path/to/dist/index.mjs node bench/livejobs.mjs   (another build)
// The jobs are this bench's own children: each is SIGKILLed by its process group (its PID,
// as it leads its session) while it is still unreaped, so the group cannot be another's.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const DIST = process.env.PROCWARD_BENCH_DIST ?? '../dist/index.mjs';
const COUNTS = [100, 1000, 10_000];

/** Threads, descriptors and RSS (MB) of this process. */
function usage() {
  const status = readFileSync('/proc/self/status', 'utf8');
  const field = (name) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))?.[1] ?? Number.NaN);
  return { threads: field('Threads'), fds: readdirSync('/proc/self/fd').length, rssMb: field('VmRSS') / 1024 };
}

/** The child's side: N live jobs, measured, then killed and awaited. Prints one JSON line. */
async function child(n) {
  const { ProcessRegistry } = await import(DIST);
  const r = await ProcessRegistry.open({ maxSessions: n + 10 });
  const before = usage();
  const sessions = [];
  const t0 = performance.now();
  let error = null;
  try {
    for (let i = 0; i < n; i++) sessions.push(await r.spawn('exec sleep 600'));
  } catch (e) {
    error = `${e.code ?? ''} ${e.message}`.trim().slice(0, 160);
  }
  const spawnMs = performance.now() - t0;
  // Let every reader settle (first turns, registrations) before measuring.
  await new Promise((res) => setTimeout(res, 500));
  const live = usage();
  const running = (await r.list()).filter((s) => s.status === 'running').length;
  for (const s of sessions) {
    try {
      process.kill(-s.pid, 'SIGKILL');
    } catch {}
  }
  await Promise.all(sessions.map((s) => r.wait(s.id, { timeoutMs: 60_000 }).catch(() => {})));
  await r.close();
  const nofile = Number(readFileSync('/proc/self/limits', 'utf8').match(/^Max open files\s+(\d+)/m)?.[1]);
  process.stdout.write(`${JSON.stringify({ n, started: sessions.length, running, spawnMs, before, live, error, nofile })}\n`);
}

/** This process's hard limit on descriptors: `prlimit` can raise the soft limit up to it. */
function hardNofile() {
  const out = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout?.trim();
  return out === 'unlimited' ? Number.POSITIVE_INFINITY : Number(out) || 1024;
}

/** Runs one child for `n` jobs with its soft descriptor limit raised as far as needed (and allowed). */
function measure(n) {
  const limit = Math.min(Math.max(4096, 2 * n + 1024), hardNofile());
  const args = [`--nofile=${limit}:${limit}`, process.execPath, import.meta.filename, '--child', String(n)];
  const res = spawnSync('prlimit', args, { encoding: 'utf8', env: process.env, maxBuffer: 1 << 20 });
  const line = res.stdout?.trim().split('\n').pop();
  if (res.status !== 0 || !line) throw new Error(`livejobs child for ${n} failed: ${res.stderr?.slice(-500) ?? res.error}`);
  return JSON.parse(line);
}

/** The table: one row per count. */
export async function liveJobsBench({ counts = COUNTS } = {}) {
  // Imported here, not at the top: lib.mjs loads the addon, and a child must load only the
  // build it measures.
  const { fmt, table } = await import('./lib.mjs');
  const rows = counts.map((n) => {
    const m = measure(n);
    const perJob = (a, b) => fmt((b - a) / Math.max(1, m.started));
    return [
      m.started === n ? `${n}` : `${n}: reached ${m.started} (${m.error}; descriptor limit ${m.nofile})`,
      `${m.before.threads} → ${m.live.threads}`,
      `${m.before.fds} → ${m.live.fds}`,
      `${fmt(m.before.rssMb)} → ${fmt(m.live.rssMb)}`,
      `${perJob(m.before.rssMb * 1024, m.live.rssMb * 1024)} KB`,
      `${m.running}`,
      fmt(m.spawnMs / Math.max(1, m.started)),
    ];
  });
  return (
    table('Live jobs: host cost of N concurrent `sleep` jobs (pipe mode), before the first job → all N running', [
      'jobs',
      'threads',
      'file descriptors',
      'RSS MB',
      'RSS per job',
      'listed running',
      'spawn ms per job',
    ], rows) +
    '\nOne fresh Node process per row, under `prlimit --nofile`. Threads from `/proc/self/status`, descriptors from `/proc/self/fd`, RSS from `VmRSS`. Each job holds two descriptors in the host (output pipe, pidfd); all jobs share one reactor thread.\n'
  );
}

if (process.argv[2] === '--child') {
  await child(Number(process.argv[3]));
  process.exit(0);
} else if (import.meta.filename === process.argv[1]) {
  const counts = process.argv.slice(2).map(Number).filter((n) => n > 0);
  process.stdout.write(await liveJobsBench(counts.length ? { counts } : {}));
}
