/**
 * Low-level native helpers, usable without a registry: a reuse-safe replacement for
 * ps-spawning libraries (ps-list, pidtree, tree-kill). Linux reads procfs; other platforms
 * report identities as unknown until their sources are implemented (see README).
 */
import { fromNative, ProcwardError } from './errors.js';
import { native, type Identity, type NativeKillReport, type ProbeResult, type ProcessEntry, type Verdict } from './native.js';

export type { Identity, ProbeResult, ProcessEntry, Verdict };

/** Result of {@link killTree}: PIDs signalled, already gone, refused (reused PID), and survivors. */
export type KillReport = NativeKillReport;

/** Longest grace period or settle window a kill accepts, in milliseconds (one hour). */
export const MAX_GRACE_MS = 3_600_000;

/** Options of {@link killTree}. */
export interface KillTreeOptions {
  /** Milliseconds between the first signal and SIGKILL. Default 2000; 0 = never escalate. */
  graceMs?: number;
  /** First signal name. Default `SIGTERM`. */
  signal?: string;
  /** Milliseconds to wait for processes to vanish after the last signal. Default 500. */
  settleMs?: number;
  /** The job's cgroup directory (Linux): its members are part of the tree; escalation uses `cgroup.kill`. */
  cgroup?: string;
}

/** Throws `INVALID_ARGUMENT` unless `pid` is an integer from 1 to 2^31 - 1. */
function checkPid(pid: unknown): void {
  if (!Number.isInteger(pid) || (pid as number) < 1 || (pid as number) > 2 ** 31 - 1) {
    throw new ProcwardError('INVALID_ARGUMENT', `a PID must be an integer from 1 to 2^31-1, got ${String(pid)}`);
  }
}

function wrap<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw fromNative(err);
  }
}

/**
 * Identity of a live process: `{ pid, startTime, bootId }` (Linux: `/proc/<pid>/stat`
 * field 22 in clock ticks, and `/proc/sys/kernel/random/boot_id`). `null` when there is no
 * such process or it is a zombie.
 */
export function identity(pid: number): Identity | null {
  checkPid(pid);
  return wrap(() => native.identity(pid));
}

/** Compares a recorded identity with the live system: `current`, `replaced`, `gone` or `unknown`. */
export function verdict(id: Identity): Verdict {
  checkPid(id?.pid);
  return wrap(() => native.verdict(id));
}

/** Probes PIDs in one batch (one `/proc/<pid>/stat` read each); never throws for a missing PID. */
export function probe(pids: number[]): ProbeResult[] {
  if (!Array.isArray(pids)) throw new ProcwardError('INVALID_ARGUMENT', 'probe takes an array of PIDs');
  pids.forEach(checkPid);
  return wrap(() => native.probe(pids));
}

/** Descendants of `pid` with their identities, from one pass over the process table. */
export function descendants(pid: number): ProcessEntry[] {
  checkPid(pid);
  return wrap(() => native.descendants(pid));
}

/**
 * Kills the tree rooted at `root` on a native thread: snapshot, signal, grace period,
 * SIGKILL of survivors after a fresh identity check. Resolves with the report even when
 * there are survivors (check `survivors`); rejects only on misuse (`EINVAL`).
 */
export function killTree(root: Identity, options: KillTreeOptions = {}): Promise<KillReport> {
  for (const key of ['graceMs', 'settleMs'] as const) {
    const v = options[key];
    if (v !== undefined && !(Number.isInteger(v) && v >= 0 && v <= MAX_GRACE_MS)) {
      return Promise.reject(new ProcwardError('INVALID_ARGUMENT', `${key} must be an integer from 0 to ${MAX_GRACE_MS} (milliseconds), got ${v}`));
    }
  }
  return new Promise((resolve, reject) => {
    try {
      checkPid(root?.pid);
      native.killTree(root, options, (err, report) => (err ? reject(fromNative(err)) : resolve(report)));
    } catch (err) {
      reject(fromNative(err));
    }
  });
}
