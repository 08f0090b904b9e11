/**
 * A session at run time: its record plus what only this host knows (output tail, waiters,
 * the native job with its input side, kill state). `registry.ts` owns the map of these.
 */
import { ProcwardError } from '../errors.js';
import { fromNative } from '../errors.js';
import type { RecordedExit } from '../persist/jobfiles.js';
import type { ExecutionEnvironment } from '../remote/environments.js';
import type { NativeJob } from '../native.js';
import type { SandboxPoller } from '../remote/sandbox.js';
import type { LineWatcher } from '../policy/notifications.js';
import { OutputTail, type TailView } from '../output/tail.js';
import type { SessionRecord } from './record.js';
import type { SessionSummary } from '../types.js';

export interface Live {
  record: SessionRecord;
  tail: TailView;
  /** Recovered from a checkpoint: not our child, refreshed by identity. */
  detached: boolean;
  /**
   * Written by another host that is still alive: that host owns the entry. We show it,
   * re-read it from the checkpoint, may kill it, but never write it.
   */
  foreign: boolean;
  /** Kills of this host currently signalling the session. */
  killsInFlight: number;
  /** A kill of ours reached the leader, so its end is `killed`. */
  killed: boolean;
  /** The last signal that kill sent (`SIGTERM`, or `SIGKILL` after escalation). */
  killSignal?: string;
  /** An end the reader reported while a kill was in flight: published once the kill knows whether it reached the leader. */
  pendingExit?: RecordedExit;
  /** A sandbox session's poller found the job gone while a kill was in flight: why. */
  pendingLost?: string;
  /** Stops the background finishing of a kill that timed out. */
  finisher?: AbortController;
  waiters: Set<() => void>;
  /** Matches output lines against the session's watch patterns. */
  watcher?: LineWatcher;
  /** Bytes of a detached durable job's log already fed to the watcher. */
  watchOffset?: number;
  /** The native job (attached sessions only): its stdin or PTY. */
  job?: NativeJob;
  /** The tail limit the registry last set (see `rebalance`). */
  tailLimit?: number;
  /** Bytes the tail held when the session ended (kept current by `rebalance`). */
  heldAfterExit?: number;
  /** A sandbox session's environment and poller. */
  sandbox?: { env: ExecutionEnvironment; poller: SandboxPoller };
}


export function newLive(record: SessionRecord, tailChars: number, detached: boolean, foreign: boolean): Live {
  return { record, tail: new OutputTail(tailChars), detached, foreign, killsInFlight: 0, killed: false, waiters: new Set() };
}


/** The summary `list`, `spawn` and `poll` give for a session. */
export function summary(live: Live, scoped = false): SessionSummary {
  const r = live.record;
  return {
    id: r.id,
    command: r.command,
    cwd: r.cwd,
    pid: r.pid,
    status: r.status,
    exitCode: r.exitCode,
    signal: r.signal,
    reason: r.reason,
    startedAt: r.startedAt,
    exitedAt: r.exitedAt,
    uptimeMs: (r.exitedAt ?? Date.now()) - r.startedAt,
    ...(r.taskId !== undefined && { taskId: r.taskId }),
    ...(r.ownerTaskId !== undefined && { ownerTaskId: r.ownerTaskId }),
    ...(r.sessionKey !== undefined && { sessionKey: r.sessionKey }),
    durable: r.durable,
    ...(r.cgroup !== undefined && { cgroup: r.cgroup }),
    ...(r.pidScope !== undefined && { pidScope: r.pidScope }),
    detached: live.detached,
    ...(scoped && { sessionScoped: true }),
  };
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

/** Writes to the session's input, mapping a broken pipe to `SESSION_EXITED`. */
export function writeInput(live: Live, data: string): { id: string; bytes: number } {
  const job = inputOf(live);
  if (typeof data !== 'string') throw new ProcwardError('INVALID_ARGUMENT', 'data must be a string');
  try {
    job.write(data);
  } catch (err) {
    const e = fromNative(err);
    if (/Broken pipe/.test(e.message)) throw new ProcwardError('SESSION_EXITED', `${live.record.id} no longer reads its stdin (it exited)`);
    if (/stdin is closed/.test(e.message)) throw new ProcwardError('STDIN_CLOSED', `${live.record.id}: its stdin was closed`);
    throw e;
  }
  return { id: live.record.id, bytes: Buffer.byteLength(data) };
}
