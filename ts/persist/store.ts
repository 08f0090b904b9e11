/**
 * Where a registry's sessions persist: the checkpoint (written by group commit, merged with
 * other hosts' entries), retention of finished sessions with their files, recovery of
 * what the state directory lists, and the view of entries other hosts wrote. Without a
 * state directory nothing is written and retention alone runs.
 */
import { lstatSync } from 'node:fs';
import { join, resolve as resolvePath } from 'node:path';
import { forget } from '../output/budget.js';
import { DEFAULT_MAX_SESSIONS } from '../policy/retention.js';
import type { NativeFileLock } from '../native.js';
import type { Live } from '../session/kind.js';
import type { SessionRecord } from '../session/record.js';
import type { RegistryOptions } from '../types.js';
import { Checkpoint } from './checkpoint.js';
import { expiredNow } from './expiry.js';
import { GroupCommit } from './groupcommit.js';
import { removeSessionDir } from './jobfiles.js';
import { scanOrphanSessions } from './recovery.js';
import { assertTrustedDir } from './statedir.js';
import { appendDiagnostics, MAX_READ_DIAGNOSTICS, redactStored } from './stored.js';
import { holdHostLock } from './hostlock.js';
import { isForeign, newWriter, releaseWriter, type WriterIdentity } from './writer.js';

/** How often a save hands every record to the checkpoint, not only those that look changed. */
const CHECK_ALL_EVERY_MS = 30_000;
/** A record changed up to this long before the last save is handed over again (same millisecond, clock steps). */
const CLOCK_SLACK_MS = 1000;
/** First and longest delay before a failed checkpoint write is tried again. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5_000;

/** A writer identity as a key (JSON: no two identities share one, whatever their strings hold). */
const writerKey = (w: SessionRecord['writer']) => JSON.stringify([w.pid, w.startTime, w.bootId, w.instance ?? null]);

/** What a host recovers from its state directory. */
export interface Recovered {
  /** Entries this version understands, from the checkpoint and from orphaned session directories. */
  records: SessionRecord[];
  /** Entries it does not understand, as far as they can be shown: listed, never acted on or written. */
  readOnly: SessionRecord[];
  /** Whether the checkpoint should be written now (something was recovered or set aside). */
  changed: boolean;
}

export class SessionStore {
  private readonly checkpoint: Checkpoint | undefined;
  private readonly commits: GroupCommit;
  /** This host's identity as the writer of its entries (registered once the checkpoint is accepted). */
  readonly writer: WriterIdentity;
  /** Sessions kept read-only: entries of a newer schema, or that failed validation (see `session/record.ts`). */
  readonly readOnly = new Set<string>();
  private closed = false;
  private prunedAt = 0;
  /** What the last save took of each record (see `changedRecords`). */
  private readonly saved = new Map<string, { updatedAt: number; status: string }>();
  /** Sessions forgotten on request (`forgetEnded`) whose checkpoint entries the next save removes. */
  private readonly forgotten = new Set<string>();
  /** When the last save took its records. */
  private savedAt = 0;
  /** This registry's lock in `hosts/`, held while it is open (see `hostlock.ts`). */
  private hostLock: NativeFileLock | null = null;
  /** The delay before the next try of a checkpoint write that failed (0: the last one did not). */
  private retryMs = 0;
  /** The next save at or after this time hands every record to the checkpoint (see `changedRecords`). */
  private checkAllAt = 0;

  constructor(
    private readonly options: RegistryOptions,
    /** The registry's index: what is saved and pruned. */
    private readonly sessions: Map<string, Live>,
    private readonly diagnostics: string[],
  ) {
    this.checkpoint = options.stateDir !== undefined ? new Checkpoint(resolvePath(options.stateDir)) : undefined;
    // `sessions/` holds every job's files: trusted only as the state directory itself is.
    const sessionsDir = this.checkpoint ? join(this.checkpoint.dir, 'sessions') : null;
    if (sessionsDir !== null && lstatSync(sessionsDir, { throwIfNoEntry: false })) assertTrustedDir(sessionsDir, 'sessions directory');
    this.writer = newWriter();
    this.commits = new GroupCommit(async () => {
      this.prune();
      if (!this.checkpoint) return;
      const changed = this.changedRecords();
      const forgotten = [...this.forgotten];
      try {
        const saved = await this.checkpoint.save({ changed, forgotten, all: () => this.ownRecords(), own: (r) => this.isWriterOf(r) }, this.options, this.mayPrune());
        appendDiagnostics(this.diagnostics, saved.diagnostics);
        for (const id of forgotten) this.forgotten.delete(id);
        this.retryMs = 0;
      } catch (err) {
        // Not written: the next save hands every record over again, and is tried again
        // (backing off to every 5 s) until the disk takes it, so an end recorded while the
        // disk was full is written once space returns. The retries report nothing (the
        // write that failed first did, to its caller).
        this.saved.clear();
        this.retryMs = Math.min(Math.max(this.retryMs * 2, RETRY_FIRST_MS), RETRY_MAX_MS);
        if (!this.closed) this.commits.soon(this.retryMs, () => {});
        throw err;
      }
    });
  }

  /** Whether `record` names this registry as its writer (it started or finished the job; see `Checkpoint.save`). */
  private isWriterOf(record: SessionRecord): boolean {
    const w = record.writer;
    return w === this.writer || writerKey(w) === writerKey(this.writer);
  }

  /** Copies of the records this host writes: its own sessions, not those kept read-only. */
  private ownRecords(): SessionRecord[] {
    return [...this.sessions.values()].filter((l) => l.kind.owned && !this.readOnly.has(l.record.id)).map((l) => ({ ...l.record }));
  }

  /**
   * Copies of the records that may have changed since the last save, so a save costs what
   * changed rather than every session: a running session, a record whose status or
   * `updatedAt` differs from what the last save took, or whose `updatedAt` is within a second
   * of that save (a change in the same millisecond, or a clock step back). Every change to a
   * finished record bumps `updatedAt`; in case one did not, every record is handed over
   * again every 30 s, after a recovery and on close (the checkpoint compares each with its
   * JSON as written, so an unchanged one costs no write).
   */
  private changedRecords(): SessionRecord[] {
    const now = Date.now();
    if (now >= this.checkAllAt) {
      this.checkAllAt = now + CHECK_ALL_EVERY_MS;
      this.savedAt = now;
      const all = this.ownRecords();
      this.saved.clear();
      for (const r of all) this.saved.set(r.id, { updatedAt: r.updatedAt, status: r.status });
      return all;
    }
    const since = this.savedAt - CLOCK_SLACK_MS;
    this.savedAt = now;
    const out: SessionRecord[] = [];
    for (const l of this.sessions.values()) {
      const r = l.record;
      const last = this.saved.get(r.id);
      if (last && r.status !== 'running' && last.status === r.status && last.updatedAt === r.updatedAt && r.updatedAt < since) continue;
      if (!l.kind.owned || this.readOnly.has(r.id)) continue;
      this.saved.set(r.id, { updatedAt: r.updatedAt, status: r.status });
      out.push({ ...r });
    }
    return out;
  }

  /** A record read from disk, with what it shows redacted (unless the host turned redaction off; see `stored.ts`). */
  private fromDisk(record: SessionRecord): SessionRecord {
    return this.options.redact === false ? record : redactStored(record);
  }

  /** The state directory, or null for an in-memory registry. */
  get dir(): string | null {
    return this.checkpoint?.dir ?? null;
  }

  /** The checkpoint's path when a newer procward wrote it (this host then starts nothing), else null. */
  get newerPath(): string | null {
    return this.checkpoint?.newer ? this.checkpoint.path : null;
  }

  /** Completed checkpoint writes. */
  get writes(): number {
    return this.checkpoint?.writes ?? 0;
  }

  /**
   * Writers known not to be another live host (dead, this registry, a closed one): such an
   * answer never changes (a dead process does not come back), so it is kept, and a state
   * directory of 10 000 entries from a few dead hosts costs a few identity reads, not 10 000.
   */
  private readonly notForeign = new Set<string>();
  /** The writer objects of `notForeign` (held weakly: they go with their records). */
  private readonly notForeignWriters = new WeakSet<object>();

  /** Whether a live host other than this one wrote the record. */
  isForeign(record: SessionRecord): boolean {
    const w = record.writer;
    // Entries read together share their writer's object (see `generation.ts`): asked once.
    if (this.notForeignWriters.has(w)) return false;
    const key = writerKey(w);
    const foreign = !this.notForeign.has(key) && isForeign(record, this.writer, this.checkpoint?.dir ?? null);
    if (!foreign) {
      // Bounded: entries name few writers, but a crafted directory may name many.
      if (this.notForeign.size >= 4096) this.notForeign.clear();
      this.notForeign.add(key);
      this.notForeignWriters.add(w);
    }
    return foreign;
  }

  /**
   * Reads the checkpoint and the session directories it does not list. Entries older than
   * their session.json (a damaged or previous checkpoint generation) take their end from
   * it when their session is refreshed.
   */
  async recover(): Promise<Recovered> {
    if (!this.checkpoint) return { records: [], readOnly: [], changed: false };
    // Held from here to close: while it is, this registry's entries are its own (see hostlock.ts).
    try {
      this.hostLock = await holdHostLock(this.checkpoint.dir, this.writer);
    } catch (err) {
      if ((err as { code?: string }).code === 'STATE_DIR_UNTRUSTED') throw err;
      // A full disk: no lock file, so other hosts judge this one by its process alone.
      this.diagnostics.push(`cannot hold this registry's lock in ${this.checkpoint.dir}: ${(err as Error).message}`);
    }
    let { sessions, readOnly = [], diagnostics } = await this.checkpoint.load();
    let orphans = scanOrphanSessions(this.checkpoint.dir, new Set([...sessions, ...readOnly].map((r) => r.id)), (r) => this.isForeign(r));
    // A session directory whose host is gone and that the checkpoint did not list may have
    // been written to the checkpoint since it was read (a host that spawned, wrote its
    // checkpoint and exited meanwhile: issue 18's parallel starts). Read it again before
    // calling the session orphaned.
    for (let i = 0; i < 3 && orphans.records.some((r) => !this.isForeign(r)); i++) {
      const again = await this.checkpoint.load();
      const listed = new Set([...again.sessions, ...(again.readOnly ?? [])].map((r) => r.id));
      if (!orphans.records.some((r) => listed.has(r.id))) break;
      ({ sessions, readOnly = [], diagnostics } = again);
      orphans = scanOrphanSessions(this.checkpoint.dir, listed, (r) => this.isForeign(r));
    }
    // The checkpoint's notes are capped where they are made; a few lines of its own may come first.
    appendDiagnostics(this.diagnostics, diagnostics, MAX_READ_DIAGNOSTICS + 10);
    appendDiagnostics(this.diagnostics, orphans.diagnostics);
    for (const list of [sessions, readOnly, orphans.records, orphans.readOnly]) for (const r of list) this.fromDisk(r);
    // A second entry for a session this version understands changes nothing.
    const understood = new Set(sessions.map((r) => r.id));
    const unread = [...readOnly, ...orphans.readOnly].filter((r) => !understood.has(r.id));
    for (const r of unread) this.readOnly.add(r.id);
    // The checkpoint holds these as read: later saves hand over only what changes. Records
    // normalised on the way in (redacted, paths derived) are written back by the save that
    // checks every record, a second from now, in the background.
    this.savedAt = Date.now();
    for (const r of sessions) this.saved.set(r.id, { updatedAt: r.updatedAt, status: r.status });
    this.checkAllAt = this.savedAt + CLOCK_SLACK_MS;
    if (sessions.length > 0) this.commits.soon(CLOCK_SLACK_MS, this.reportWriteError);
    return { records: [...sessions, ...orphans.records], readOnly: unread, changed: sessions.length + orphans.records.length > 0 || diagnostics.length > 0 };
  }

  /**
   * Whether this host may prune a session: it owns it, or no live host does. One answer per
   * writer for the call's lifetime (a check reads the writer's process entry).
   */
  private mayPrune(): (record: SessionRecord) => boolean {
    const byObject = new Map<object, boolean>();
    const byWriter = new Map<string, boolean>();
    return (record) => {
      const live = this.sessions.get(record.id);
      if (live && !live.kind.owned) return false;
      // Entries of one read share their writer's object; others are matched by identity.
      const w = record.writer;
      let foreign = byObject.get(w);
      if (foreign === undefined) {
        const key = writerKey(w);
        foreign = byWriter.get(key) ?? this.isForeign(record);
        byWriter.set(key, foreign);
        byObject.set(w, foreign);
      }
      return !foreign;
    };
  }

  /** Drops finished sessions past their retention (and their job files), only those this host may prune (see `policy/retention.ts`). */
  private prune(): void {
    // Retention is checked at most every 250 ms (or TTL) unless the registry is over its
    // size cap: each check sorts every finished session.
    const now = Date.now();
    const every = Math.min(250, this.options.finishedTtlMs ?? 250);
    if (this.sessions.size <= (this.options.maxSessions ?? DEFAULT_MAX_SESSIONS) && now - this.prunedAt < every) return;
    this.prunedAt = now;
    // Sessions another live host owns are its to prune: it may keep them longer (their
    // session directories hold the logs its readLog serves).
    const prunable = [...this.sessions.values()].filter((l) => !this.readOnly.has(l.record.id)).map((l) => l.record);
    for (const id of expiredNow(prunable, this.options, now, this.mayPrune())) this.drop(id);
  }

  /**
   * Forgets one ended session now, as retention would later (its record and session
   * directory go); false when another live host owns it and it stays.
   */
  forgetEnded(record: SessionRecord): boolean {
    if (record.status !== 'exited' || this.readOnly.has(record.id) || !this.mayPrune()(record)) return false;
    this.drop(record.id);
    this.forgotten.add(record.id);
    return true;
  }

  /**
   * Drops a session whose job never started and whose record could not be written (a spawn
   * that failed on a full disk): from memory, and from the checkpoint should an earlier
   * save have taken it.
   */
  discard(id: string): void {
    this.drop(id);
    this.forgotten.add(id);
  }

  /** Drops a session from memory, the next checkpoint and the state directory. */
  private drop(id: string): void {
    const live = this.sessions.get(id);
    if (live) {
      live.kind.pruned();
      forget(this.sessions, live);
    }
    this.sessions.delete(id);
    this.saved.delete(id);
    if (this.checkpoint) removeSessionDir(this.checkpoint.dir, id);
  }

  /** The checkpoint as other hosts last wrote it, read at most once per 20 ms. */
  private view: { at: number; byId: Promise<Map<string, SessionRecord>> } | null = null;

  /**
   * The checkpoint's entries by id, read at most once per 20 ms: `list()` and
   * `drainNotifications()` refresh every foreign session, and each would otherwise re-read
   * and re-validate the whole file. Only called with a state directory.
   */
  recordsOnDisk(): Promise<Map<string, SessionRecord>> {
    const now = Date.now();
    if (!this.view || now - this.view.at > 20) {
      const load = (this.checkpoint as Checkpoint).load().then(({ sessions }) => new Map(sessions.map((r) => [r.id, this.fromDisk(r)])));
      this.view = { at: now, byId: load };
    }
    return this.view.byId;
  }

  /** Claims completions in the checkpoint (another host may have delivered them); without one, all are ours. */
  claimCompletions(ids: string[]): Promise<Set<string>> {
    return this.checkpoint ? this.checkpoint.claimCompletions(ids) : Promise.resolve(new Set(ids));
  }

  readonly reportWriteError = (err: unknown) => this.diagnostics.push(`checkpoint write failed: ${String(err)}`);

  /** Writes the checkpoint within 200 ms, sharing the write with anything else in that time. */
  persistSoon(): void {
    if (!this.closed) this.commits.soon(200, this.reportWriteError);
  }

  /** Writes the checkpoint (group commit: concurrent callers share one write). */
  persist(): Promise<void> {
    // After close() another host may own the state directory: write nothing more.
    if (this.closed) return Promise.resolve();
    if (!this.checkpoint) {
      this.prune();
      return Promise.resolve();
    }
    return this.commits.now();
  }

  /** Releases this host's writer identity and writes the last checkpoint; never rejects (a failed write is a diagnostic). */
  async close(): Promise<void> {
    releaseWriter(this.writer);
    // The last save checks every record (see `changedRecords`).
    this.checkAllAt = 0;
    // Closed either way: a final write that fails (a full disk, a lock held too long)
    // becomes a diagnostic, never a half-closed registry.
    try {
      await this.persist();
    } catch (err) {
      this.reportWriteError(err);
    } finally {
      this.commits.stop();
      this.closed = true;
      // Released last: from now on this registry's entries are anyone's to follow.
      this.hostLock?.release();
      this.hostLock = null;
    }
  }
}
