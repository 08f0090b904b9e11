/**
 * Sandbox sessions: jobs that run on the far side of an {@link ExecutionEnvironment}
 * (another host over SSH, a container, a pod), detached from the connection.
 *
 * On the far side each session has a directory `<tmpDir>/<session id>/` with `cmd` (the
 * command, decoded there from base64 so it arrives byte for byte), `output.log`, `pid` and
 * `start` (the wrapper's PID and its start time), `job` (the job's) and `exit` (written
 * atomically by the wrapper when the job ends: the code, or `signal:NAME`). The wrapper runs
 * under `setsid`, so its PID is the session id there. Its PID is never signalled on the
 * host: a kill runs on the far side, on processes it identified there by PID and start time.
 * The scripts' shell fragments are in `farshell.ts`; the poller that follows a session is in
 * `poller.ts`.
 */
import { randomBytes } from 'node:crypto';
import type { ExecResult, ExecutionEnvironment } from './environments.js';
import { ProcwardError } from '../errors.js';
import { CLAIM_MARGIN_S, farDir, KILL_CLAIM, MARK, OURS, OWN, PSTAT, SAFE_DIRS, shq, SIGEACH, WRAPPER, WRAPPER_ALIVE } from './farshell.js';

export { farDir, shq } from './farshell.js';
export { SandboxPoller, type PollerEvents } from './poller.js';
export { type FarExit, type PollChunk, parseExit, pollOnce } from './farpoll.js';

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
    SAFE_DIRS,
    PSTAT,
    `printf '%s' ${shq(b64)} | base64 -d > "$D/cmd"`,
    `printf '%s\\n' ${shq(exports)} > "$D/env"`,
    opts.cwd ? `printf '%s' ${shq(opts.cwd)} > "$D/cwd"` : ': > "$D/cwd"',
    // The session's mark, which the wrapper exports to the job (see MARK in farshell.ts).
    `printf '%s' ${shq(`${sessionId}:${randomBytes(16).toString('hex')}`)} > "$D/mark"`,
    // Detached from this connection: a new session, no stdin, output to the log.
    `setsid sh -c ${shq(WRAPPER)} procward-sandbox "$D" > /dev/null 2>&1 < /dev/null &`,
    'P=$!',
    // The start time does not change when the forked shell execs setsid and the wrapper.
    'if pstat "$P"; then echo "$T" > "$D/start"; fi',
    'echo "$P" > "$D/pid"',
    'echo "PID $P"',
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

/** What {@link killRemote} did to a job that was running. */
export interface RemoteKill {
  /** PIDs still alive after SIGKILL and the settle window (empty: the kill succeeded). */
  survivors: number[];
  /** The signal that ended the job: `SIGKILL` when the job's own process outlived the grace period, else `SIGTERM`. */
  signal: 'SIGTERM' | 'SIGKILL';
  /** Whether SIGKILL was sent (something of the job outlived the grace period). */
  escalated: boolean;
  /** Far-side PIDs that took a signal, each once (the wrapper's alone where the far side has no /proc). */
  signalled: number[];
}


/**
 * Tree kill on the far side, as locally: snapshot the job's processes (the wrapper, its
 * descendants by parent PID, the members of its session, and every process started since
 * the wrapper whose environment carries the session's mark, a `setsid` escapee whose
 * parent has exited included; see `OWN` and `MARK` in `farshell.ts`), each
 * with its start time, *before* the first signal; SIGTERM (and SIGCONT) each one that is
 * still the process of that start time, and the process group while the wrapper is current;
 * wait up to the grace period; walk again from the survivors (a `setsid` escapee whose
 * parent died meanwhile is still reached); SIGKILL each after a fresh identity check; settle
 * and report the survivors. A process whose PID was reused is never signalled, nor PID 1,
 * nor the far shell running the script, its ancestors, or their groups and sessions (see
 * `OURS` in `farshell.ts`).
 *
 * Other hosts may follow the same session: before its first signal the kill writes its claim
 * (`kill`, with its deadline: now plus the grace period, twice, and {@link CLAIM_MARGIN_S}),
 * and once nothing of the job is left, `killed` with the signal that ended it (SIGKILL when
 * the job's own process, as `job` names it, outlived the grace period). A job that had ended
 * by itself gets neither.
 *
 * The wrapper's PID and start time are the ones the far side recorded for this session
 * (`pid`, `start`), never ones from the host's records. Without /proc (a non-Linux far
 * side) the process group alone is signalled, while its leader's command line names the
 * session directory. Returns `exited` when the job had already ended (and nothing of it
 * remains), else what the kill did. Throws `ENVIRONMENT_UNAVAILABLE` when the far side
 * cannot be reached, `KILL_REFUSED` (nothing signalled) when the pid file names one of the
 * far shell's own, or a live process of the recorded start time that is not the wrapper.
 */
export async function killRemote(env: ExecutionEnvironment, dir: string, graceMs: number): Promise<'exited' | RemoteKill> {
  const wait = Math.max(0, Math.ceil(graceMs / 100));
  // dash's kill takes `-<pgid>` but not `--`; a zombie is dead.
  const script = [
    farDir(dir),
    WRAPPER_ALIVE,
    '[ -n "$P" ] && [ "$P" -gt 1 ] || { echo EXITED; exit 0; }',
    // A job that ended by itself is reported as such, though what it left running is killed.
    'EX=; [ -e "$D/exit" ] && EX=1',
    OWN,
    OURS,
    SIGEACH,
    MARK,
    `mark ${shq(dir.slice(dir.lastIndexOf('/') + 1))}`,
    // The job can rewrite `pid` and `start`: a wrapper that is this script, one of its
    // ancestors (the host, through the local shell) or leads their group or session is a
    // lie, and so is a live process of that start time whose arguments are not the wrapper's.
    '[ -d /proc/1 ] && ours "$P" && { echo FOREIGN; exit 0; }',
    '[ -d /proc/1 ] && [ -n "$PS" ] && [ "$A" != alive ] && pstat "$P" && [ "$T" = "$PS" ] && [ "$ST" != Z ] && { echo FOREIGN; exit 0; }',
    KILL_CLAIM,
    // The claim goes out once there is something to signal, before the first signal.
    `stake() { [ -n "$EX" ] || claim ${2 * Math.ceil(graceMs / 1000) + CLAIM_MARGIN_S}; }`,
    'SIG=SIGTERM; ESC=',
    'if [ -d /proc/1 ] && [ -n "$PS" ]; then',
    // The job's own process (the shell running the command), as the wrapper recorded it.
    '  J=$(rd "$D/job" 48); set -f; set -- $J; set +f; JOB=; num "$1" && num "$2" && JOB="$1 $2"',
    '  SNAP=$(own "$P" "$PS")',
    '  [ -n "$SNAP" ] || { echo EXITED; exit 0; }',
    '  stake',
    // Each member first, so the report names each one that took SIGTERM, then the group.
    '  echo "$SNAP" | sigeach TERM',
    '  [ "$A" = alive ] && kill -TERM -$P 2>/dev/null',
    '  echo "$SNAP" | sigeach CONT',
    `  i=0; while [ $i -lt ${wait} ] && [ -n "$(echo "$SNAP" | alive)" ]; do sleep 0.1; i=$((i+1)); done`,
    '  LEFT=$(echo "$SNAP" | alive)',
    '  if [ -n "$LEFT" ]; then',
    '    ESC=1',
    '    if [ -z "$JOB" ] || echo "$LEFT" | grep -qx "$JOB"; then SIG=SIGKILL; fi',
    '    MORE=$(own "$P" "$PS" $(echo "$LEFT" | while read -r p s; do echo "$p:$s"; done))',
    '    [ "$A" = alive ] && pstat "$P" && [ "$T" = "$PS" ] && kill -KILL -$P 2>/dev/null',
    '    printf \'%s\\n%s\\n\' "$LEFT" "$MORE" | sigeach KILL',
    '    SNAP=$(printf \'%s\\n%s\\n\' "$LEFT" "$MORE")',
    '    i=0; while [ $i -lt 20 ] && [ -n "$(echo "$SNAP" | alive)" ]; do sleep 0.1; i=$((i+1)); done',
    '  fi',
    '  REST=$(echo "$SNAP" | alive | while read -r p s; do echo "$p"; done)',
    'else',
    '  [ -n "$EX" ] && { echo EXITED; exit 0; }',
    '  [ "$A" = alive ] || { echo EXITED; exit 0; }',
    '  stake',
    "  members() { ps -eo pid=,pgid=,stat= 2>/dev/null | awk -v g=$P '$2 == g && $3 !~ /^Z/ { print $1 }'; }",
    '  { kill -TERM -$P 2>/dev/null || kill -TERM $P 2>/dev/null; } && echo "SENT $P"',
    `  i=0; while [ $i -lt ${wait} ] && [ -n "$(members)" ]; do sleep 0.1; i=$((i+1)); done`,
    '  if [ -n "$(members)" ]; then SIG=SIGKILL; ESC=1; kill -KILL -$P 2>/dev/null || true; sleep 0.2; fi',
    '  REST=$(members)',
    'fi',
    '[ -n "$REST" ] && echo "$REST"',
    'if [ -n "$EX" ]; then echo EXITED; exit 0; fi',
    '[ -n "$REST" ] || claimed "$SIG"',
    'echo "SIGNAL $SIG${ESC:+ ESCALATED}"',
  ].join('\n');
  const res = await env.exec(script, { timeoutMs: graceMs + 20_000 });
  if (res.code !== 0 || res.timedOut) {
    throw new ProcwardError('ENVIRONMENT_UNAVAILABLE', `cannot reach the sandbox to kill it (${res.timedOut ? 'timed out' : `exit ${res.code}`}): ${res.stderr.trim()}`);
  }
  const out = res.stdout.toString();
  if (/^FOREIGN$/m.test(out)) {
    throw new ProcwardError('KILL_REFUSED', "the far side's pid file names a process that is not the session's wrapper (the far shell, one of its ancestors or a leader of their group or session, or a process without the wrapper's arguments; the job can rewrite it): nothing was signalled");
  }
  if (/^EXITED$/m.test(out)) return 'exited';
  const how = /^SIGNAL (SIGTERM|SIGKILL)( ESCALATED)?$/m.exec(out);
  const sent = new Set([...out.matchAll(/^SENT (\d+)$/gm)].map((m) => Number(m[1])));
  return {
    signalled: [...sent],
    survivors: out
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => Number.isInteger(n) && n > 0),
    signal: how?.[1] === 'SIGKILL' ? 'SIGKILL' : 'SIGTERM',
    escalated: how?.[2] !== undefined,
  };
}
