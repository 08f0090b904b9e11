/**
 * Low-level native helpers, usable without a registry: a reuse-safe replacement for
 * ps-spawning libraries (ps-list, pidtree, tree-kill). Linux reads procfs; other platforms
 * report identities as unknown until their sources are implemented (see README).
 */
import { z } from 'zod';
import { fromNative, ProcwardError } from './errors.js';
import { checkStrict, type Shape } from './optioncheck.js';
import { native, supervisorPath, type Identity, type NativeKillReport, type ProbeResult, type ProcessEntry, type Verdict } from './native.js';

export type { Identity, ProbeResult, ProcessEntry, Verdict };

/**
 * Why a kill refused to signal something, whatever a record said:
 * - `pid_le_1`: PID 1 (init, or a PID namespace's reaper), 0 or negative (`kill(-1)` reaches every process);
 * - `host`, `host_group`, `host_session`, `host_ancestor`: the host process, a member of its
 *   process group or session, or one of its ancestors (or a group holding one);
 * - `not_session_leader`: a group signal (or, with `requireSessionLeader`, any signal) to a
 *   root that does not lead its own session, as every job procward starts does;
 * - `cgroup_not_ours`: a cgroup procward did not create for the session, directly below its
 *   own cgroup root (never read, written or removed);
 * - `no_proof`: a root that neither carries the session's mark (`KillTreeOptions.mark`) nor
 *   is in the job's cgroup, with a mark or `requireProof`: a record alone proves nothing;
 * - `no_pidfd`: no pidfd could be opened for the process (descriptors exhausted) on a Linux
 *   that has pidfds: it is never signalled by its number instead;
 * - Windows: `system_idle` (PID 0), `system` (PID 4), `host_console` (a process attached to the
 *   host's console); `not_session_leader` there means a root outside its procward Job Object.
 */
export type KillRefusalReason =
  | 'pid_le_1'
  | 'host'
  | 'host_group'
  | 'host_session'
  | 'host_ancestor'
  | 'not_session_leader'
  | 'cgroup_not_ours'
  | 'no_proof'
  | 'no_pidfd'
  | 'system_idle'
  | 'system'
  | 'host_console';

/** One refusal of a kill: a PID (`pid`) or a cgroup as recorded (`cgroup`), and why. */
export interface KillRefusal {
  pid?: number;
  cgroup?: string;
  reason: KillRefusalReason;
}

/**
 * Result of {@link killTree}: PIDs signalled, already gone, refused because reused
 * (`refusedReused`), refused by the kill guard (`refused`, with reasons), and survivors.
 * A refused PID is never listed as signalled, gone or surviving; a refused root means the
 * kill did nothing.
 */
export type KillReport = Omit<NativeKillReport, 'refused'> & { refused: KillRefusal[] };

/** Longest grace period or settle window a kill accepts, in milliseconds (one hour). */
export const MAX_GRACE_MS = 3_600_000;

/** Options of {@link killTree}. */
export interface KillTreeOptions {
  /**
   * Milliseconds between the first signal and SIGKILL. Default 2000; 0 = SIGKILL right after
   * the first signal (as `docker stop -t 0`; Windows: the graceful step, then termination).
   * One signal with no escalation is {@link signalJob}.
   */
  graceMs?: number;
  /** First signal name. Default `SIGTERM`. */
  signal?: string;
  /** Milliseconds to wait for processes to vanish after the last signal. Default 500. */
  settleMs?: number;
  /**
   * Longest the settle window stretches, in milliseconds, while survivors are still dying
   * (SIGKILL pending, exit under way, or still disappearing): a loaded machine can take
   * seconds to tear down hundreds of processes. Default 5000.
   */
  settleMaxMs?: number;
  /**
   * The job's cgroup (Linux), as recorded: its name (the session id) or the directory an
   * earlier version recorded. Its members are part of the tree and escalation uses
   * `cgroup.kill`, only when procward created it directly below its own cgroup root, named
   * for `sessionId`; otherwise it is refused (`cgroup_not_ours`) and never touched.
   */
  cgroup?: string;
  /** The session the cgroup must be named for (`proc_` + 12 hex digits). Default: `cgroup` itself. */
  sessionId?: string;
  /**
   * Refuse the whole kill (`not_session_leader`) unless the root leads its own session, as
   * every job procward starts does. Default false: such a root and its descendants are
   * signalled one by one, without the group signal.
   */
  requireSessionLeader?: boolean;
  /**
   * The session's mark (`<session id>:<32 hex nonce>`) its jobs carry as
   * `PROCWARD_SESSION_ID` in their environment: a gone root's group members count only when
   * each carries it, the job's processes outside its tree and group are found by it (one
   * read of every process's `/proc/<pid>/environ` per batch), and with `requireProof` it
   * proves the root. Linux; ignored elsewhere.
   */
  mark?: string;
  /**
   * Refuse a live root that neither carries `mark` nor is in the job's cgroup (`no_proof`:
   * neither it nor its process group is signalled): a record alone proves nothing. The
   * processes that carry `mark` or are in the cgroup are still the job's and are killed (a
   * stranger that took an ended job's PID in the job's own clock tick has its start time
   * too). Default false: the caller vouches for the root (a process it just started).
   */
  requireProof?: boolean;
}

const optionalNumber = z.number().optional();
const optionalString = z.string().optional();
/** {@link KillTreeOptions}, strict: a misspelt key is refused with a hint (see `optioncheck.ts`). */
const KILL_TREE_OPTIONS = z.strictObject({
  graceMs: optionalNumber,
  signal: optionalString,
  settleMs: optionalNumber,
  settleMaxMs: optionalNumber,
  cgroup: optionalString,
  sessionId: optionalString,
  requireSessionLeader: z.boolean().optional(),
  mark: optionalString,
  requireProof: z.boolean().optional(),
} satisfies Shape<KillTreeOptions>);

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
 * there are survivors (check `survivors`) or the guard refused (check `refused`: PID <= 1,
 * the host, its group, session or ancestors are never signalled, nor a group whose leader
 * does not lead its own session); rejects only on misuse (`EINVAL`).
 *
 * Kills asked for in the same turn of the event loop with the same options (all but
 * `cgroup`, `sessionId` and `mark`) run as one batch on one native thread, sharing the grace
 * period and each step's read of the process table: a bulk kill of N jobs costs about one
 * tree kill, and one thread, not N. A batch reports when its last tree's kill ends (at most
 * `graceMs + settleMaxMs` after its first signal). Kills asked for in different turns never
 * wait for each other: each turn's batch starts at once, on its own thread.
 */
export function killTree(root: Identity, options: KillTreeOptions = {}): Promise<KillReport> {
  try {
    checkStrict('killTree options', KILL_TREE_OPTIONS, options);
  } catch (err) {
    return Promise.reject(err);
  }
  for (const key of ['graceMs', 'settleMs', 'settleMaxMs'] as const) {
    const v = options[key];
    if (v !== undefined && !(Number.isInteger(v) && v >= 0 && v <= MAX_GRACE_MS)) {
      return Promise.reject(new ProcwardError('INVALID_ARGUMENT', `${key} must be an integer from 0 to ${MAX_GRACE_MS} (milliseconds), got ${v}`));
    }
  }
  return new Promise((resolve, reject) => {
    try {
      checkPid(root?.pid);
    } catch (err) {
      reject(fromNative(err));
      return;
    }
    const { cgroup, sessionId, mark, ...shared } = options;
    const request = { identity: root, ...(cgroup !== undefined && { cgroup }), ...(sessionId !== undefined && { sessionId }), ...(mark !== undefined && { mark }) };
    const key = JSON.stringify([shared.graceMs, shared.signal, shared.settleMs, shared.settleMaxMs, shared.requireSessionLeader, shared.requireProof]);
    let batch = pendingKills.get(key);
    if (!batch) {
      batch = { options: shared, kills: [] };
      pendingKills.set(key, batch);
      if (pendingKills.size === 1) setImmediate(flushKills);
    }
    batch.kills.push({ request, resolve, reject });
  });
}

interface QueuedKill {
  request: { identity: Identity; cgroup?: string; sessionId?: string; mark?: string };
  resolve(report: KillReport): void;
  reject(err: ProcwardError): void;
}

/**
 * Kills asked for since the last flush, by their shared options. A kill never waits for a
 * batch in flight (a cap on batches would let kills with an hour's grace hold back every
 * later kill): the thread count is bounded by the turns with kills in flight, not the kills.
 */
const pendingKills = new Map<string, { options: KillTreeOptions; kills: QueuedKill[] }>();

function flushKills(): void {
  for (const batch of pendingKills.values()) startBatch(batch.options, batch.kills);
  pendingKills.clear();
}

/**
 * Windows: `procward-supervise.exe` sends the graceful step (Ctrl-Break) to the job's console;
 * without it the tree is terminated at once. `ProcessRegistry.signal`'s `SIGBREAK` needs it too.
 */
export function consoleHelper(): { consoleHelper?: string } {
  if (process.platform !== 'win32') return {};
  try {
    return { consoleHelper: supervisorPath() };
  } catch {
    return {};
  }
}

/** One native call (one thread) for the batch. */
function startBatch(options: KillTreeOptions, kills: QueuedKill[]): void {
  try {
    native.killTrees(
      kills.map((k) => k.request),
      { ...options, ...consoleHelper() },
      (err, outcomes) => {
        kills.forEach((k, i) => {
          const o = outcomes?.[i];
          if (err || !o) k.reject(fromNative(err ?? new Error('EIO: the kill batch reported no outcome')));
          else if (o.report) k.resolve(o.report as KillReport);
          else k.reject(fromNative(new Error(o.error ?? 'EIO: the kill reported neither a report nor an error')));
        });
      },
    );
  } catch (err) {
    // A request the binding refused (a malformed identity) must not fail the others with
    // it: each is tried alone, so only its own kill rejects.
    if (kills.length === 1) kills[0]?.reject(fromNative(err));
    else for (const k of kills) startBatch(options, [k]);
  }
}

/**
 * Signals {@link signalJob} sends, by name: the ones a user sends a running job (Ctrl-C is
 * SIGINT, Ctrl-Backslash SIGQUIT, Ctrl-Z SIGTSTP, reloads SIGHUP or SIGUSR1/2, a resize SIGWINCH).
 * Signals that fake a crash (SIGSEGV, SIGABRT, ...) are not among them.
 */
export const JOB_SIGNALS = ['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGTERM', 'SIGKILL', 'SIGUSR1', 'SIGUSR2', 'SIGALRM', 'SIGCONT', 'SIGSTOP', 'SIGTSTP', 'SIGWINCH'] as const;

/** A name of {@link JOB_SIGNALS}. */
export type JobSignal = (typeof JOB_SIGNALS)[number];

/**
 * The signal a name asks for, as {@link JOB_SIGNALS} spells it: case-insensitive, with or
 * without `SIG` (`int`, `SIGINT`). Throws `INVALID_ARGUMENT` (details: `allowed`) for
 * anything else, numbers included.
 */
export function jobSignal(name: unknown): JobSignal {
  const upper = typeof name === 'string' ? name.trim().toUpperCase() : '';
  const full = upper.startsWith('SIG') ? upper : `SIG${upper}`;
  const found = JOB_SIGNALS.find((s) => s === full);
  if (!found) {
    throw new ProcwardError('INVALID_ARGUMENT', `unknown signal ${JSON.stringify(name)}: use one of ${JOB_SIGNALS.join(', ')}`, { allowed: [...JOB_SIGNALS] });
  }
  return found;
}

/**
 * Sends one signal of {@link JOB_SIGNALS} to the job led by `root`, with no escalation, no
 * SIGCONT and no wait: to its process group (`kill(-pid)`, as a terminal sends Ctrl-C to its
 * foreground group) when `root` leads its own session, as every job procward starts does;
 * otherwise to `root` alone (as the kill path signals such a root: a group signal only ever
 * goes to a session leader's group).
 * The identity is checked right before the signal (a reused PID is never signalled) and the
 * kill guard applies (never PID <= 1, the host, its group, session or ancestors).
 *
 * Returns a {@link KillReport}: `signalled: [pid]` when the group (or the root) got it;
 * `alreadyGone`, `refusedReused`, `refused` (with the reason), or `survivors` (identity
 * unknown: nothing sent) otherwise; `escalated` is false. Descendants that left the group
 * (`setsid`) are not reached: {@link killTree} hunts those down.
 *
 * Windows: `SIGTERM`, `SIGKILL`, `SIGINT` and `SIGQUIT` (and `SIGHUP`) terminate `root` alone
 * (exit code 1, as `process.kill` there); `ProcessRegistry.signal` also sends `SIGBREAK`.
 *
 * With `proof.requireProof`, a root that neither carries the session's mark (`proof.mark`)
 * nor is in the job's cgroup (`proof.cgroup`) is refused (`no_proof`) and nothing is sent,
 * as {@link killTree} refuses it.
 *
 * Errors: `INVALID_ARGUMENT` for a bad PID or an unknown signal (details: `allowed`);
 * `ENOTSUP` on Windows for the other names.
 */
export function signalJob(root: Identity, signal: string, proof: SignalProof = {}): KillReport {
  checkPid(root?.pid);
  const name = jobSignal(signal);
  return wrap(() => native.signalJob(root, name, proof)) as KillReport;
}

/** What proves the root of {@link signalJob} and {@link signalTree} is the job's: as the same {@link KillTreeOptions}. */
export interface SignalProof {
  mark?: string;
  requireProof?: boolean;
  cgroup?: string;
  sessionId?: string;
  /**
   * A PTY job's terminal foreground process group (`tcgetpgrp` on its master), when it is
   * not the root's own: the signal goes to that group of the root's session, through one of
   * its members (the group is never taken by its number alone), as a terminal's Ctrl-C
   * does. `signalled` then lists the members the signal went through. Unix; ignored on Windows.
   */
  foregroundGroup?: number;
}

/**
 * Sends one signal of {@link JOB_SIGNALS} to the process tree of `root` one process at a
 * time, never as a group: `root`, then each of its descendants. For a job that shares its
 * process group with a process that must not get the signal (a durable job's supervisor
 * leads the group the job runs in). The descendants are snapshotted with their identities
 * (PID + start time; a "child" older than its parent is not one) BEFORE the first signal,
 * and each is checked `current` right before its own signal, as the kill path does; the
 * snapshot is trusted only once `root` itself was found `current` after it. A process
 * forked after the snapshot is not reached (a group signal would not reach it either), nor
 * one that left the tree (its parent ended and it was reparented). The kill guard applies
 * to each (never PID <= 1, the host, its group, session or ancestors).
 *
 * Returns the reports merged: `signalled` lists the root first when it got the signal;
 * when it did not (gone, reused, refused, unknown, or no proof with `proof`), no descendant
 * is signalled: the descendants are the root's by the kernel's parent links, once the root is.
 * Errors: as {@link signalJob}.
 */
export function signalTree(root: Identity, signal: string, proof: SignalProof = {}): KillReport {
  checkPid(root?.pid);
  const name = jobSignal(signal);
  const members = descendants(root.pid);
  const first = wrap(() => native.signalJob(root, name, proof)) as KillReport;
  if (!first.signalled.includes(root.pid)) return first;
  const merged: KillReport = { ...first, signalled: [...first.signalled], alreadyGone: [...first.alreadyGone], refusedReused: [...first.refusedReused], survivors: [...first.survivors], survivorIdentities: [...first.survivorIdentities], refused: [...first.refused] };
  for (const m of members) {
    const r = wrap(() => native.signalJob(m.identity, name)) as KillReport;
    merged.signalled.push(...r.signalled);
    merged.alreadyGone.push(...r.alreadyGone);
    merged.refusedReused.push(...r.refusedReused);
    merged.survivors.push(...r.survivors);
    merged.survivorIdentities.push(...r.survivorIdentities);
    merged.refused.push(...r.refused);
  }
  return merged;
}
