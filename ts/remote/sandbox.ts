/**
 * Sandbox sessions: jobs that run on the far side of an {@link ExecutionEnvironment}
 * (another host over SSH, a container, a pod), detached from the connection.
 *
 * On the far side each session has a directory `<tmpDir>/<session id>/` with `cmd` (the
 * command, decoded there from base64 so it arrives byte for byte), `output.log`, `pid` and
 * `exit` (written atomically by a small wrapper when the job ends). The job runs under
 * `setsid`, so its PID is its process group id there. Its PID is never signalled on the
 * host: a kill runs on the far side.
 *
 * A {@link SandboxPoller} follows the session: it reads the log from a byte offset (never
 * the whole file again), keeps UTF-8 sequences whole across reads, starts over if the log
 * shrank, notices the end through the exit file, and backs off while the environment is
 * slow or unreachable; the session is reported lost only after a deadline.
 */
import { StringDecoder } from 'node:string_decoder';
import type { ExecResult, ExecutionEnvironment } from './environments.js';
import { ProcwardError } from '../errors.js';

/** Single-quotes a value for a POSIX shell. */
export function shq(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** What launching gave: the far-side PID, or why it failed. */
export type LaunchResult = { ok: true; pid: number; dir: string } | { ok: false; code: number | null; output: string };

/**
 * The far-side directory of a session: `<tmpDir>/<session id>`, where `%i` in `tmpDir`
 * stands for the far-side user's numeric id (the default is `/tmp/procward-sandbox-%i`),
 * expanded there by {@link farDir}.
 */
export function sandboxDir(env: ExecutionEnvironment, sessionId: string): string {
  return `${env.tmpDir}/${sessionId}`;
}

/** Shell that sets `D` to the far-side directory `dir`, each `%i` replaced by the far side's `id -u`. */
export function farDir(dir: string): string {
  return [`D=${shq(dir)}`, 'while :; do case "$D" in *%i*) D="${D%%%i*}$(id -u)${D#*%i}";; *) break;; esac; done'].join('\n');
}

/**
 * Shell that creates the session directory `$D` and its base `${D%/*}` only where no other
 * far-side user can reach them. The base (default `/tmp/procward-sandbox-<uid>`, below a
 * world-writable /tmp) may have been created first by someone else, who could then swap the
 * session directory for one that names any file as its log: so the base must be a real
 * directory (not a symlink) owned by this user and writable by no one else, created 0700
 * when missing; the session directory is new (or this user's own). Otherwise the launch
 * fails with exit status 126 and says why.
 */
const SAFE_DIRS = [
  'umask 077',
  'B=${D%/*}',
  'refuse() { echo "procward: refusing to launch: $1" >&2; exit 126; }',
  '[ -L "$B" ] && refuse "sandbox base $B is a symlink"',
  '[ -e "$B" ] || mkdir -p -m 700 "$B" || refuse "cannot create sandbox base $B"',
  '[ ! -L "$B" ] && [ -d "$B" ] || refuse "sandbox base $B is not a directory"',
  '[ -O "$B" ] || refuse "sandbox base $B is not owned by $(id -un) (uid $(id -u))"',
  'case $(ls -ld "$B") in ?????w*|????????w*) refuse "sandbox base $B is writable by its group or by others";; esac',
  'if ! mkdir -m 700 "$D" 2>/dev/null; then [ ! -L "$D" ] && [ -d "$D" ] && [ -O "$D" ] || refuse "session directory $D exists and is not this user\'s own"; fi',
];

/**
 * Starts `command` detached on the far side, in `cwd` (default: the far side's home) with
 * `vars` exported. A launch whose outcome is unknown (the client timed out) is reported as
 * `unknown`: the poller then finds the job, if it started, through its pid file.
 */
export async function launch(
  env: ExecutionEnvironment,
  sessionId: string,
  command: string,
  opts: { cwd?: string; vars?: Record<string, string> } = {},
): Promise<LaunchResult | { ok: 'unknown'; dir: string }> {
  const dir = sandboxDir(env, sessionId);
  const b64 = Buffer.from(command, 'utf8').toString('base64');
  const exports = Object.entries(opts.vars ?? {})
    .map(([k, v]) => `export ${k}=${shq(v)}`)
    .join('\n');
  const script = [
    'set -e',
    'command -v setsid >/dev/null 2>&1 || { echo "procward: setsid is missing on the far side" >&2; exit 127; }',
    farDir(dir),
    ...SAFE_DIRS,
    `printf '%s' ${shq(b64)} | base64 -d > "$D/cmd"`,
    `printf '%s\\n' ${shq(exports)} > "$D/env"`,
    opts.cwd ? `printf '%s' ${shq(opts.cwd)} > "$D/cwd"` : ': > "$D/cwd"',
    // The wrapper: runs the command (with bash when the far side has it), records its status
    // atomically. Detached from this connection: new session, no stdin, output to the log.
    `setsid sh -c 'cd "$(cat "$1/cwd")" 2>/dev/null || cd; . "$1/env"; if command -v bash >/dev/null 2>&1; then bash "$1/cmd"; else sh "$1/cmd"; fi > "$1/output.log" 2>&1 < /dev/null; echo $? > "$1/exit.tmp"; mv "$1/exit.tmp" "$1/exit"' procward-sandbox "$D" > /dev/null 2>&1 < /dev/null &`,
    'echo $! > "$D/pid"',
    'echo "PID $!"',
  ].join('\n');
  let res: ExecResult;
  try {
    res = await env.exec(script, { timeoutMs: 30_000 });
  } catch (err) {
    return { ok: false, code: null, output: (err as Error).message };
  }
  const text = res.stdout.toString('utf8');
  const m = /^PID (\d+)$/m.exec(text);
  if (m && res.code === 0) return { ok: true, pid: Number(m[1]), dir };
  if (res.timedOut) return { ok: 'unknown', dir };
  return { ok: false, code: res.code, output: `${text}${res.stderr}`.trim() };
}

/** One poll: new log bytes from `offset` (at most `max`), the log size, and the exit status if any. */
export interface PollChunk {
  size: number;
  data: Buffer;
  exitCode: number | null;
  exited: boolean;
  /** The wrapper's PID from the pid file (null before the launch wrote it). */
  pid: number | null;
  /** Whether the wrapper (verified by its command line naming the session directory) still runs. */
  wrapperAlive: boolean;
}

/** Shell that prints "alive" when PID $P is this session's wrapper (its argv names $D). */
const WRAPPER_ALIVE = `[ -n "$P" ] && ps -o args= -p "$P" 2>/dev/null | grep -qF -- "$D" && echo alive || echo dead`;

/** Reads the session's state in one round trip. */
export async function pollOnce(env: ExecutionEnvironment, dir: string, offset: number, max = 256 * 1024): Promise<PollChunk> {
  const script = [
    farDir(dir),
    // The exit file first: once it exists, the size read next covers all the job wrote.
    'E=$(cat "$D/exit" 2>/dev/null || echo -)',
    'P=$(cat "$D/pid" 2>/dev/null || true)',
    `A=$(${WRAPPER_ALIVE})`,
    'S=$(wc -c < "$D/output.log" 2>/dev/null || echo 0)',
    'echo "$S $E ${P:--} $A"',
    `if [ "$S" -gt ${offset} ]; then tail -c +${offset + 1} "$D/output.log" | head -c ${max}; fi`,
  ].join('\n');
  const res = await env.exec(script, { timeoutMs: 20_000 });
  if (res.code !== 0 || res.timedOut) throw new Error(`poll failed (${res.timedOut ? 'timed out' : `exit ${res.code}`}): ${res.stderr.trim()}`);
  const nl = res.stdout.indexOf(10);
  const [sizeText, exitText, pidText, alive] = res.stdout.subarray(0, nl).toString().trim().split(/\s+/);
  const exited = exitText !== undefined && exitText !== '-';
  const pid = pidText && pidText !== '-' ? Number(pidText) : null;
  return { size: Number(sizeText) || 0, data: res.stdout.subarray(nl + 1), exitCode: exited ? Number(exitText) : null, exited, pid, wrapperAlive: alive === 'alive' };
}

/**
 * Tree kill on the far side: SIGTERM the job's process group, wait, SIGKILL what is left.
 * The group is signalled only while its leader is provably this session's wrapper (its
 * command line names the session directory), never a process that reused the PID.
 * The PID is the one the far side recorded for this session (its `pid` file), never one
 * from the host's records, and one that is not a decimal number above 1 is never signalled
 * (`kill -TERM -1` would reach every process there).
 * Returns `exited` when the job had already ended, else the surviving PIDs.
 * Throws `ENVIRONMENT_UNAVAILABLE` when the far side cannot be reached.
 */
export async function killRemote(env: ExecutionEnvironment, dir: string, graceMs: number): Promise<'exited' | number[]> {
  const wait = Math.max(0, Math.ceil(graceMs / 100));
  // dash's kill takes `-<pgid>` but not `--`; a zombie is dead, so liveness comes from ps.
  const script = [
    farDir(dir),
    'P=$(cat "$D/pid" 2>/dev/null || true)',
    'case "$P" in ""|*[!0-9]*) echo EXITED; exit 0;; esac',
    '[ "$P" -gt 1 ] || { echo EXITED; exit 0; }',
    '[ -f "$D/exit" ] && { echo EXITED; exit 0; }',
    `[ "$(${WRAPPER_ALIVE})" = alive ] || { echo EXITED; exit 0; }`,
    "members() { ps -eo pid=,pgid=,stat= 2>/dev/null | awk -v g=$P '$2 == g && $3 !~ /^Z/ { print $1 }'; }",
    'kill -TERM -$P 2>/dev/null || kill -TERM $P 2>/dev/null || true',
    `i=0; while [ $i -lt ${wait} ] && [ -n "$(members)" ]; do sleep 0.1; i=$((i+1)); done`,
    'if [ -n "$(members)" ]; then kill -KILL -$P 2>/dev/null || true; sleep 0.2; fi',
    'members',
  ].join('\n');
  const res = await env.exec(script, { timeoutMs: graceMs + 20_000 });
  if (res.code !== 0 || res.timedOut) {
    throw new ProcwardError('ENVIRONMENT_UNAVAILABLE', `cannot reach the sandbox to kill it (${res.timedOut ? 'timed out' : `exit ${res.code}`}): ${res.stderr.trim()}`);
  }
  if (/^EXITED$/m.test(res.stdout.toString())) return 'exited';
  return res.stdout
    .toString()
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
}

/** Callbacks of a {@link SandboxPoller}. */
export interface PollerEvents {
  output(text: string): void;
  /** The wrapper's PID, when the poller learned it from the pid file. */
  pid?(pid: number): void;
  /** The job ended with this exit code (a shell status: 128+N for signal N). */
  exit(code: number): void;
  /** The environment stayed unreachable past the deadline. */
  lost(reason: string): void;
}

/** Follows one sandbox session (see the module docs). */
export class SandboxPoller {
  private offset = 0;
  private decoder = new StringDecoder('utf8');
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private failingSince: number | null = null;
  private lastAttempt = 0;
  private deadPolls = 0;
  private knownPid: number | null = null;
  private delay: number;

  constructor(
    private readonly env: ExecutionEnvironment,
    private readonly dir: string,
    private readonly events: PollerEvents,
    private readonly opts: { intervalMs?: number; maxIntervalMs?: number; lostAfterMs?: number } = {},
  ) {
    this.delay = opts.intervalMs ?? 200;
  }

  /** Bytes of the remote log read so far. */
  get bytesRead(): number {
    return this.offset;
  }

  private readonly startedAt = Date.now();

  start(): void {
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  private running: Promise<void> | null = null;

  /** One poll now (also used by `wait` to notice the end without waiting for the timer). */
  tick(): Promise<void> {
    // While the environment is failing, waiters do not get to shorten the backoff.
    if (this.failingSince !== null && Date.now() - this.lastAttempt < this.delay) return this.running ?? Promise.resolve();
    this.running ??= this.pollNow().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async pollNow(): Promise<void> {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    let chunk: PollChunk;
    this.lastAttempt = Date.now();
    try {
      chunk = await pollOnce(this.env, this.dir, this.offset);
    } catch (err) {
      const now = Date.now();
      this.failingSince ??= now;
      if (now - this.failingSince > (this.opts.lostAfterMs ?? 60_000)) {
        this.stop();
        this.events.lost(`environment unreachable for ${Math.round((now - this.failingSince) / 1000)} s: ${(err as Error).message}`);
        return;
      }
      this.delay = Math.min(this.delay * 2, this.opts.maxIntervalMs ?? 5000);
      this.schedule(this.delay);
      return;
    }
    this.failingSince = null;
    this.delay = this.opts.intervalMs ?? 200;
    if (chunk.pid !== null && chunk.pid !== this.knownPid) {
      this.knownPid = chunk.pid;
      this.events.pid?.(chunk.pid);
    }
    if (chunk.size < this.offset) {
      // The log shrank (rotated or truncated on the far side): start over from its start.
      this.offset = 0;
      this.decoder = new StringDecoder('utf8');
      this.schedule(0);
      return;
    }
    if (chunk.data.length > 0) {
      this.offset += chunk.data.length;
      const text = this.decoder.write(chunk.data);
      if (text) this.events.output(text);
    }
    if (this.offset < chunk.size) {
      this.schedule(0);
      return;
    }
    if (chunk.exited) {
      const rest = this.decoder.end();
      if (rest) this.events.output(rest);
      this.stop();
      this.events.exit(chunk.exitCode ?? 0);
      return;
    }
    // No exit file and no wrapper (killed with its job, or its directory removed): after a
    // second look, the session ended without a status.
    if (!chunk.wrapperAlive && (chunk.pid !== null || Date.now() - this.startedAt > (this.opts.lostAfterMs ?? 60_000))) {
      if (++this.deadPolls >= 2) {
        this.stop();
        this.events.lost(chunk.pid === null ? 'the job never started on the far side' : 'the job ended on the far side without an exit status');
        return;
      }
    } else {
      this.deadPolls = 0;
    }
    this.schedule(this.delay);
  }
}
