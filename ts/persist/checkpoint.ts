/**
 * The checkpoint: one JSON document (`checkpoint.json`, schema version 1) in the state
 * directory, listing every session.
 *
 * - Writes are atomic and durable: a uniquely named temp file in the same directory,
 *   fsync, rename, then an fsync of the directory (not on Windows, which has none). A
 *   previous generation is kept as `checkpoint.prev.json` (a hard link to the current file
 *   renamed into place, at most every 5 s), so `checkpoint.json` never goes missing, also
 *   when a write fails.
 * - Every write holds `checkpoint.lock` (`flock(2)`, released by the kernel if the holder
 *   dies; waiters block in the kernel, so none is starved) and merges with what other
 *   hosts wrote: their entries are kept and, for a session both sides know, the newer `updatedAt` wins. Temp files of writers that died mid-write
 *   are removed under the lock.
 * - Except for a session the writer owns (its entry names the writer's own identity: it
 *   started or finished the job and follows it): the writer's record wins whatever the
 *   file's `updatedAt` says, so an entry edited from outside or stamped by a clock ahead
 *   never turns a running job exited; no other live host writes such an entry (it is
 *   foreign there). Only a completion claimed on disk stays claimed. Sessions adopted from a
 *   dead writer keep the newer-`updatedAt` rule (two hosts may adopt one).
 * - A write costs what changed, not the registry's size (issue 14): the document as this
 *   process last read or wrote it stays cached with each entry's JSON, valid while the file
 *   keeps its identity (inode, size, times; every write replaces the file). A save then
 *   merges only the records its writer says may have changed, skips entries whose JSON is
 *   unchanged and writes nothing when nothing changed; the file is re-read (and all of the
 *   writer's records merged) only when another host wrote it. The write itself joins the
 *   cached entry texts, one per line, and is still the whole file.
 * - Reads validate each entry on its own (see `generation.ts`): entries this version does not
 *   understand are kept and written back untouched, never dropped.
 * - A file that is empty, not JSON, of the wrong shape, a symlink, not a regular file (a
 *   FIFO, a device), hard-linked elsewhere or over 256 MiB is moved aside as
 *   `checkpoint.json.corrupt-<time>` with a diagnostic, and reading continues from the
 *   previous generation; a writer then also takes back the sessions whose directories
 *   (`sessions/<id>/session.json`) the file no longer lists. This happens on writes too, so
 *   a corrupt file never makes a writer drop other hosts' entries.
 */
import { closeSync, fsyncSync, openSync, readdirSync, statSync, unlinkSync } from 'node:fs';
import { link, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { fromNative, ProcwardError } from '../errors.js';
import { native } from '../native.js';
import { DEFAULT_MAX_SESSIONS, type RetentionOptions } from '../policy/retention.js';
import { readOnlyView, type SessionRecord } from '../session/record.js';
import { type CachedEntry, EntryBlocks, textOf } from './entryblocks.js';
import { expiredNow } from './expiry.js';
import { CHECKPOINT_VERSION, type Generation, keyOf, rawId, readGeneration } from './generation.js';
import { scanOrphanSessions } from './recovery.js';
import { ensureStateDir } from './statedir.js';


const FILE = 'checkpoint.json';
const PREV = 'checkpoint.prev.json';
const LOCK = 'checkpoint.lock';
/** write-file-atomic's temp names: `<file>.<digits>`. */
const TEMP = /^checkpoint(\.prev)?\.json\.\d+$/;
const LOCK_TIMEOUT_MS = 10_000;
/** How often a write also keeps the current generation as `checkpoint.prev.json`. */
const PREV_EVERY_MS = 5_000;

/** `newest` read the previous generation while the current file appeared: read again. */
const MISSING_NOW = Symbol('current file written meanwhile');

/** What loading found: valid entries and a diagnostic for everything set aside. */
export interface LoadResult {
  sessions: SessionRecord[];
  /** Entries this version does not fully understand, as far as they can be shown (see `readOnlyView`): list them, never act on them. */
  readOnly?: SessionRecord[];
  diagnostics: string[];
}

/**
 * The document as this process last read or wrote it, valid while the file still has the
 * identity `key`: every write replaces the file (a new inode), so an unchanged key means no
 * other host wrote since, and a write needs neither to read nor to validate the file again.
 */
interface CachedDocument {
  key: string;
  entries: Map<string, CachedEntry>;
  kept: unknown[];
  notes: string[];
}

/** What a writer hands to `save`. */
export interface SaveSet {
  /** Ids the writer forgot on request (`ProcessRegistry.forget`): their entries are removed. */
  forgotten?: readonly string[];
  /** Its records that may have changed since its last save (a superset is fine: unchanged ones cost a comparison). */
  changed: SessionRecord[];
  /** All of its records: asked for only when the file changed under it (another host wrote it, or it was damaged). */
  all(): SessionRecord[];
  /**
   * Whether the writer owns `record` (it names the writer's own identity): its record then
   * wins over the file's entry whatever their `updatedAt` (see `save`). Default: none.
   */
  own?(record: SessionRecord): boolean;
}

function fsyncDir(dir: string): void {
  // Windows cannot flush a directory (FlushFileBuffers on it fails: EPERM from Node, every
  // time); NTFS journals the rename itself.
  if (process.platform === 'win32') return;
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The checkpoint of one state directory. */
export class Checkpoint {
  readonly path: string;
  readonly prevPath: string;
  readonly lockPath: string;
  /** Completed writes (a burst of spawns shares one; see the registry's group commit). */
  writes = 0;
  /** The document as this process last read or wrote it (see `CachedDocument`). */
  private cache: CachedDocument | null = null;
  /** The entries' encoded lines from the last write. */
  private readonly blocks = new EntryBlocks();
  /** When this process last kept a previous generation. */
  private prevAt = 0;
  /** When a write last applied retention to the whole document. */
  private retainedAt = 0;

  private fileKey(): string | null {
    try {
      return keyOf(statSync(this.path));
    } catch {
      return null;
    }
  }

  /** The cached document, if the file is still the one it was read from or written as. */
  private cached(): CachedDocument | null {
    const c = this.cache;
    return c !== null && c.key === this.fileKey() ? c : null;
  }

  constructor(readonly dir: string) {
    ensureStateDir(dir);
    this.path = join(dir, FILE);
    this.prevPath = join(dir, PREV);
    this.lockPath = join(dir, LOCK);
  }

  /**
   * The newest readable generation; corrupt files are moved aside with a diagnostic. The
   * current file, read whole and of this version, becomes the cached document.
   */
  private async newest(diagnostics: string[]): Promise<Generation | null> {
    this.cache = null;
    // The current file is never missing once written (see `writeGeneration`), so the previous
    // generation is read in its place only when it really is missing: after a first read
    // found none, other hosts may have written their first generations (a current file and,
    // from the second, its previous one) before the previous one was read. Then the current
    // file is read again, not reported missing (issue 18: ten parallel first starts).
    for (let attempt = 0; attempt < 3; attempt++) {
      const gen = await this.newestOnce(diagnostics);
      if (gen !== MISSING_NOW) return gen;
    }
    return this.newestOnce(diagnostics, true) as Promise<Generation | null>;
  }

  /** One pass of `newest`; `MISSING_NOW` when it should read again (unless `last`). */
  private async newestOnce(diagnostics: string[], last = false): Promise<Generation | null | typeof MISSING_NOW> {
    for (const path of [this.path, this.prevPath]) {
      try {
        const gen = await readGeneration(this.dir, path);
        if (gen && path === this.prevPath) {
          if (!last && statSync(this.path, { throwIfNoEntry: false }) !== undefined) return MISSING_NOW;
          diagnostics.push(`${this.path} is missing; read the previous generation ${this.prevPath}`);
        }
        if (gen && path === this.path && !gen.newer) {
          this.cache = { key: gen.key, entries: new Map(gen.sessions.map((record) => [record.id, { record, text: null }])), kept: gen.kept, notes: gen.notes };
        }
        if (gen) return gen;
      } catch (err) {
        if (!(err instanceof ProcwardError)) throw err;
        const aside = `${path}.corrupt-${Date.now()}`;
        await rename(path, aside).catch(() => undefined);
        diagnostics.push(`${err.message}; moved aside to ${aside}`);
      }
    }
    return null;
  }

  /**
   * Reads the checkpoint. Never throws for a corrupt file (see the module docs). The
   * records are the caller's own copies; an unchanged file is not read again.
   */
  async load(): Promise<LoadResult> {
    const cached = this.cached();
    if (cached) {
      this.newer = false;
      const readOnly = cached.kept.map(readOnlyView).filter((r): r is SessionRecord => r !== null);
      return { sessions: [...cached.entries.values()].map((e) => ({ ...e.record })), readOnly, diagnostics: [...cached.notes] };
    }
    const diagnostics: string[] = [];
    const gen = await this.newest(diagnostics);
    this.newer = gen?.newer ?? false;
    const readOnly = (gen?.kept ?? []).map(readOnlyView).filter((r): r is SessionRecord => r !== null);
    return { sessions: (gen?.sessions ?? []).map((r) => ({ ...r })), readOnly, diagnostics: [...diagnostics, ...(gen?.notes ?? [])] };
  }

  /** The checkpoint was written by a newer procward (seen by the last `load`): this host only reads it. */
  newer = false;

  /**
   * Takes `checkpoint.lock`, waiting at most LOCK_TIMEOUT_MS in a blocking `flock` on a
   * native thread of its own: the kernel wakes a waiter when the holder releases, so a host
   * is not starved by others that re-take the lock at once (polling was). Errors:
   * `LOCK_TIMEOUT`.
   */
  private lock(): Promise<{ release(): void }> {
    return new Promise((resolve, reject) => {
      try {
        native.lockFile(this.lockPath, LOCK_TIMEOUT_MS, (err, lock) => {
          if (err) reject(fromNative(err));
          else if (lock) resolve(lock);
          else reject(new ProcwardError('LOCK_TIMEOUT', `${this.lockPath} stayed locked for ${LOCK_TIMEOUT_MS} ms`));
        });
      } catch (err) {
        reject(fromNative(err));
      }
    });
  }

  /** Removes temp files of writers that died mid-write. Only call while holding the lock. */
  private removeStaleTemps(): void {
    for (const name of readdirSync(this.dir)) {
      if (TEMP.test(name)) unlinkSync(join(this.dir, name));
    }
  }

  /**
   * Writes a new generation (only while holding the lock). `checkpoint.json` is never
   * missing, not even for a moment or when the write fails (a full disk): the previous
   * generation is kept by a hard link (current → temp name, renamed over
   * `checkpoint.prev.json`), and the new one lands by temp file + fsync + rename over the
   * current file. A failed write leaves the current file as it was.
   */
  private async writeGeneration(hasCurrent: boolean, doc: CachedDocument): Promise<void> {
    // At most once per PREV_EVERY_MS: the previous generation is only needed when the
    // current one was damaged from outside, and the link and rename cost a directory update.
    if (hasCurrent && Date.now() - this.prevAt >= PREV_EVERY_MS) {
      const temp = `${this.prevPath}.${process.pid}${Date.now() % 1_000_000}`;
      try {
        await link(this.path, temp);
        await rename(temp, this.prevPath);
        this.prevAt = Date.now();
      } catch {
        // Best effort (no current file, or no room for a directory entry): the current
        // file is untouched either way, and the temp name is removed under the lock.
        await unlink(temp).catch(() => undefined);
      }
    }
    // One entry per line, each serialised once and reused while it is unchanged: a write
    // costs a join and the I/O, not a serialisation of every session.
    // Unchanged blocks of entries are not even encoded again (see `entryblocks.ts`).
    const parts = this.blocks.encode(doc.entries.values());
    const kept: string[] = [];
    for (const raw of doc.kept) if (!doc.entries.has(rawId(raw) ?? '')) kept.push(JSON.stringify(raw));
    if (kept.length > 0) parts.push(Buffer.from(`${parts.length > 0 ? ',\n' : ''}${kept.join(',\n')}`));
    const lines = parts.length > 0;
    const head = Buffer.from(`{"version":${CHECKPOINT_VERSION},"writtenAt":${Date.now()},"sessions":[${lines ? '\n' : ''}`);
    try {
      // One copy of the blocks into one buffer (write-file-atomic takes one): about 1 ms at
      // 10 000 sessions, the price of a maintained atomic writer.
      await writeFileAtomic(this.path, Buffer.concat([head, ...parts, Buffer.from(`${lines ? '\n' : ''}]}\n`)]), { mode: 0o600, fsync: true });
      fsyncDir(this.dir);
    } catch (err) {
      this.cache = null;
      this.blocks.clear();
      throw err;
    }
    this.writes++;
    const key = this.fileKey();
    this.cache = key === null ? null : { ...doc, key };
  }

  /**
   * The document to write over, under the lock: the cached one when no other host wrote
   * since, else the file read again (`fresh`: the caller then merges all of its records,
   * not only the changed ones). Null when a newer procward wrote it (never written over).
   */
  private async current(diagnostics: string[]): Promise<{ doc: CachedDocument; fresh: boolean; hasCurrent: boolean } | null> {
    const cached = this.cached();
    if (cached) return { doc: cached, fresh: false, hasCurrent: true };
    const gen = await this.newest(diagnostics);
    if (gen?.newer) return null;
    const doc = this.cache ?? { key: '', entries: new Map((gen?.sessions ?? []).map((record) => [record.id, { record, text: null }])), kept: gen?.kept ?? [], notes: gen?.notes ?? [] };
    return { doc, fresh: true, hasCurrent: gen !== null };
  }

  /**
   * Marks the completion notifications of `ids` delivered, under the lock, and returns the
   * ids this call claimed: an id whose notification another host already delivered is not
   * returned, so each notification is delivered once across hosts.
   */
  async claimCompletions(ids: string[]): Promise<Set<string>> {
    const claimed = new Set<string>();
    if (ids.length === 0) return claimed;
    const lock = await this.lock();
    try {
      this.removeStaleTemps();
      const current = await this.current([]);
      if (!current?.hasCurrent) return new Set(ids);
      const { entries } = current.doc;
      let dirty = false;
      for (const id of ids) {
        const e = entries.get(id);
        if (e?.record.notificationDelivered) continue;
        claimed.add(id);
        if (e) entries.set(id, { record: { ...e.record, notificationDelivered: true, updatedAt: Date.now() }, text: null });
        dirty ||= e !== undefined;
      }
      if (dirty) await this.writeGeneration(true, current.doc);
      return claimed;
    } finally {
      lock.release();
    }
  }

  /**
   * Merges `records` into the checkpoint under the lock (see the module docs); finished
   * sessions past their retention are dropped, but only those `mayPrune` allows (a writer
   * passes "mine, or no live host's": another live host's entries are its to expire).
   * `records` are the writer's records (an array), or a `SaveSet`: then only `changed` is
   * merged while no other host wrote since this process last read or
   * wrote the file; an entry whose JSON is unchanged is not rewritten, and a save that
   * changes nothing writes nothing. Returns diagnostics.
   */
  async save(records: SaveSet | SessionRecord[], retention: RetentionOptions = {}, mayPrune: (r: SessionRecord) => boolean = () => true): Promise<{ diagnostics: string[] }> {
    const lock = await this.lock();
    try {
      this.removeStaleTemps();
      const diagnostics: string[] = [];
      const current = await this.current(diagnostics);
      // A newer procward's checkpoint is never written over (see `load`).
      if (!current) return { diagnostics: [...diagnostics, `${this.path}: written by a newer procward; not written`] };
      const { doc, fresh } = current;
      const set = Array.isArray(records) ? { changed: records, all: () => records } : records;
      const mine = fresh ? set.all() : set.changed;
      // A missing or damaged file is written whatever changed.
      let dirty = !current.hasCurrent || diagnostics.length > 0;
      // A damaged file (moved aside, or entries skipped) may have held other hosts' newest
      // entries: every session also has its directory, so take back what it tells.
      if (diagnostics.length > 0) {
        const known = [...doc.entries.keys(), ...mine.map((r) => r.id), ...doc.kept.map((raw) => rawId(raw) ?? '')];
        for (const r of scanOrphanSessions(this.dir, new Set(known), () => false).records) doc.entries.set(r.id, { record: r, text: null });
      }
      for (const mineRec of mine) {
        const other = doc.entries.get(mineRec.id);
        const own = set.own?.(mineRec) === true;
        if (other && other.record.updatedAt > mineRec.updatedAt && !own) continue;
        // A completion claimed on disk (`claimCompletions`) stays claimed.
        const rec = own && other?.record.notificationDelivered && !mineRec.notificationDelivered ? { ...mineRec, notificationDelivered: true } : mineRec;
        const text = JSON.stringify(rec);
        if (other && textOf(other) === text) continue;
        doc.entries.set(rec.id, { record: rec, text });
        dirty = true;
      }
      for (const id of set.forgotten ?? []) dirty = doc.entries.delete(id) || dirty;
      if (this.retentionDue(doc.entries.size, retention)) {
        this.retainedAt = Date.now();
        const records = Array.from(doc.entries.values(), (e) => e.record);
        for (const id of expiredNow(records, retention, Date.now(), mayPrune)) dirty = doc.entries.delete(id) || dirty;
      }
      // Nothing changed: the file already says it all.
      if (dirty) await this.writeGeneration(current.hasCurrent, doc);
      return { diagnostics };
    } finally {
      lock.release();
    }
  }

  /**
   * Whether a write applies retention to the whole document: at most every 250 ms (or the
   * TTL, if shorter), as the registry prunes, unless the document is over its size cap.
   */
  private retentionDue(size: number, retention: RetentionOptions): boolean {
    const every = Math.min(250, retention.finishedTtlMs ?? 250);
    return size > (retention.maxSessions ?? DEFAULT_MAX_SESSIONS) || Date.now() - this.retainedAt >= every;
  }
}
