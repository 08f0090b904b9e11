/**
 * Termination bookkeeping around a tree kill: checking its arguments before any side
 * effect, deciding which of two racing kills ended the job (`claimKillBatched`), and finishing a
 * kill that timed out: survivors are re-checked by identity
 * and SIGKILLed with their descendants every 500 ms (first after the grace period), for up
 * to 60 s, until none is left or the caller aborts (a new kill, a rescinded stop, close()).
 * And the kill-after deadlines this host enforces (`Deadlines`).
 */
import { closeSync, constants, lstatSync, openSync, rmSync, writeSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ProcwardError } from '../errors.js';
import { killTree, MAX_GRACE_MS, probe, type Identity } from '../processes.js';
import type { Live } from './kind.js';

/** Throws `INVALID_ARGUMENT` unless `graceMs` is an integer from 0 to `MAX_GRACE_MS` (milliseconds). */
export function assertGraceMs(graceMs: unknown): asserts graceMs is number {
  if (!(typeof graceMs === 'number' && Number.isInteger(graceMs) && graceMs >= 0 && graceMs <= MAX_GRACE_MS)) {
    throw new ProcwardError('INVALID_ARGUMENT', `graceMs must be an integer from 0 to ${MAX_GRACE_MS} (milliseconds), got ${String(graceMs)}`);
  }
}

/**
 * Whether the process `leader` names has ended on its own and waits to be reaped (a
 * zombie of the same start time): a signal to it succeeds, but ends nothing.
 */
export function endedUnreaped(leader: Identity): boolean {
  const [p] = probe([leader.pid]);
  return p?.state === 'Z' && p.startTime === leader.startTime;
}

/**
 * Creates the session's `kill-requested` marker (`O_EXCL`, never following a link, 0600):
 * true when this call created it, false when it was already there (another kill's, which
 * only that kill may remove). Anything but a regular file at its name (a symlink, a FIFO)
 * is no kill's marker: it is removed and the marker created in its place. Throws what
 * `open`/`write` throw (a full disk).
 */
export function createKillMarker(path: string): boolean {
  let fd: number | undefined;
  for (let attempt = 0; fd === undefined; attempt++) {
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (attempt > 0 || isRegularFile(path)) return false;
      rmSync(path, { force: true });
    }
  }
  try {
    writeSync(fd, `${Date.now()} ${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Flags of a kill marker or claim: created here, never through a link (0600). */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * {@link createKillMarker} on the thread pool, so that the markers of a bulk kill are
 * created side by side instead of one after another on the event loop (each new inode costs
 * 0.3-1 ms on a metadata-bound disk, more when it is busy). The same answers and errors.
 */
async function createKillMarkerAsync(path: string): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(path, CREATE_NEW, 0o600);
      try {
        await handle.write(`${Date.now()} ${process.pid}\n`);
      } finally {
        await handle.close();
      }
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (attempt > 0 || isRegularFile(path)) return false;
      await rm(path, { force: true });
    }
  }
}

/**
 * Claims the kill of a session whose leader a kill reached, by creating `kill-claimed` in
 * its directory (`O_EXCL`, never following a link): true for the first claimant across all
 * hosts, false when another kill claimed it (that kill ended the job; this one found it
 * ending). Without a directory (an in-memory registry), or when the file cannot be created
 * for another reason (a full disk, a pruned directory), the claim is this process's alone
 * and succeeds: the caller checks its own earlier kills.
 * Runs on the thread pool (see {@link createKillMarkerAsync}).
 */
async function claimKillAsync(sessionDir: string | null): Promise<boolean> {
  if (sessionDir === null) return true;
  try {
    await (await open(join(sessionDir, 'kill-claimed'), CREATE_NEW, 0o600)).close();
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'EEXIST';
  }
}

/**
 * Runs the calls made in one event-loop turn side by side and settles them all in one
 * later turn: kills that awaited their markers together go on together, so they still
 * reach `killTree` in one turn and become one native batch (one thread, one grace period).
 */
function turnBatched<A, T>(run: (arg: A) => Promise<T>): (arg: A) => Promise<T> {
  let queued: { arg: A; resolve(v: T): void; reject(e: unknown): void }[] | null = null;
  const flush = async () => {
    const batch = queued ?? [];
    queued = null;
    const settled = await Promise.allSettled(batch.map((q) => run(q.arg)));
    settled.forEach((s, i) => {
      const q = batch[i] as (typeof batch)[number];
      if (s.status === 'fulfilled') q.resolve(s.value);
      else q.reject(s.reason);
    });
  };
  return (arg) =>
    new Promise<T>((resolve, reject) => {
      if (queued === null) {
        queued = [];
        setImmediate(flush);
      }
      queued.push({ arg, resolve, reject });
    });
}

/**
 * {@link createKillMarker} for a kill that may be one of many: created on the thread pool
 * beside the markers of the kills asked for in the same turn, all answered in one turn.
 */
export const createKillMarkerBatched = turnBatched(createKillMarkerAsync);

/** {@link claimKillAsync} batched the same way (see {@link createKillMarkerBatched}). */
export const claimKillBatched = turnBatched(claimKillAsync);

function isRegularFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

/** Whether a kill of the session in `sessionDir` reached its leader and claimed it (see `claimKillBatched`). */
export function killClaimed(sessionDir: string): boolean {
  try {
    lstatSync(join(sessionDir, 'kill-claimed'));
    return true;
  } catch {
    return false;
  }
}

export interface BackgroundKillOptions {
  graceMs: number;
  /** The job's cgroup directory, if any. */
  cgroup?: string;
  signal: AbortSignal;
  /** Called once every survivor is gone. */
  onDone(): void;
  /** Called when survivors outlive the 60 s budget. */
  onGiveUp(left: Identity[]): void;
}

/** Starts the background loop; its timers never keep the host alive. */
export function finishKillInBackground(survivors: Identity[], opts: BackgroundKillOptions): void {
  const deadline = Date.now() + 60_000;
  let left = survivors;
  const tick = async () => {
    if (opts.signal.aborted) return;
    // All at once: killTree runs kills asked for in one turn as one native batch.
    const reports = await Promise.all(
      left.map((id) => killTree(id, { signal: 'SIGKILL', graceMs: 0, settleMs: 200, ...(opts.cgroup && { cgroup: opts.cgroup }) }).catch(() => null)),
    );
    left = left.flatMap((id, i) => reports[i]?.survivorIdentities ?? [id]);
    if (opts.signal.aborted) return;
    if (left.length === 0) opts.onDone();
    else if (Date.now() < deadline) setTimeout(tick, 500).unref();
    else opts.onGiveUp(left);
  };
  setTimeout(tick, Math.max(opts.graceMs, 250)).unref();
}

/** What a {@link Deadlines} needs of its registry. */
export interface DeadlineHost {
  /** The session by id, while the registry holds it. */
  session(id: string): Live | undefined;
  /** Brings the session up to date (its end, its supervisor's record; a foreign one may be adopted). */
  refresh(live: Live): Promise<void>;
  /** The grace period of the deadline's kill (the registry's `graceMs`). */
  graceMs(): number;
  /** Called once the deadline's kill is over (whatever its outcome): leftovers, the checkpoint. */
  killed(live: Live): void;
  /** Problems worth telling the operator (a kill that failed). */
  readonly diagnostics: string[];
}

/**
 * How long after its deadline and grace period this host leaves a durable job to its
 * supervisor (milliseconds): the supervisor kills it at the deadline (SIGTERM, SIGKILL after
 * the grace period) and records `"timedOut":true`; a job still running this much later has
 * no enforcer (its supervisor was killed, or stopped by SIGSTOP) and this host kills it.
 */
export const DURABLE_DEADLINE_SLACK_MS = 1_000;
/** How often a deadline past due is re-checked while another live host owns the session (milliseconds). */
export const FOREIGN_RECHECK_MS = 1_000;

/**
 * The kill-after deadlines (`SpawnOptions.timeoutMs`) this host enforces: every job's,
 * counted from its `startedAt` (so one already past on recovery fires at once). One timer
 * per job, which never keeps the host alive; when it fires on a running job, the job's tree
 * is killed as `kill` does it (SIGTERM, SIGKILL after the grace period, each process's
 * identity checked) and the session records `timedOut` (`deadlineExceeded`) with
 * `terminationSource: 'timeout'`. A durable job's supervisor enforces the same deadline
 * without a host: this host's timer fires {@link DURABLE_DEADLINE_SLACK_MS} after the
 * deadline and grace period, and kills only a job still running then. A session another
 * live host owns is that host's to kill: its deadline is re-checked every
 * {@link FOREIGN_RECHECK_MS} until it ends or is adopted here. Whoever ends the job, the
 * session's end is published once (the registry's single finisher). Unlike `kill`, the
 * deadline does not consume the completion event: whoever asked to be told of the end still is.
 */
export class Deadlines {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly host: DeadlineHost) {}

  /** Starts the session's timer, counted from its `startedAt`; nothing without a `timeoutMs`. */
  arm(live: Live): void {
    const r = live.record;
    if (r.timeoutMs === undefined || r.status !== 'running') return;
    const late = r.durable ? this.host.graceMs() + DURABLE_DEADLINE_SLACK_MS : 0;
    this.schedule(r.id, r.startedAt + r.timeoutMs + late - Date.now());
  }

  private schedule(id: string, delayMs: number): void {
    this.clear(id);
    const timer = setTimeout(() => {
      this.timers.delete(id);
      this.expire(id).catch((err: unknown) => this.host.diagnostics.push(`deadline of ${id}: ${(err as Error).message}`));
    }, Math.max(0, delayMs));
    timer.unref();
    this.timers.set(id, timer);
  }

  /** The session ended (or went): its timer goes. */
  clear(id: string): void {
    const timer = this.timers.get(id);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(id);
  }

  /** Every timer goes (the registry closes). */
  stop(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private async expire(id: string): Promise<void> {
    let live = this.host.session(id);
    if (live?.record.status !== 'running') return;
    // A durable job's supervisor may have ended it (its exit file says so); a foreign
    // session may have ended, or been adopted here since.
    await this.host.refresh(live);
    live = this.host.session(id);
    if (live?.record.status !== 'running' || this.timers.has(id)) return;
    if (live.foreign) {
      this.schedule(id, FOREIGN_RECHECK_MS);
      return;
    }
    const r = live.record;
    // Set before the kill, so that the end the kill publishes carries it.
    r.timedOut = true;
    try {
      await live.kind.kill(this.host.graceMs());
    } catch (err) {
      // Survivors are finished in the background (and the session ends killed then).
      const code = err instanceof ProcwardError ? err.code : undefined;
      if (code !== 'KILL_SURVIVORS') this.host.diagnostics.push(`deadline of ${id}: ${(err as Error).message}`);
    }
    if (r.status === 'exited' && r.reason !== 'killed') delete r.timedOut;
    else if (r.status === 'exited') r.terminationSource = 'timeout';
    else if (r.status === 'running' && !live.finisher) delete r.timedOut;
    // The deadline's kill is no reader of the end: its completion stays queued (only a
    // caller's kill, in registry/kill.ts, consumes it).
    r.updatedAt = Math.max(Date.now(), r.updatedAt + 1);
    this.host.killed(live);
  }
}
