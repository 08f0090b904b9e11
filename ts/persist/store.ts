/**
 * Where a registry's sessions persist: the checkpoint (written by group commit, merged with
 * other hosts' entries), retention of finished sessions with their files, recovery of
 * what the state directory lists, and the view of entries other hosts wrote. Without a
 * state directory nothing is written and retention alone runs.
 */
import { resolve as resolvePath } from 'node:path';
import { expiredIds, DEFAULT_MAX_SESSIONS } from '../policy/retention.js';
import type { Live } from '../session/kind.js';
import type { SessionRecord } from '../session/record.js';
import type { RegistryOptions } from '../types.js';
import { Checkpoint } from './checkpoint.js';
import { GroupCommit } from './groupcommit.js';
import { removeSessionDir } from './jobfiles.js';
import { scanOrphanSessions } from './recovery.js';
import { isForeign, newWriter, releaseWriter, type WriterIdentity } from './writer.js';

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

  constructor(
    private readonly options: RegistryOptions,
    /** The registry's index: what is saved and pruned. */
    private readonly sessions: Map<string, Live>,
    private readonly diagnostics: string[],
  ) {
    this.checkpoint = options.stateDir !== undefined ? new Checkpoint(resolvePath(options.stateDir)) : undefined;
    this.writer = newWriter();
    this.commits = new GroupCommit(async () => {
      this.prune();
      const saved = await this.checkpoint?.save(
        [...this.sessions.values()].filter((l) => l.kind.owned && !this.readOnly.has(l.record.id)).map((l) => ({ ...l.record })),
        this.options,
        this.mayPrune(),
      );
      this.diagnostics.push(...(saved?.diagnostics ?? []));
    });
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

  /** Whether a live host other than this one wrote the record. */
  isForeign(record: SessionRecord): boolean {
    return isForeign(record, this.writer);
  }

  /**
   * Reads the checkpoint and the session directories it does not list. Entries older than
   * their session.json (a damaged or previous checkpoint generation) take their end from
   * it when their session is refreshed.
   */
  async recover(): Promise<Recovered> {
    if (!this.checkpoint) return { records: [], readOnly: [], changed: false };
    const { sessions, readOnly = [], diagnostics } = await this.checkpoint.load();
    const orphans = scanOrphanSessions(this.checkpoint.dir, new Set([...sessions, ...readOnly].map((r) => r.id)), (r) => this.isForeign(r));
    this.diagnostics.push(...diagnostics, ...orphans.diagnostics);
    // A second entry for a session this version understands changes nothing.
    const understood = new Set(sessions.map((r) => r.id));
    const unread = [...readOnly, ...orphans.readOnly].filter((r) => !understood.has(r.id));
    for (const r of unread) this.readOnly.add(r.id);
    return { records: [...sessions, ...orphans.records], readOnly: unread, changed: sessions.length + orphans.records.length > 0 || diagnostics.length > 0 };
  }

  /**
   * Whether this host may prune a session: it owns it, or no live host does. One answer per
   * writer for the call's lifetime (a check reads the writer's process entry).
   */
  private mayPrune(): (record: SessionRecord) => boolean {
    const byWriter = new Map<string, boolean>();
    return (record) => {
      const live = this.sessions.get(record.id);
      if (live && !live.kind.owned) return false;
      const w = record.writer;
      const key = `${w.pid}:${w.startTime}:${w.bootId}:${w.instance ?? ''}`;
      const known = byWriter.get(key);
      if (known !== undefined) return !known;
      const foreign = this.isForeign(record);
      byWriter.set(key, foreign);
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
    for (const id of expiredIds(prunable, this.options, now, this.mayPrune())) {
      this.sessions.get(id)?.kind.pruned();
      this.sessions.delete(id);
      if (this.checkpoint) removeSessionDir(this.checkpoint.dir, id);
    }
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
      const load = (this.checkpoint as Checkpoint).load().then(({ sessions }) => new Map(sessions.map((r) => [r.id, r])));
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
    // Closed either way: a final write that fails (a full disk, a lock held too long)
    // becomes a diagnostic, never a half-closed registry.
    try {
      await this.persist();
    } catch (err) {
      this.reportWriteError(err);
    } finally {
      this.commits.stop();
      this.closed = true;
    }
  }
}
