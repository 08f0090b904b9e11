#!/usr/bin/env node
// PID-reuse harness: a stranger that took an ended job's PID is never signalled by a kill of
// that job, whatever the surface, while what the job left running under its mark is ended.
//
//   node scripts/reuse/run.mjs [--rounds N | --sample] [--json FILE] [--seed S] [--allow-skip] [--lenient-bulk] [--verbose]
//   npm run test:reuse -- --sample
//
// --rounds N (default 1000: about 8.5 minutes on this 2-core machine), --sample (100 rounds,
// about 1 minute), --json FILE (the summary as JSON), --seed S (the draws below),
// --allow-skip (exit 0 when no PID namespace can be made; without it that is exit 1),
// --lenient-bulk (see "bulk-missed" below), --verbose (a line per round, with phase times).
// Exit 1 when a stranger died or a marked leftover survived a kill (or a round could not be
// run to its checks); 0 otherwise.
//
// "bulk-missed": killAll / killStartedSince take an ended session only while it has counted
// leftovers; the task-scoped calls count them deeply (the session's mark anywhere, one pass
// over /proc), so an uncontained job's marked leftover that left the group (setsid) is
// reached by a bulk kill as by kill(id). A round where it is not is a failure;
// --lenient-bulk counts such rounds apart instead (the harness ends the leftover).
//
// How. The harness re-executes itself in a fresh PID namespace (`unshare --pid --fork
// --mount-proc`, root only), under `stranger.py init` as PID 1 (it reaps orphans at once, so
// an ended process never keeps its PID as a zombie). There `/proc/sys/kernel/ns_last_pid`
// hands a chosen PID to the next fork: `stranger.py serve` writes T-1, forks, checks that the
// child got T and retries a few times when some other fork came in between. Each round:
//
//   1. (shapes d, f) a stranger session leader L and its child C start BEFORE the job;
//   2. a job starts that ends at once: `true` / `exit 3`, or one that leaves a MARKED
//      leftover (`(setsid sh -c '...; exec sleep 300' &); exit 0`: it carries
//      PROCWARD_SESSION_ID, outside the job's group; the kill MUST end it), or one that
//      leaves an UNPROVABLE leftover (the same under `env -i`: no mark, outside the group;
//      in the job's cgroup when the job is contained, so the kill ends it; uncontained it is
//      a documented escape (README, Known limits) that the harness counts and ends itself);
//   3. once the session is `exited` and the PID is free, a stranger takes the job's PID (a
//      durable or recovered job: its own PID or its supervisor's, which leads its session and
//      group), in one of these shapes (stranger.py):
//        a  double-forked daemon: T calls setsid, forks a worker W and exits; W lives in
//           session and group T (the ended job's old group number)
//        b  a live session and group leader holding T
//        c  a plain process holding T in the harness's own group (no setsid)
//        d  L forks N = T, makes it a group leader and moves its older child C into group T
//        f  as d, then N exits: group T holds only C, started before the job
//        e  a session leader holding T with three children in its group (started after
//           the job, in the job's old session and group numbers)
//      No stranger carries PROCWARD_SESSION_ID (the factory refuses to run with one);
//   4. the kill goes through one surface, with a 200 ms grace;
//   5. every stranger must still be alive: the same start time (field 22 of /proc/<pid>/stat)
//      and not a zombie; the marked leftover must be dead or a zombie; the harness then
//      kills the strangers (by PID and by the groups they made) and any escape by PID.
//
// The membership-using reads are exercised on the same ended sessions where cheap:
// `hasActiveProcesses(taskId)` and `poll(id).leftovers` (or the MCP poll's `leftovers`)
// before and after the kill; the library path ends some rounds with `killAll({ taskId })`
// or `killStartedSince(taskId, [])` instead of `kill(id)`. A contained job's leftover must be
// counted, an unprovable one never, and nothing when nothing of the job runs (a stranger
// counted as the job's); a disagreement is an anomaly (reported, not a failure: it signals
// nothing). An uncontained job's marked leftover outside its group is not counted, as
// documented: the "uncounted" column.
//
// Combinations (session kind x kill path). Rounds are spread evenly over the 10 that exist
// (round g runs combination g mod 10), so the default 1000 rounds give each 100 (>= 50) and
// --sample gives each 10:
//
//   memory x library     ProcessRegistry.open() (no stateDir), spawn, kill(id) / killAll / killStartedSince
//   memory x tool        the same registry, handleToolCall(registry, 'process', { action: 'kill', ... })
//   memory x cli         skipped: an in-memory session is known to its own host only
//   memory x mcp         skipped: likewise (`procward mcp` is another process)
//   durable x library    open({ stateDir }) in this process, spawn(..., { durable: true }), kill/killAll/killStartedSince
//   durable x tool       the same, killed through handleToolCall
//   durable x cli        the same (its host, this process, stays alive); `procward --state-dir D kill ID --json --grace 200ms`
//   durable x mcp        the MCP server's own durable job (process_start), killed by process_control kill
//   recovered x library  `procward --state-dir D start` (a host that exits) started it; a fresh registry opened
//                        before or after the stranger took the PID kills it
//   recovered x tool     the same, a fresh registry and handleToolCall
//   recovered x cli      the same, `procward kill` (a fresh CLI host)
//   recovered x mcp      batches of 5 such jobs, each ended and given its stranger; then one `procward mcp` per
//                        batch's state dir (a host learns of sessions others started only when it opens the
//                        state dir) kills them one by one; the batch's other strangers and marked leftovers
//                        must survive each kill
//
// In every combination, rounds rotate over stranger shape (6) x leftover (none, marked,
// unprovable) x containment (a cgroup per job, or PROCWARD_NO_CGROUP / containment: false),
// with the PID given away (job or supervisor) and the recovered registry's opening (before or
// after the stranger) drawn from a seeded generator. One MCP server per state dir lives across
// rounds (a durable one per containment mode; one per batch of recovered jobs).
import { execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
const SELF = fileURLToPath(import.meta.url);
const CLI = join(ROOT, 'dist', 'cli.mjs');
const STRANGER = join(HERE, 'stranger.py');
const GRACE_MS = 200;
const BATCH = 5; // recovered x mcp: jobs per MCP server
const MARK_VARS = ['PROCWARD_SESSION_ID', 'PROCWARD_OUTER_SESSION_IDS'];

// --- arguments ------------------------------------------------------------------------

function parseArgs(argv) {
  const a = { rounds: 1000, json: null, seed: 1, allowSkip: false, inside: false, base: null, verbose: false, sample: false, strictBulk: true };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`${x} needs a value`);
      return argv[++i];
    };
    if (x === '--rounds') a.rounds = Number(next());
    else if (x === '--sample') {
      a.sample = true;
      a.rounds = 100;
    } else if (x === '--json') a.json = resolve(next());
    else if (x === '--seed') a.seed = Number(next());
    else if (x === '--allow-skip') a.allowSkip = true;
    else if (x === '--lenient-bulk') a.strictBulk = false;
    else if (x === '--verbose' || x === '-v') a.verbose = true;
    else if (x === '--inside') a.inside = true;
    else if (x === '--base') a.base = next();
    else if (x === '--help' || x === '-h') usage(null);
    else usage(`unknown argument ${x}`);
  }
  if (!Number.isInteger(a.rounds) || a.rounds < 1) usage('--rounds must be a positive integer');
  return a;
}

function usage(problem) {
  const text = 'usage: node scripts/reuse/run.mjs [--rounds N | --sample] [--json FILE] [--seed S] [--allow-skip] [--lenient-bulk] [--verbose]';
  if (problem) {
    process.stderr.write(`reuse: ${problem}\n${text}\n`);
    process.exit(2);
  }
  process.stdout.write(`${text}\n`);
  process.exit(0);
}

/** The environment every process of the harness gets: no mark of an outer procward job, no containment switch. */
function baseEnv() {
  const env = { ...process.env };
  for (const v of [...MARK_VARS, 'PROCWARD_NO_CGROUP', 'PROCWARD_STATE_DIR']) delete env[v];
  return env;
}

// --- outside: make the namespace ------------------------------------------------------

async function outside(args, rawArgs) {
  const env = baseEnv();
  const skip = (why) => {
    const msg = `reuse: cannot run in a PID namespace of its own (${why}); the harness needs root (unshare --pid --fork --mount-proc and a writable ns_last_pid)`;
    if (args.allowSkip) {
      process.stderr.write(`${msg}; skipped (--allow-skip)\n`);
      if (args.json) writeFileSync(args.json, `${JSON.stringify({ skipped: true, reason: why }, null, 2)}\n`);
      process.exit(0);
    }
    process.stderr.write(`${msg}\n`);
    process.exit(1);
  };
  if (process.platform !== 'linux') skip(`not Linux: ${process.platform}`);
  if (!existsSync(CLI) || !existsSync(join(ROOT, 'dist', 'index.mjs'))) {
    process.stderr.write('reuse: dist/ is not built (npm run build)\n');
    process.exit(1);
  }
  const probe = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'sh', '-c', 'echo 300 > /proc/sys/kernel/ns_last_pid && sh -c "echo \\$\\$"'], { encoding: 'utf8', env, timeout: 20_000 });
  if (probe.error) skip(`unshare: ${probe.error.message}`);
  if (probe.status !== 0) skip(`unshare: ${(probe.stderr || '').trim() || `exit ${probe.status}`}`);
  if (probe.stdout.trim() !== '301') skip(`ns_last_pid did not hand out PID 301 (got ${probe.stdout.trim()})`);

  const base = mkdtempSync(join(tmpdir(), 'procward-reuse-'));
  const child = spawn(
    'unshare',
    ['--pid', '--fork', '--mount-proc', '--kill-child', 'python3', STRANGER, 'init', '--', process.execPath, SELF, '--inside', '--base', base, ...rawArgs],
    { stdio: 'inherit', env },
  );
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      try {
        child.kill(sig);
      } catch {}
    });
  }
  const [code, signal] = await once(child, 'exit');
  rmSync(base, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  process.exit(code ?? (signal ? 128 : 1));
}

// --- inside: small tools --------------------------------------------------------------

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `{ state, ppid, pgrp, session, start }` of /proc/<pid>/stat, or null when there is no such process. */
function stat(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]), start: f[19] };
}

/** Same process (same start time) and not a zombie or dead. */
function aliveAs(pid, start) {
  const s = stat(pid);
  return s !== null && s.start === start && s.state !== 'Z' && s.state !== 'X';
}

function environOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
  } catch {
    return null;
  }
}

function commOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return null;
  }
}

/** The cgroup the session's records name (checkpoint, session.json), or what was found instead. */
function recordedCgroup(stateDir, id) {
  const out = {};
  for (const [name, path] of [
    ['checkpoint', join(stateDir, 'checkpoint.json')],
    ['session', join(stateDir, 'sessions', id, 'session.json')],
  ]) {
    try {
      const j = JSON.parse(readFileSync(path, 'utf8'));
      const e = name === 'checkpoint' ? j.sessions?.find((x) => x.id === id) : j;
      out[name] = e ? (e.cgroup ?? 'none') : 'no entry';
    } catch (e) {
      out[name] = String(e.code ?? e);
    }
  }
  return out;
}

function carriesMark(pid) {
  const env = environOf(pid);
  return env?.some((e) => MARK_VARS.some((v) => e.startsWith(`${v}=`))) === true;
}

async function until(cond, ms, step = 5) {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() > end) return false;
    await sleep(step);
  }
}

function withTimeout(promise, ms, what) {
  let t;
  return Promise.race([promise, new Promise((_, rej) => (t = setTimeout(() => rej(new Error(`${what}: no answer in ${ms} ms`)), ms)))]).finally(() => clearTimeout(t));
}

/** A seeded generator (mulberry32). */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function runCli(args, env) {
  return new Promise((res) => {
    execFile(process.execPath, [CLI, ...args], { env, timeout: 60_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      res({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** The stranger factory (stranger.py serve): one request, one answer, in order. */
class Factory {
  constructor(env) {
    this.proc = spawn('python3', [STRANGER, 'serve'], { stdio: ['pipe', 'pipe', 'inherit'], env });
    this.waiting = [];
    createInterface({ input: this.proc.stdout }).on('line', (line) => this.waiting.shift()?.resolve(JSON.parse(line)));
    this.proc.on('exit', (code) => {
      for (const w of this.waiting.splice(0)) w.reject(new Error(`stranger factory exited (${code})`));
    });
  }
  request(req) {
    return withTimeout(
      new Promise((resolve, reject) => {
        this.waiting.push({ resolve, reject });
        this.proc.stdin.write(`${JSON.stringify(req)}\n`);
      }),
      20_000,
      `stranger ${req.op}`,
    );
  }
  close() {
    this.proc.stdin.end();
  }
}

// --- the plan -------------------------------------------------------------------------

const COMBOS = [
  ['memory', 'library'],
  ['memory', 'tool'],
  ['durable', 'library'],
  ['durable', 'tool'],
  ['durable', 'cli'],
  ['durable', 'mcp'],
  ['recovered', 'library'],
  ['recovered', 'tool'],
  ['recovered', 'cli'],
  ['recovered', 'mcp'],
];
const SKIPPED = [
  ['memory', 'cli', 'an in-memory session is known to its own host only: a CLI process cannot reach it'],
  ['memory', 'mcp', 'an in-memory session is known to its own host only: `procward mcp` (another process) cannot reach it'],
];
const SHAPES = ['a', 'b', 'c', 'd', 'e', 'f'];
const LEFTOVERS = ['none', 'marked', 'unprovable'];

function plan(rounds, seed) {
  const random = rng(seed);
  const out = [];
  for (let g = 0; g < rounds; g++) {
    const ci = g % COMBOS.length;
    const [kind, path] = COMBOS[ci];
    // Consecutive items per combination, offset by combination: a short run (--sample)
    // still covers every shape x leftover x containment across the combinations.
    const item = Math.floor(g / COMBOS.length) + ci * 10;
    const shape = SHAPES[item % 6];
    const leftover = LEFTOVERS[Math.floor(item / 6) % 3];
    const contained = Math.floor(item / 18) % 2 === 0;
    const r1 = random();
    const r2 = random();
    const r3 = random();
    out.push({
      g,
      kind,
      path,
      shape,
      leftover,
      contained,
      // Which PID goes to the stranger: the job's own, or (durable, recovered) its supervisor's.
      target: kind !== 'memory' && r1 < 0.5 ? 'supervisor' : 'job',
      // recovered x library/tool: the fresh registry opens before or after the stranger takes the PID.
      openBefore: kind === 'recovered' && (path === 'library' || path === 'tool') && r2 < 0.5,
      // library: kill(id), killAll({ taskId }) or killStartedSince(taskId, []).
      variant: path === 'library' ? (r3 < 0.5 ? 'kill' : r3 < 0.75 ? 'killAll' : 'killStartedSince') : path,
      exit3: r2 < 0.5,
    });
  }
  return out;
}

// --- inside: the harness --------------------------------------------------------------

async function inside(args) {
  const t0 = Date.now();
  const { ProcessRegistry, handleToolCall } = await import(join(ROOT, 'dist', 'index.mjs'));
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const native = createRequire(join(ROOT, 'index.js'))(join(ROOT, 'index.js'));

  const env = baseEnv();
  const envFor = (contained) => (contained ? env : { ...env, PROCWARD_NO_CGROUP: '1' });
  const base = args.base ?? mkdtempSync(join(tmpdir(), 'procward-reuse-'));
  const dir = (name) => {
    const d = join(base, name);
    mkdirSync(d, { recursive: true, mode: 0o700 });
    return d;
  };
  const loDir = dir('leftovers');
  const factory = new Factory(env);
  const ping = await factory.request({ op: 'ping' });
  if (!ping.pong) throw new Error(`stranger factory: ${JSON.stringify(ping)}`);

  // Registries of this host, opened on first use.
  const registries = new Map();
  const registry = async (key, options) => {
    if (!registries.has(key)) registries.set(key, await ProcessRegistry.open(options));
    return registries.get(key);
  };
  // MCP servers (`procward mcp --state-dir D`), one per state directory.
  const servers = new Map();
  const mcp = async (stateDir, contained) => {
    if (!servers.has(stateDir)) {
      const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--state-dir', stateDir], env: envFor(contained), stderr: 'pipe' });
      const client = new Client({ name: 'procward-reuse', version: '1.0.0' });
      await withTimeout(client.connect(transport), 30_000, 'MCP connect');
      const call = async (name, a) => {
        const r = await withTimeout(client.callTool({ name, arguments: a }), 60_000, `MCP ${name} ${a.action ?? ''}`);
        return r.structuredContent ?? JSON.parse(r.content[0].text);
      };
      servers.set(stateDir, { client, call, pid: transport.pid });
    }
    return servers.get(stateDir);
  };
  const closeServer = async (stateDir) => {
    const s = servers.get(stateDir);
    servers.delete(stateDir);
    if (s) await s.client.close().catch(() => {});
  };

  // --- tallies ---
  const byCombo = {};
  for (const [k, p] of COMBOS) {
    byCombo[`${k}/${p}`] = {
      rounds: 0,
      reuseArranged: 0,
      reuseNotArranged: 0,
      strangerProcesses: 0,
      strangersSignalled: 0,
      markedTotal: 0,
      markedEnded: 0,
      unprovableTotal: 0,
      unprovableEndedByCgroup: 0,
      documentedEscapes: 0,
      anomalies: 0,
      errors: 0,
      markedUncounted: 0,
      bulkMissed: 0,
      ms: 0,
    };
  }
  const shapes = Object.fromEntries(SHAPES.map((s) => [s, { rounds: 0, reuseArranged: 0, strangersSignalled: 0 }]));
  const failures = [];
  const anomalies = [];
  const bulkMissed = [];
  const errors = [];
  const notArranged = [];
  const variants = {};
  let contained = 0;
  const targets = { job: 0, supervisor: 0 };

  /** Job command for a round; the leftover writes its PID to a file. */
  const command = (p) => {
    if (p.leftover === 'none') return p.exit3 ? 'exit 3' : 'true';
    const file = join(loDir, String(p.g));
    const inner = `echo $$ > ${file}; exec sleep 300`;
    return p.leftover === 'marked' ? `(setsid sh -c '${inner}' >/dev/null 2>&1 &); exit 0` : `(env -i setsid sh -c '${inner}' >/dev/null 2>&1 &); exit 0`;
  };

  /** After the job ended: its leftover's PID and start time (null when the round has none). */
  const leftoverOf = async (p) => {
    if (p.leftover === 'none') return null;
    const file = join(loDir, String(p.g));
    let pid = 0;
    await until(() => {
      try {
        pid = Number(readFileSync(file, 'utf8').trim());
      } catch {}
      // Once it is `sleep` (its exec done): an environment read mid-exec can come back empty.
      return pid > 0 && commOf(pid) === 'sleep';
    }, 10_000);
    const s = pid > 0 ? stat(pid) : null;
    if (!s) throw new Error(`the ${p.leftover} leftover never wrote its PID`);
    // An environment read that met an exec (the `sleep` replacing `sh`) comes back empty:
    // a marked leftover is given a little while to show its mark.
    const marked = p.leftover === 'marked' ? await until(() => carriesMark(pid), 2000) : carriesMark(pid);
    if (marked !== (p.leftover === 'marked')) throw new Error(`the ${p.leftover} leftover ${pid} ${marked ? 'carries' : 'does not carry'} the mark`);
    return { pid, start: s.start, kind: p.leftover };
  };

  const gone = (pid) => until(() => !existsSync(`/proc/${pid}`), 5000, 2);

  /**
   * Sets up one round up to the kill: job started and ended, stranger arranged. Returns
   * the round's state; `kill()` then runs the kill through the round's surface.
   */
  const setUp = async (p) => {
    const taskId = `reuse-${p.g}`;
    const st = { p, taskId, strangers: [], groups: [], leftover: null, arranged: false, fresh: null, t0: Date.now(), phases: [] };
    const phase = (name) => st.phases.push(`${name} ${Date.now() - st.t0}`);
    st.phase = phase;
    const prep = await factory.request({ op: 'prepare', shape: p.shape });
    for (const pid of prep.pids) {
      const s = stat(pid);
      if (s) st.strangers.push({ pid, start: s.start });
    }
    if (prep.pids.length > 0) st.groups.push(prep.pids[0]);
    const cmd = command(p);
    let id;
    let pid;
    let supervisorPid;
    let stateDir = null;
    if (p.kind === 'memory') {
      const r = await registry(`memory-${p.contained}`, { containment: p.contained });
      st.registry = r;
      if (p.variant === 'killStartedSince') st.baseline = await r.snapshotRunningIds(taskId);
      const s = await r.spawn(cmd, { taskId });
      ({ id, pid } = s);
    } else if (p.kind === 'durable' && p.path !== 'mcp') {
      stateDir = dir(`durable-${p.path}-${p.contained ? 'c' : 'u'}`);
      const r = await registry(stateDir, { stateDir, containment: p.contained });
      st.registry = r;
      if (p.variant === 'killStartedSince') st.baseline = await r.snapshotRunningIds(taskId);
      const s = await r.spawn(cmd, { taskId, durable: true });
      ({ id, pid, supervisorPid } = s);
    } else if (p.kind === 'durable') {
      stateDir = dir(`durable-mcp-${p.contained ? 'c' : 'u'}`);
      const server = await mcp(stateDir, p.contained);
      st.server = server;
      const s = await server.call('process_start', { command: cmd, task_id: taskId });
      if (s.error) throw new Error(`MCP process_start: ${JSON.stringify(s.error)}`);
      id = s.session_id;
      pid = s.pid;
      const w = await server.call('process_read', { action: 'wait', session_id: id, timeout_ms: 20_000 });
      supervisorPid = w.supervisor_pid;
      if (w.status !== 'exited') throw new Error(`MCP wait: ${JSON.stringify(w).slice(0, 300)}`);
    } else {
      stateDir = p.path === 'mcp' ? dir(`recovered-mcp-${Math.floor(p.batch)}`) : dir(`recovered-${p.path}`);
      const r = await runCli(['--state-dir', stateDir, 'start', '--json', '--task', taskId, '--', cmd], envFor(p.contained));
      if (r.code !== 0) throw new Error(`procward start: exit ${r.code}: ${r.stderr.trim()}`);
      const s = JSON.parse(r.stdout);
      ({ id, pid, supervisorPid } = s);
      // The host that started it has exited; the job ends by itself.
      if (!(await until(() => existsSync(join(stateDir, 'sessions', id, 'exit.json')), 20_000))) throw new Error(`${id}: no exit.json`);
    }
    Object.assign(st, { id, pid, supervisorPid, stateDir });
    phase('started');
    if (p.contained) contained++;

    // The session has ended (as its host sees it).
    if (st.registry) {
      await st.registry.wait(id, { timeoutMs: 20_000 });
      const polled = await st.registry.poll(id);
      if (polled.status !== 'exited') throw new Error(`${id} did not end: ${polled.status}`);
    }
    phase('ended');
    st.leftover = await leftoverOf(p);
    phase('leftover');
    // Its processes are reaped: the PIDs are free.
    await gone(pid);
    if (supervisorPid) await gone(supervisorPid);

    if (p.openBefore) {
      st.fresh = await ProcessRegistry.open({ stateDir });
      const polled = await st.fresh.poll(id);
      if (polled.status !== 'exited') throw new Error(`${id} (recovered) is ${polled.status}`);
    }

    phase('reaped');
    // The stranger takes the PID.
    const target = p.target === 'supervisor' && supervisorPid ? supervisorPid : pid;
    targets[target === pid ? 'job' : 'supervisor']++;
    st.target = target;
    const arr = await factory.request({ op: 'arrange', target, shape: p.shape, handle: prep.handle });
    if (arr.ok) {
      st.arranged = true;
      for (const spid of arr.strangers) {
        const s = stat(spid);
        if (s && !st.strangers.some((x) => x.pid === spid)) st.strangers.push({ pid: spid, start: s.start });
      }
      st.groups.push(...arr.groups);
    } else {
      st.reason = arr.reason ?? arr.error;
    }
    for (const s of st.strangers) {
      if (carriesMark(s.pid)) throw new Error(`stranger ${s.pid} carries a procward mark: the harness is broken`);
    }
    return st;
  };

  /** What the membership reads say: `{ active, leftovers }` (nulls where the surface has none). */
  const membership = async (st) => {
    const { p, id } = st;
    if (p.path === 'mcp') {
      const polled = await st.server.call('process_read', { action: 'poll', session_id: id });
      if (polled.error) throw new Error(`MCP poll: ${JSON.stringify(polled.error)}`);
      return { active: null, leftovers: polled.leftovers ?? 0 };
    }
    const r = st.fresh ?? st.registry;
    if (!r) return { active: null, leftovers: null };
    const polled = await r.poll(id);
    return { active: await r.hasActiveProcesses(st.taskId), leftovers: polled.leftovers ?? 0 };
  };

  /** Runs the kill; returns `{ signalled, outcome, error }`. */
  const kill = async (st) => {
    const { p, id } = st;
    variants[p.variant] = (variants[p.variant] ?? 0) + 1;
    if (p.path === 'library') {
      const r = st.fresh ?? st.registry;
      if (p.variant === 'kill') {
        try {
          const k = await r.kill(id, { graceMs: GRACE_MS });
          return { signalled: k.signalled, outcome: k.outcome, report: k };
        } catch (e) {
          return { signalled: e.details?.signalled ?? [], error: `${e.code}: ${e.message}` };
        }
      }
      const outcomes = p.variant === 'killAll' ? await r.killAll({ taskId: st.taskId, graceMs: GRACE_MS }) : await r.killStartedSince(st.taskId, st.baseline ?? [], { graceMs: GRACE_MS });
      const mine = outcomes.find((o) => o.id === id);
      const signalled = outcomes.flatMap((o) => o.result?.signalled ?? []);
      if (outcomes.some((o) => o.id !== id)) throw new Error(`${p.variant} of ${st.taskId} touched other sessions: ${JSON.stringify(outcomes)}`);
      return { signalled, outcome: mine?.result?.outcome ?? (mine ? null : 'not_active'), ...(mine?.error && { error: `${mine.error.code}: ${mine.error.message}` }) };
    }
    if (p.path === 'tool') {
      const r = st.fresh ?? st.registry;
      const k = await handleToolCall(r, 'process', { action: 'kill', session_id: id, grace_ms: GRACE_MS }, { taskId: st.taskId });
      return k.error ? { signalled: k.error.details?.signalled ?? [], error: `${k.error.code}: ${k.error.message}` } : { signalled: k.signalled, outcome: k.outcome, report: k };
    }
    if (p.path === 'cli') {
      const r = await runCli(['--state-dir', st.stateDir, 'kill', '--json', '--grace', `${GRACE_MS}ms`, id], env);
      let j = null;
      try {
        j = JSON.parse(r.stdout);
      } catch {}
      if (r.code !== 0 || !j || j.error) return { signalled: j?.error?.details?.signalled ?? [], error: `exit ${r.code}: ${(j?.error ? `${j.error.code}: ${j.error.message}` : r.stderr).trim()}` };
      return { signalled: j.signalled, outcome: j.outcome, report: j };
    }
    const k = await st.server.call('process_control', { action: 'kill', session_id: id, grace_ms: GRACE_MS });
    return k.error ? { signalled: k.error.details?.signalled ?? [], error: `${k.error.code}: ${k.error.message}` } : { signalled: k.signalled, outcome: k.outcome, report: k };
  };

  /**
   * A bulk kill (killAll, killStartedSince) that did not take an uncontained ended session
   * whose marked leftover left the job's group: the documented limit of the leftover count.
   */
  const bulkMiss = (st, k) =>
    (st.p.variant === 'killAll' || st.p.variant === 'killStartedSince') && !st.p.contained && st.leftover?.kind === 'marked' && k.outcome === 'not_active';

  /**
   * Checks what poll().leftovers and hasActiveProcesses said against what runs. `live`: the
   * round's leftover still runs. The README counts as leftovers the processes in the job's
   * cgroup or in its session and group: a contained job's leftover must be counted; an
   * uncontained job's marked leftover (outside its group) may or may not be (`markedUncounted`
   * counts the rounds where it was not, for the report); an unprovable one must not be; and
   * nothing may be counted when nothing of the job runs (a stranger counted as the job's).
   */
  const judge = (st, c, when, seen, live) => {
    const { p } = st;
    const must = live && p.contained;
    const may = live && (p.contained || p.leftover === 'marked');
    for (const [what, got] of [
      ['poll().leftovers', seen.leftovers === null ? null : seen.leftovers > 0],
      ['hasActiveProcesses', seen.active],
    ]) {
      if (got === null) continue;
      if (got && !may) {
        c.anomalies++;
        anomalies.push(record(st, `${what} ${when} counts a process that is not the job's (${live ? 'an unprovable leftover' : 'nothing of the job runs: a stranger?'})`, { got: what === 'hasActiveProcesses' ? seen.active : seen.leftovers }));
      } else if (!got && must) {
        c.anomalies++;
        anomalies.push(record(st, `${what} ${when} misses a leftover in the job's cgroup`, { leftoverProcess: st.leftover }));
      } else if (!got && may && what === 'poll().leftovers') {
        c.markedUncounted++;
      }
    }
  };

  const record = (st, what, detail) => {
    const entry = { round: st.p.g, kind: st.p.kind, path: st.p.path, variant: st.p.variant, shape: st.p.shape, leftover: st.p.leftover, contained: st.p.contained, target: st.p.target, targetPid: st.target, id: st.id, what, ...detail };
    return entry;
  };

  /**
   * The kill of one set-up round and its checks. `others`: rounds of the same batch still
   * waiting for their kill, whose strangers and marked leftovers must survive this one.
   */
  const finish = async (st, others = []) => {
    const { p } = st;
    const c = byCombo[`${p.kind}/${p.path}`];
    c.rounds++;
    shapes[p.shape].rounds++;
    if (st.arranged) {
      c.reuseArranged++;
      shapes[p.shape].reuseArranged++;
    } else {
      c.reuseNotArranged++;
      notArranged.push(record(st, 'reuse not arranged', { reason: st.reason }));
    }
    c.strangerProcesses += st.strangers.length;
    if (st.leftover?.kind === 'marked') c.markedTotal++;
    if (st.leftover?.kind === 'unprovable') c.unprovableTotal++;

    if (!st.fresh && p.kind === 'recovered' && (p.path === 'library' || p.path === 'tool')) st.fresh = await ProcessRegistry.open({ stateDir: st.stateDir });
    const before = await membership(st);
    judge(st, c, 'before the kill', before, st.leftover !== null);
    st.phase?.('membership');
    const k = await kill(st);
    st.phase?.('killed');
    if (k.error) {
      c.anomalies++;
      anomalies.push(record(st, 'the kill failed', { error: k.error }));
    }
    // Checks: right after the kill returned, then once more after the leftover had time to go.
    const dead = [];
    const check = () => {
      for (const s of st.strangers) if (!aliveAs(s.pid, s.start) && !dead.includes(s.pid)) dead.push(s.pid);
    };
    check();
    let leftoverEnded = null;
    if (st.leftover) leftoverEnded = await until(() => !aliveAs(st.leftover.pid, st.leftover.start), st.leftover.kind === 'marked' || p.contained ? 2000 : 150);
    await sleep(20);
    check();
    const listed = st.strangers.filter((s) => (k.signalled ?? []).includes(s.pid)).map((s) => s.pid);
    if (dead.length > 0 || listed.length > 0) {
      c.strangersSignalled += new Set([...dead, ...listed]).size;
      shapes[p.shape].strangersSignalled += new Set([...dead, ...listed]).size;
      failures.push(record(st, 'stranger signalled', { dead, listedInSignalled: listed, strangers: st.strangers, kill: k }));
    }
    // The batch's other rounds: their strangers and leftovers belong to nobody this kill may touch.
    for (const o of others) {
      const hit = o.strangers.filter((s) => !aliveAs(s.pid, s.start)).map((s) => s.pid);
      if (o.leftover && !aliveAs(o.leftover.pid, o.leftover.start)) hit.push(o.leftover.pid);
      if (hit.length > 0) {
        c.strangersSignalled += hit.length;
        failures.push(record(st, 'another session`s process or stranger died in this kill', { otherRound: o.p.g, otherId: o.id, dead: hit, kill: k }));
        o.strangers = o.strangers.filter((s) => !hit.includes(s.pid));
        if (o.leftover && hit.includes(o.leftover.pid)) o.leftoverGoneEarly = true;
      }
    }
    if (st.leftover?.kind === 'marked') {
      if (leftoverEnded) c.markedEnded++;
      else if (bulkMiss(st, k)) {
        // README, Known limits: the leftover count looks only in the job's group and cgroup,
        // so a bulk kill (which takes ended sessions with counted leftovers) never reaches a
        // marked process outside the group of an uncontained job; kill(id) does.
        c.bulkMissed++;
        bulkMissed.push(record(st, `${p.variant} left a marked leftover running: the session was not counted active`, { leftoverProcess: st.leftover, kill: k }));
        if (args.strictBulk) failures.push(record(st, 'marked leftover survived a bulk kill', { leftoverProcess: st.leftover, kill: k }));
      } else failures.push(record(st, 'marked leftover survived', { leftoverProcess: st.leftover, kill: k }));
    } else if (st.leftover?.kind === 'unprovable') {
      if (leftoverEnded) c.unprovableEndedByCgroup += p.contained ? 1 : 0;
      if (!leftoverEnded) c.documentedEscapes++;
      if (leftoverEnded && !p.contained) c.anomalies++;
      if (leftoverEnded && !p.contained) anomalies.push(record(st, 'an unprovable leftover of an uncontained job ended in the kill (unexpected, not unsafe)', {}));
      if (!leftoverEnded && p.contained) {
        c.anomalies++;
        // Where it is, and what the record says: for the next look at this anomaly.
        const cgroupNow = (() => {
          try {
            return readFileSync(`/proc/${st.leftover.pid}/cgroup`, 'utf8').trim();
          } catch (e) {
            return String(e.code ?? e);
          }
        })();
        const recordCgroup = st.stateDir ? recordedCgroup(st.stateDir, st.id) : null;
        anomalies.push(record(st, 'an unprovable leftover in the job`s cgroup survived the kill', { leftoverProcess: st.leftover, kill: k, cgroupNow, recordCgroup }));
      }
    }

    st.phase?.('checked');
    const after = await membership(st);
    judge(st, c, 'after the kill', after, Boolean(st.leftover && aliveAs(st.leftover.pid, st.leftover.start)));

    // Clean up: strangers by PID and by the groups they made, the leftover by PID.
    for (const g of st.groups) {
      if (g > 1) {
        try {
          process.kill(-g, 'SIGKILL');
        } catch {}
      }
    }
    for (const s of st.strangers) {
      if (aliveAs(s.pid, s.start)) {
        try {
          process.kill(s.pid, 'SIGKILL');
        } catch {}
      }
    }
    if (st.leftover && aliveAs(st.leftover.pid, st.leftover.start)) {
      try {
        process.kill(st.leftover.pid, 'SIGKILL');
      } catch {}
    }
    if (st.fresh) {
      await st.fresh.close();
      st.fresh = null;
    }
    if (args.verbose) {
      process.stderr.write(
        `round ${p.g} ${p.kind}/${p.path}${p.variant !== p.path ? `(${p.variant})` : ''} shape ${p.shape} ${p.leftover} ${p.contained ? 'cg' : 'nocg'} pid ${st.target}${st.arranged ? '' : ' NOT-ARRANGED'} -> ${k.outcome ?? k.error} signalled ${JSON.stringify(k.signalled)}${leftoverEnded === null ? '' : ` leftover ${leftoverEnded ? 'ended' : 'alive'}`} [${st.phases.join(', ')}, done ${Date.now() - st.t0}]\n`,
      );
    }
  };

  const fail = (p, err) => {
    const c = byCombo[`${p.kind}/${p.path}`];
    c.errors++;
    errors.push({ round: p.g, kind: p.kind, path: p.path, shape: p.shape, leftover: p.leftover, error: String(err?.stack ?? err).slice(0, 800) });
    process.stderr.write(`reuse: round ${p.g} (${p.kind}/${p.path}) could not run: ${err?.message ?? err}\n`);
  };

  /** Best-effort cleanup of a round that failed half-way. */
  const salvage = async (st) => {
    if (!st) return;
    for (const g of st.groups ?? []) {
      try {
        if (g > 1) process.kill(-g, 'SIGKILL');
      } catch {}
    }
    for (const s of st.strangers ?? []) {
      try {
        if (aliveAs(s.pid, s.start)) process.kill(s.pid, 'SIGKILL');
      } catch {}
    }
    if (st.leftover && aliveAs(st.leftover.pid, st.leftover.start)) {
      try {
        process.kill(st.leftover.pid, 'SIGKILL');
      } catch {}
    }
    if (st.fresh) await st.fresh.close().catch(() => {});
  };

  const rounds = plan(args.rounds, args.seed);
  let batchNo = 0;
  const pending = [];
  const runBatch = async () => {
    if (pending.length === 0) return;
    const batch = pending.splice(0);
    const n = batchNo++;
    const set = [];
    const t1 = Date.now();
    for (const p of batch) {
      p.batch = n;
      try {
        set.push(await setUp(p));
      } catch (err) {
        fail(p, err);
      }
    }
    if (set.length === 0) return;
    const stateDir = set[0].stateDir;
    try {
      const server = await mcp(stateDir, true);
      for (let i = 0; i < set.length; i++) {
        set[i].server = server;
        try {
          await finish(set[i], set.slice(i + 1));
        } catch (err) {
          fail(set[i].p, err);
          await salvage(set[i]);
        }
      }
    } catch (err) {
      for (const st of set) {
        fail(st.p, err);
        await salvage(st);
      }
    } finally {
      await closeServer(stateDir);
      byCombo['recovered/mcp'].ms += Date.now() - t1;
    }
  };

  let done = 0;
  let lastReport = Date.now();
  for (const p of rounds) {
    if (p.kind === 'recovered' && p.path === 'mcp') {
      pending.push(p);
      if (pending.length >= BATCH) await runBatch();
    } else {
      let st = null;
      const t1 = Date.now();
      try {
        st = await setUp(p);
        await finish(st);
        byCombo[`${p.kind}/${p.path}`].ms += Date.now() - t1;
      } catch (err) {
        fail(p, err);
        await salvage(st);
      }
    }
    done++;
    if (!args.verbose && (Date.now() - lastReport > 15_000 || done === rounds.length)) {
      lastReport = Date.now();
      const bad = failures.length;
      process.stderr.write(`reuse: ${done}/${rounds.length} rounds, ${((Date.now() - t0) / 1000).toFixed(0)} s, ${bad} failure(s), ${errors.length} error(s)\n`);
    }
  }
  await runBatch();

  for (const d of [...servers.keys()]) await closeServer(d);
  for (const r of registries.values()) await r.close().catch(() => {});
  factory.close();
  try {
    native.sweepCgroups();
  } catch {}

  // --- the summary ---
  const totals = {};
  for (const c of Object.values(byCombo)) for (const [k, v] of Object.entries(c)) totals[k] = (totals[k] ?? 0) + v;
  const elapsedMs = Date.now() - t0;
  const markedOk = totals.markedEnded + (args.strictBulk ? 0 : totals.bulkMissed) === totals.markedTotal;
  const ok = totals.strangersSignalled === 0 && markedOk && failures.length === 0 && errors.length === 0;
  const summary = {
    ok,
    rounds: args.rounds,
    seed: args.seed,
    graceMs: GRACE_MS,
    elapsedMs,
    env: { PROCWARD_NO_PIDFD: process.env.PROCWARD_NO_PIDFD ?? null },
    combinations: byCombo,
    skippedCombinations: SKIPPED.map(([kind, path, why]) => ({ kind, path, why })),
    totals,
    reuseArrangedRatio: totals.rounds ? totals.reuseArranged / totals.rounds : 0,
    byShape: shapes,
    killVariants: variants,
    containedRounds: contained,
    pidGivenAway: targets,
    strictBulk: args.strictBulk,
    failures,
    bulkMissed,
    anomalies,
    errors,
    notArranged: notArranged.slice(0, 50),
  };
  printTable(summary);
  if (args.json) writeFileSync(args.json, `${JSON.stringify(summary, null, 2)}\n`);
  if (!args.base) rmSync(base, { recursive: true, force: true });
  process.exit(ok ? 0 : 1);
}

function printTable(s) {
  const head = ['combination', 'rounds', 'reused', 'strangers', 'signalled', 'marked ended', 'bulk-missed', 'unprovable (cgroup-ended)', 'escapes', 'uncounted', 'anomalies', 'errors', 's/round'];
  const row = (name, c) => [
    name,
    c.rounds,
    c.reuseArranged,
    c.strangerProcesses,
    c.strangersSignalled,
    `${c.markedEnded}/${c.markedTotal}`,
    c.bulkMissed,
    `${c.unprovableTotal} (${c.unprovableEndedByCgroup})`,
    c.documentedEscapes,
    c.markedUncounted,
    c.anomalies,
    c.errors,
    c.rounds ? (c.ms / c.rounds / 1000).toFixed(2) : '-',
  ];
  const rows = Object.entries(s.combinations).map(([name, c]) => row(name, c));
  const t = s.totals;
  rows.push(row('total', t));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((v, i) => (i === 0 ? String(v).padEnd(widths[i]) : String(v).padStart(widths[i]))).join('  ');
  const out = [];
  out.push('');
  out.push(`PID-reuse harness: ${s.rounds} rounds, seed ${s.seed}, grace ${s.graceMs} ms, ${(s.elapsedMs / 1000).toFixed(1)} s`);
  out.push(line(head));
  for (const r of rows) out.push(line(r));
  for (const k of s.skippedCombinations) out.push(`skipped: ${k.kind}/${k.path} (${k.why})`);
  out.push('');
  out.push(`strangers signalled (must be 0): ${t.strangersSignalled}`);
  out.push(`marked leftovers ended: ${t.markedEnded}/${t.markedTotal}${t.bulkMissed ? ` (+${t.bulkMissed} not reached by killAll/killStartedSince: uncontained, outside the job's group, ended by the harness${s.strictBulk ? '; failures' : '; failures unless --lenient-bulk'})` : ''}`);
  out.push(`unprovable leftovers: ${t.unprovableTotal} (${t.unprovableEndedByCgroup} ended through the job's cgroup; ${t.documentedEscapes} documented escapes, ended by the harness)`);
  out.push(`rounds where PID reuse could not be arranged: ${t.reuseNotArranged} of ${t.rounds} (${((1 - s.reuseArrangedRatio) * 100).toFixed(1)}%)`);
  out.push(`by shape: ${Object.entries(s.byShape).map(([k, v]) => `${k} ${v.reuseArranged}/${v.rounds}`).join(', ')}; kill variants: ${JSON.stringify(s.killVariants)}; contained rounds: ${s.containedRounds}; PID given away: ${JSON.stringify(s.pidGivenAway)}`);
  out.push(`uncounted: polls where a live marked leftover of an uncontained job (outside its group) was not in poll().leftovers: ${t.markedUncounted}`);
  out.push(`anomalies (reported, not failures): ${s.anomalies.length}; rounds that could not run: ${s.errors.length}`);
  out.push(`elapsed: ${(s.elapsedMs / 1000).toFixed(1)} s`);
  for (const f of s.failures.slice(0, 20)) out.push(`FAILURE: ${JSON.stringify(f)}`);
  for (const b of s.bulkMissed.slice(0, 3)) out.push(`bulk-missed: ${JSON.stringify(b)}`);
  for (const a of s.anomalies.slice(0, 10)) out.push(`anomaly: ${JSON.stringify(a)}`);
  for (const e of s.errors.slice(0, 10)) out.push(`error: ${JSON.stringify(e)}`);
  out.push(s.ok ? 'RESULT: ok' : 'RESULT: FAILED');
  process.stdout.write(`${out.join('\n')}\n`);
}

// --- main -----------------------------------------------------------------------------

const rawArgs = process.argv.slice(2);
const args = parseArgs(rawArgs);
if (args.inside) {
  inside(args).catch((err) => {
    process.stderr.write(`reuse: ${err?.stack ?? err}\n`);
    process.exit(1);
  });
} else {
  outside(
    args,
    rawArgs.filter((a) => a !== '--inside'),
  );
}
