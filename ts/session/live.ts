/**
 * A session at run time (see {@link Live}): how one is made, summarised, waited for, and
 * written to through the native job this host started. `registry.ts` owns the map of these.
 */
import { ProcwardError } from '../errors.js';
import { native, type NativeJob } from '../native.js';
import { OutputTail } from '../output/tail.js';
import { redactStoredText } from '../persist/stored.js';
import type { ExitedSession, RunningSession, SessionSummary } from '../types.js';
import type { JobSession, Live } from './kind.js';
import type { SessionRecord } from './record.js';

export type { Live } from './kind.js';

/**
 * A session's run-time state; `kindOf` makes the object that answers for its kind of job.
 *
 * Every field is there from the start, `watcher` last: V8 keeps an object's fields inline
 * only while no property is deleted, except the last one added, and the registry deletes
 * `watcher` when a session ends. A finished session held its fields in a dictionary
 * otherwise (about 0.7 KB of the heap each; see bench/growth.mjs `memoryBench`).
 */
export function newLive(record: SessionRecord, tailChars: number, detached: boolean, foreign: boolean, kindOf: (live: Live) => JobSession): Live {
  const live: Live = {
    record,
    tail: new OutputTail(tailChars),
    kind: undefined as unknown as JobSession,
    detached,
    foreign,
    killsInFlight: 0,
    killed: false,
    killMarked: false,
    killSignal: undefined,
    pendingExit: undefined,
    pendingLost: undefined,
    finisher: undefined,
    waiters: new Set(),
    endReaders: 0,
    watchOffset: undefined,
    job: undefined,
    tailLimit: undefined,
    heldAfterExit: undefined,
    watcher: undefined,
  };
  live.kind = kindOf(live);
  return live;
}

type SessionEnd = 'status' | 'exitCode' | 'signal' | 'reason' | 'exitedAt';

/**
 * A summary's end: none while running; an ended session always says when and why (a
 * read-only entry that does not is shown ended when it started, reason `lost`).
 */
function endOf(r: SessionRecord): Pick<RunningSession, SessionEnd> | Pick<ExitedSession, SessionEnd> {
  if (r.status === 'running') return { status: 'running', exitCode: null, signal: null, reason: null, exitedAt: null };
  const deadline = r.timeoutMs !== undefined ? { deadlineExceeded: r.timedOut === true } : {};
  return { status: 'exited', exitCode: r.exitCode, signal: r.signal, reason: r.reason ?? 'lost', exitedAt: r.exitedAt ?? r.startedAt, ...deadline };
}

/** The summary `list`, `spawn` and `poll` give for a session. */
export function summary(live: Live, scoped = false, stopped?: boolean): SessionSummary {
  const r = live.record;
  return {
    id: r.id,
    command: r.command,
    cwd: r.cwd,
    // A durable job's own process, not its supervisor's (unknown until the supervisor names it).
    pid: r.durable ? (r.jobIdentity?.pid ?? null) : r.pid,
    ...endOf(r),
    startedAt: r.startedAt,
    uptimeMs: (r.exitedAt ?? Date.now()) - r.startedAt,
    // Labels are matched as given, and shown redacted: a record on disk may carry anything.
    ...(r.taskId !== undefined && { taskId: redactStoredText(r.taskId) }),
    ...(r.ownerTaskId !== undefined && { ownerTaskId: redactStoredText(r.ownerTaskId) }),
    ...(r.sessionKey !== undefined && { sessionKey: redactStoredText(r.sessionKey) }),
    durable: r.durable,
    ...(r.durable && r.pid !== null && { supervisorPid: r.pid }),
    ...(r.timeoutMs !== undefined && { timeoutMs: r.timeoutMs }),
    ...(r.cgroup !== undefined && { cgroup: r.cgroup }),
    ...(r.pidScope !== undefined && { pidScope: r.pidScope }),
    ...(r.environment !== undefined && { environment: r.environment }),
    detached: live.detached,
    ...(scoped && { sessionScoped: true }),
    ...(r.status === 'running' && stopped !== undefined && { stopped }),
  };
}

/**
 * Whether each session's job is stopped (see `SessionSummary.stopped`), in order:
 * `undefined` for a session with no process here to look at, or one that cannot be read.
 * One native call for all of them: one stat read per job.
 */
export function stoppedFlags(lives: Live[]): (boolean | undefined)[] {
  const probes = lives.map((l) => l.kind.stopProbe());
  const asked = probes.filter((p) => p !== null);
  if (asked.length === 0) return lives.map(() => undefined);
  let answers: (boolean | null | undefined)[];
  try {
    answers = native.jobsStopped(asked);
  } catch {
    // A record's identity the binding cannot take (a malformed start time): nothing to say.
    return lives.map(() => undefined);
  }
  let next = 0;
  return probes.map((p) => (p === null ? undefined : (answers[next++] ?? undefined)));
}

/** Resolves once the session has ended, or after `ms` (whichever comes first). */
export function settle(live: Live, ms: number): Promise<void> {
  if (live.record.status === 'exited') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      live.waiters.delete(done);
      resolve();
    }
    live.waiters.add(done);
  });
}

/**
 * Resolves `true` on timeout, `false` when the session ends; rejects with the abort reason.
 * The timers are ref'd on purpose: awaiting a job keeps the host alive, while the native
 * reader's callback (weak) never does. `tick` re-checks detached sessions.
 */
export function untilEnd(live: Live, opts: { timeoutMs?: number; signal?: AbortSignal; tick?: () => void; tickMs: number }): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    const timer = setTimeout(() => finish(true), Math.min(opts.timeoutMs ?? 2 ** 31 - 1, 2 ** 31 - 1));
    const ticker = opts.tick ? setInterval(opts.tick, opts.tickMs) : undefined;
    const onAbort = () => {
      cleanup();
      reject(opts.signal?.reason);
    };
    const waiter = () => finish(false);
    function cleanup() {
      clearTimeout(timer);
      if (ticker) clearInterval(ticker);
      live.waiters.delete(waiter);
      opts.signal?.removeEventListener('abort', onAbort);
    }
    function finish(timedOut: boolean) {
      cleanup();
      resolve(timedOut);
    }
    live.waiters.add(waiter);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The input side of a running session this host started, or a clear error. */
export function inputOf(live: Live): NativeJob {
  const r = live.record;
  if (r.status === 'exited') throw new ProcwardError('SESSION_EXITED', `${r.id} has exited; its stdin is closed`);
  if (!live.job && r.durable) throw new ProcwardError('NO_STDIN', `${r.id} has no stdin (start it with { stdin: true }, or \`procward start --stdin\`)`);
  if (!live.job) throw new ProcwardError('NO_STDIN', `${r.id} was started by another host; only that host can write to it`);
  if (!live.job.inputKind) throw new ProcwardError('NO_STDIN', `${r.id} has no stdin (start it with { stdin: true } or { pty })`);
  return live.job;
}
