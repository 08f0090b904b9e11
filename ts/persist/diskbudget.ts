/**
 * The disk budget of durable logs: all durable logs of a state directory together take at
 * most `maxTotalLogBytes` (default 1 GiB), on top of each log's own cap (`logMaxBytes`).
 * Over it, the logs of the oldest ended sessions whose output was delivered are evicted
 * until the total fits.
 *
 * **Delivered**: the session has ended (its end is published in its record, for every host
 * and surface) and no completion event waits: it was not started with `notifyOnComplete`,
 * or that event was drained or consumed (`wait`, a `readLog` that reached the end, `kill`,
 * an acknowledged `poll`). Retention's size cap prunes whole sessions by the same rule
 * (`policy/retention.ts`); eviction is the lighter step: the record stays, the output goes.
 * Never evicted: a running job's log (reported instead: a diagnostic, and `runningBytes` /
 * `overBudget`), nor the log of an undelivered session, of one another live host owns (its
 * host evicts it under its own budget), or whose supervisor still runs (a grandchild may
 * still hold the job's output and append to it).
 *
 * **Measure**: `st_blocks × 512` of `output.log` and `output.log.1` (`lstat`; sparse parts
 * count what they hold; the size on Windows). A running tally, never a scan per spawn: all
 * logs when the registry opens and every 60 s while durable jobs run, running logs every
 * 10 s, a log when its session ends and when its eviction is considered.
 *
 * **Eviction**, under `log-budget.lock` in the state directory (a host that waited for it
 * finds the other's evictions by their markers, and evicts only what is still needed):
 * `log-evicted` is written first in the session directory
 * (`{"evictedAt":<ms>,"diskBytes":…,"outputBytes":…}`, by `writePrivate`, which refuses a
 * `sessions` or `sessions/<id>` that is not a real directory), then `output.log`,
 * `output.log.1`, `output.log.next` and `log-state.json` are emptied (opened `O_NOFOLLOW`,
 * truncated only as a regular file with one link: a planted hard link is never emptied)
 * and unlinked (a symlink goes, never its target). Paths come from session ids only. The
 * marker's presence means evicted on every host; its numbers are shown only when well-formed.
 */
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, openSync, type Stats, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fromNative, ProcwardError } from '../errors.js';
import { native } from '../native.js';
import { verdict } from '../processes.js';
import type { Live } from '../session/kind.js';
import type { SessionRecord, SessionStatus } from '../session/record.js';
import type { LogDiskUsage, LogResult, RegistryOptions } from '../types.js';
import { notPrivateFile, readPrivate, readSupervisorIdentity, sessionFiles, writePrivate } from './jobfiles.js';

/** Default of `maxTotalLogBytes`: 1 GiB for all durable logs of a state directory (16 full logs of the default 64 MiB cap). */
export const DEFAULT_MAX_TOTAL_LOG_BYTES = 1024 * 1024 * 1024;
/** The marker of an evicted log, in its session directory. */
const EVICTED_MARKER = 'log-evicted';
/** The parts of a log that take disk. */
const PARTS = ['output.log', 'output.log.1'];
/** What an eviction removes: the parts, a rotation's new part left half-way, the rotation state. */
const REMOVED = [...PARTS, 'output.log.next', 'log-state.json'];
/** Held while a host evicts, in the state directory. */
const LOCK = 'log-budget.lock';
/** How long a host waits for another one's eviction to finish. */
const LOCK_TIMEOUT_MS = 10_000;
/** Running logs are re-measured this often while durable jobs run. */
const RUNNING_CHECK_MS = 10_000;
/** Every log is re-measured this often (other hosts evict and prune too). */
const FULL_CHECK_MS = 60_000;
/** Logs measured between two turns of the event loop (three `lstat`s each, about 10 µs). */
const SCAN_BATCH = 128;
/** Diagnostics this module adds at most. */
const MAX_NOTES = 100;

/** What `log-evicted` says: when, and how much the log took (null when the marker does not say). */
export interface LogEviction {
  /** Milliseconds since the epoch. */
  at: number | null;
  /** Bytes the log took on disk (`st_blocks × 512`). */
  diskBytes: number | null;
  /** Bytes of output the log held (the parts' sizes). */
  outputBytes: number | null;
}

/** A log's parts as measured: disk taken and bytes held. */
interface Measured {
  disk: number;
  size: number;
}

function diskBytes(st: Stats): number {
  return process.platform === 'win32' ? st.size : st.blocks * 512;
}

/** `lstat` of `path`; undefined when it cannot be read. Synchronous: a few µs, where a trip through libuv's pool costs ten times that. */
function lstatOf(path: string): Stats | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** The disk the log parts in session directory `dir` take (`lstat`: st_blocks × 512, the size on Windows); a part that is missing or not a regular file counts nothing. */
function measureLog(dir: string): Measured {
  const stats = PARTS.map((name) => lstatOf(join(dir, name)));
  let disk = 0;
  let size = 0;
  for (const st of stats) {
    if (!st?.isFile()) continue;
    disk += diskBytes(st);
    size += st.size;
  }
  return { disk, size };
}

function count(v: unknown): number | null {
  return Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : null;
}

/** The session's eviction marker, or null when there is none. Its presence is the message; its numbers are untrusted. */
function readLogEviction(dir: string): LogEviction | null {
  const path = join(dir, EVICTED_MARKER);
  if (!lstatOf(path)) return null;
  const eviction: LogEviction = { at: null, diskBytes: null, outputBytes: null };
  try {
    const o = JSON.parse(readPrivate(path) ?? '') as Record<string, unknown>;
    if (o !== null && typeof o === 'object') {
      const at = count(o.evictedAt);
      Object.assign(eviction, { at: at !== null && at > 0 ? at : null, diskBytes: count(o.diskBytes), outputBytes: count(o.outputBytes) });
    }
  } catch {}
  return eviction;
}

/** Empties `path` when it is a regular file with one link (never through a symlink at its name), then unlinks it when asked. */
function empty(path: string, unlink: boolean): void {
  let fd: number | undefined;
  try {
    // O_NONBLOCK: a FIFO planted here fails the open (ENXIO) instead of hanging it.
    fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {}
  if (fd !== undefined) {
    try {
      // Truncating frees the blocks at once, also while a process still holds the file open.
      if (notPrivateFile(fstatSync(fd)) === null) ftruncateSync(fd, 0);
    } catch {
    } finally {
      closeSync(fd);
    }
  }
  try {
    // Removes the name only: a symlink there goes, never its target.
    if (unlink) unlinkSync(path);
  } catch {}
}

/**
 * Evicts the log in session directory `dir`: the marker first (so a host that dies half-way
 * leaves a log that reads as evicted, never one silently short), then the parts; on a full
 * disk the parts are emptied first, so the marker has room. Throws
 * `STATE_DIR_UNTRUSTED` (from `writePrivate`, before anything is removed) when `sessions` or
 * `sessions/<id>` is not a real directory.
 */
function evictLog(dir: string, measured: Measured): LogEviction {
  const eviction = { at: Date.now(), diskBytes: measured.disk, outputBytes: measured.size };
  const mark = () => writePrivate(join(dir, EVICTED_MARKER), `${JSON.stringify({ evictedAt: eviction.at, diskBytes: eviction.diskBytes, outputBytes: eviction.outputBytes })}\n`);
  try {
    mark();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOSPC' && code !== 'EDQUOT') throw err;
    // A full disk is when eviction matters most: the emptied parts give the marker its room
    // (writePrivate checked the directories before it failed to write).
    for (const name of PARTS) empty(join(dir, name), false);
    mark();
  }
  for (const name of REMOVED) empty(join(dir, name), true);
  return eviction;
}

/** Whether the session's output counts as delivered (see the module docs). */
export function delivered(r: SessionRecord): boolean {
  return r.status === 'exited' && !(r.notifyOnComplete === true && r.notificationDelivered !== true);
}

/** Whether the durable job's supervisor may still run (and append to its log); an unreadable answer counts as yes. */
function supervisorRuns(dir: string): boolean {
  const sup = readSupervisorIdentity(join(dir, 'supervisor.json'));
  if (!sup) return false;
  try {
    const v = verdict(sup);
    return v === 'current' || v === 'unknown';
  } catch {
    return true;
  }
}

/** Takes `log-budget.lock`, waiting at most 10 s in a `flock` on a native thread. Errors: `LOCK_TIMEOUT`, those of opening it. */
function lockEvictions(path: string): Promise<{ release(): void }> {
  return new Promise((resolve, reject) => {
    try {
      native.lockFile(path, LOCK_TIMEOUT_MS, (err, lock) => {
        if (err) reject(fromNative(err));
        else if (lock) resolve(lock);
        else reject(new ProcwardError('LOCK_TIMEOUT', `${path} stayed locked for ${LOCK_TIMEOUT_MS} ms`));
      });
    } catch (err) {
      reject(fromNative(err));
    }
  });
}

/** What `readLog` returns for a session whose log was evicted: no lines, and why. */
export function evictedLogResult(id: string, status: SessionStatus, eviction: LogEviction): LogResult {
  const when = eviction.at !== null ? ` at ${new Date(eviction.at).toISOString()}` : '';
  const size = eviction.outputBytes !== null ? ` (${eviction.outputBytes} bytes of output)` : '';
  const showing = `no lines: the log was evicted${when}${size} to keep the state directory's durable logs within their disk budget (maxTotalLogBytes)`;
  return { id, status, text: '', lines: [], totalLines: 0, offset: 0, showing, droppedChars: eviction.outputBytes ?? 0, logEvicted: true };
}

/** A registry's tally of its state directory's durable logs, and the eviction that keeps it within the budget. */
export class DiskBudget {
  private readonly budget: number;
  /** Disk taken by each session's log, as last measured. */
  private readonly sizes = new Map<string, number>();
  private readonly evicted = new Map<string, LogEviction>();
  /** Logs whose eviction failed (a directory that is not a real one, an I/O error): said once, not tried again by this host. */
  private readonly refused = new Set<string>();
  /** The checks in flight, one after the other. */
  private queue: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private measuredAllAt = 0;
  private over = false;
  private notes = 0;
  private closed = false;

  constructor(
    private readonly stateDir: string | null,
    options: RegistryOptions,
    /** The registry's index: whose logs count, and which may be evicted. */
    private readonly sessions: Map<string, Live>,
    private readonly diagnostics: string[],
  ) {
    this.budget = options.maxTotalLogBytes ?? DEFAULT_MAX_TOTAL_LOG_BYTES;
  }

  /** Whether the session has a durable log on this host (its record's path is only a flag: paths come from ids). */
  private hasLog(live: Live): boolean {
    return this.stateDir !== null && live.record.logPath !== null;
  }

  /** The session directory of a session with a durable log on this host, from its id; null for others. */
  private logDir(live: Live): string | null {
    return this.hasLog(live) ? sessionFiles(this.stateDir as string, live.record.id).dir : null;
  }

  /** Measures every log the registry lists (after recovery), in the background, then enforces the budget. */
  opened(): void {
    this.check(() => this.measureAll());
    this.arm();
  }

  /** A durable job started: its log counts from now (measured with the running ones). */
  started(live: Live): void {
    if (!this.hasLog(live)) return;
    this.sizes.set(live.record.id, 0);
    this.arm();
  }

  /** A session ended: its log is measured and the budget enforced, in the background. */
  ended(live: Live): void {
    const dir = this.logDir(live);
    if (!dir) return;
    const id = live.record.id;
    this.check(async () => {
      if (!this.evicted.has(id)) this.sizes.set(id, measureLog(dir).disk);
    });
  }

  /** `{ logEvicted: true }` for a session whose log is known to be evicted (for summaries). */
  flag(live: Live): { logEvicted?: true } {
    return this.evicted.has(live.record.id) ? { logEvicted: true } : {};
  }

  /** The eviction of the session's log, asked of its directory (another host may have evicted it); null when it is there. */
  eviction(live: Live): LogEviction | null {
    const id = live.record.id;
    const known = this.evicted.get(id);
    const dir = this.logDir(live);
    if (known || !dir) return known ?? null;
    const found = readLogEviction(dir);
    if (found) {
      this.evicted.set(id, found);
      this.sizes.delete(id);
    }
    return found;
  }

  /** Measures the running logs, enforces the budget, and reports the tally. */
  async usage(): Promise<LogDiskUsage> {
    this.check(() => this.measureRunning());
    await this.queue;
    let used = 0;
    let running = 0;
    for (const [id, bytes] of this.sizes) {
      const live = this.sessions.get(id);
      if (!live) continue;
      used += bytes;
      if (live.record.status === 'running') running += bytes;
    }
    const evictedSessions = [...this.evicted.keys()].filter((id) => this.sessions.has(id)).length;
    return { usedBytes: used, budgetBytes: this.budget, runningBytes: running, evictedSessions, overBudget: used > this.budget };
  }

  /** Stops the periodic check and waits for the one in flight. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.queue;
  }

  /** Runs `measure` and then the enforcement after the checks already queued; failures are diagnostics. */
  private check(measure: () => Promise<void>): void {
    if (this.closed || this.stateDir === null) return;
    this.queue = this.queue
      .then(async () => {
        if (this.closed) return;
        await measure();
        await this.enforce();
      })
      .catch((err: unknown) => this.note(`durable log budget: ${String(err)}`));
  }

  /** Re-measures running logs every 10 s (every log every 60 s) while this host lists a running durable job. */
  private arm(): void {
    if (this.timer || this.closed || this.stateDir === null) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const all = Date.now() - this.measuredAllAt >= FULL_CHECK_MS;
      this.check(() => (all ? this.measureAll() : this.measureRunning()));
      if ([...this.sessions.values()].some((l) => l.record.status === 'running' && this.hasLog(l))) this.arm();
    }, RUNNING_CHECK_MS);
    this.timer.unref();
  }

  /** Measures the logs of `lives` (or finds them evicted), yielding to the event loop every {@link SCAN_BATCH}. */
  private async measureEach(lives: Live[]): Promise<void> {
    for (let i = 0; i < lives.length; i++) {
      if (i > 0 && i % SCAN_BATCH === 0) await new Promise((r) => setImmediate(r));
      const live = lives[i] as Live;
      const dir = this.logDir(live) as string;
      const eviction = readLogEviction(dir);
      if (eviction) {
        this.evicted.set(live.record.id, eviction);
        this.sizes.delete(live.record.id);
      } else this.sizes.set(live.record.id, measureLog(dir).disk);
    }
  }

  private measureAll(): Promise<void> {
    this.measuredAllAt = Date.now();
    return this.measureEach([...this.sessions.values()].filter((l) => this.hasLog(l) && !this.evicted.has(l.record.id)));
  }

  private measureRunning(): Promise<void> {
    return this.measureEach([...this.sessions.values()].filter((l) => l.record.status === 'running' && this.hasLog(l)));
  }

  /** A log this host may evict: ended, delivered, owned here, not yet evicted, taking disk. */
  private evictable(live: Live): boolean {
    const r = live.record;
    return (this.sizes.get(r.id) ?? 0) > 0 && delivered(r) && live.kind.owned && !live.foreign && !this.evicted.has(r.id) && !this.refused.has(r.id) && this.hasLog(live);
  }

  /** Drops pruned sessions from the tally, evicts the oldest delivered logs while the total is over the budget, and reports what is left over. */
  private async enforce(): Promise<void> {
    for (const map of [this.sizes, this.evicted]) for (const id of map.keys()) if (!this.sessions.has(id)) map.delete(id);
    let total = 0;
    for (const bytes of this.sizes.values()) total += bytes;
    if (total > this.budget) total = await this.evictOldest(total);
    const over = total > this.budget;
    if (over && !this.over) {
      let running = 0;
      for (const [id, bytes] of this.sizes) if (this.sessions.get(id)?.record.status === 'running') running += bytes;
      this.note(
        `durable logs take ${total} bytes, over their budget of ${this.budget} (maxTotalLogBytes): ${running} bytes are running jobs' logs, never evicted (each is capped by logMaxBytes); the rest are ended sessions' logs whose completion is not delivered, that another live host owns, or whose supervisor still runs`,
      );
    }
    this.over = over;
  }

  /** Evicts the oldest-ended evictable logs until `total` fits; returns the new total. */
  private async evictOldest(total: number): Promise<number> {
    const stateDir = this.stateDir as string;
    const lock = await lockEvictions(join(stateDir, LOCK));
    try {
      const ended = (l: Live) => l.record.exitedAt ?? l.record.startedAt;
      const candidates = [...this.sessions.values()].filter((l) => this.evictable(l)).sort((a, b) => ended(a) - ended(b));
      for (const live of candidates) {
        if (total <= this.budget) break;
        const id = live.record.id;
        // Pruned while an earlier log was evicted: its directory is gone.
        if (!this.sessions.has(id)) continue;
        const dir = this.logDir(live) as string;
        const counted = this.sizes.get(id) ?? 0;
        const already = readLogEviction(dir);
        if (!already && supervisorRuns(dir)) continue;
        try {
          this.evicted.set(id, already ?? evictLog(dir, measureLog(dir)));
        } catch (err) {
          this.refused.add(id);
          this.note(`${id}: log not evicted: ${(err as Error).message}`);
          continue;
        }
        this.sizes.delete(id);
        total -= counted;
      }
    } finally {
      lock.release();
    }
    return total;
  }

  private note(text: string): void {
    if (this.notes >= MAX_NOTES) return;
    this.notes++;
    this.diagnostics.push(text);
  }
}
