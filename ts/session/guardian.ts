/**
 * Jobs that die with their host: the pipe and PTY jobs of an in-memory registry (no state
 * directory) can be reached by this host alone, so when it ends, however it ends (a return
 * from main, an uncaught error, Ctrl-C, SIGKILL), they end too, the whole tree and not only
 * the direct child. A job started with `outliveHost: true` is left out, and durable jobs
 * always outlive their host (any host recovers them from the state directory).
 *
 * Unix: one guardian per host process, `procward-supervise --guardian` in a session of its
 * own, started with the first such job. This host holds the write end of its stdin and
 * tells it each job's identity (and cgroup) as the job starts and when it ends; the kernel
 * closes that end when the host ends, and the guardian then tree-kills the jobs still
 * listed, by identity and through the kill guard (see the supervisor's `guardian.rs`).
 * `PR_SET_PDEATHSIG` would reach the direct child only, and fire when the spawning thread
 * (not the process) exits. A guardian that dies is started again with the next job, which
 * hands it every job still guarded.
 *
 * Windows needs no guardian: the host holds each job's Job Object, created with
 * `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, and the kernel closes it (ending every process in
 * it) when the host ends; there `outliveHost` does not keep a pipe or PTY job alive.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { supervisorPath } from '../native.js';
import type { Identity } from '../processes.js';

/** Lines telling the guardian of each job it guards, by `<pid> <start time>`. */
const guarded = new Map<string, string>();
let guardian: ChildProcess | null = null;
/** Why no guardian could be started, once (a missing supervisor binary). */
let unavailable: string | null = null;

const key = (id: Identity) => `${id.pid} ${id.startTime}`;

/**
 * Guards a job this host started: it ends with the host. `sessionId` names its cgroup when
 * it has one; `mark` is the session's mark, which the guardian requires of the job's leader
 * (see `mark.ts`). Returns why it cannot be guarded (no supervisor binary to run the
 * guardian), or null; a no-op returning null on Windows.
 */
export function guardJob(id: Identity, sessionId: string | null, mark: string | undefined): string | null {
  if (process.platform === 'win32') return null;
  const line = `+ ${key(id)} ${sessionId ?? '-'}${mark !== undefined ? ` ${mark}` : ''}\n`;
  guarded.set(key(id), line);
  // A guardian started now is handed every guarded job, this one included.
  if (guardian) guardian.stdin?.write(line);
  else start();
  return unavailable;
}

/** The job ended (or was killed): the guardian forgets it. */
export function releaseJob(id: Identity): void {
  if (!guarded.delete(key(id))) return;
  guardian?.stdin?.write(`- ${key(id)}\n`);
}

/** Starts the guardian and hands it every job guarded so far. */
function start(): void {
  let exe: string;
  try {
    exe = supervisorPath();
  } catch (err) {
    unavailable = `jobs cannot be guarded to end with this host: ${(err as Error).message}`;
    return;
  }
  // Its own session (detached): the host's terminal signals never reach it. Its stdout and
  // stderr go nowhere, and neither it nor its stdin keeps this host's event loop alive.
  const child = spawn(exe, ['--guardian'], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  child.unref();
  const stdin = child.stdin as NodeJS.WritableStream & { unref?: () => void };
  stdin.unref?.();
  // A guardian that died: its pipe breaks (EPIPE); the next job starts another.
  child.stdin?.on('error', () => undefined);
  child.on('error', () => undefined);
  child.once('exit', () => {
    if (guardian === child) guardian = null;
  });
  guardian = child;
  for (const line of guarded.values()) child.stdin?.write(line);
}
