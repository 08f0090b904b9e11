/**
 * The checkpoint: one JSON document (`checkpoint.json`, schema version 1) in the state
 * directory, listing every session. Writes are atomic (temp file, fsync, rename, then an
 * fsync of the directory), keep the previous generation as `checkpoint.prev.json`, take a
 * cross-process lock, and merge with what other hosts wrote (newer `updatedAt` wins per
 * session). Reads validate each entry on its own; a file that cannot be parsed is moved
 * aside as `checkpoint.json.corrupt-<time>` and reading continues from the previous
 * generation.
 */
import { mkdirSync, chmodSync, openSync, fsyncSync, closeSync, lstatSync } from 'node:fs';
import { readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import writeFileAtomic from 'write-file-atomic';
import { z } from 'zod';
import { ProcwardError } from './errors.js';
import { expiredIds, type RetentionOptions } from './retention.js';
import { sessionRecordSchema, type SessionRecord } from './session.js';

export const CHECKPOINT_VERSION = 1;
const FILE = 'checkpoint.json';
const PREV = 'checkpoint.prev.json';

const documentSchema = z.object({
  version: z.literal(CHECKPOINT_VERSION),
  sessions: z.array(z.unknown()),
});

/** What loading found: valid entries and a diagnostic for everything set aside. */
export interface LoadResult {
  sessions: SessionRecord[];
  diagnostics: string[];
}

/** Creates the state directory (0700) if needed and checks it is not a symlink. */
export function ensureStateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (lstatSync(dir).isSymbolicLink()) {
    throw new ProcwardError('INVALID_ARGUMENT', `state directory ${dir} is a symlink; refusing to use it`);
  }
  chmodSync(dir, 0o700);
}

function fsyncDir(dir: string): void {
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

  constructor(readonly dir: string) {
    ensureStateDir(dir);
    this.path = join(dir, FILE);
    this.prevPath = join(dir, PREV);
  }

  /** Parses one generation; `null` when the file does not exist. Throws on corruption. */
  private async parse(path: string, diagnostics: string[]): Promise<SessionRecord[] | null> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    let doc: z.infer<typeof documentSchema>;
    try {
      doc = documentSchema.parse(JSON.parse(text));
    } catch (err) {
      const why = text.trim() === '' ? 'it is empty' : err instanceof SyntaxError ? `invalid JSON (${err.message})` : 'wrong shape';
      throw new ProcwardError('CHECKPOINT_CORRUPT', `${path}: ${why}`);
    }
    const sessions: SessionRecord[] = [];
    doc.sessions.forEach((raw, i) => {
      const parsed = sessionRecordSchema.safeParse(raw);
      if (parsed.success) sessions.push(parsed.data);
      else diagnostics.push(`${path}: entry ${i} skipped: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    });
    return sessions;
  }

  /** Reads the newest readable generation. Never throws for a corrupt file. */
  async load(): Promise<LoadResult> {
    const diagnostics: string[] = [];
    for (const path of [this.path, this.prevPath]) {
      try {
        const sessions = await this.parse(path, diagnostics);
        if (sessions) return { sessions, diagnostics };
      } catch (err) {
        if (!(err instanceof ProcwardError)) throw err;
        const aside = `${path}.corrupt-${Date.now()}`;
        await rename(path, aside).catch(() => undefined);
        diagnostics.push(`${err.message}; moved aside to ${aside}`);
      }
    }
    return { sessions: [], diagnostics };
  }

  /**
   * Merges `records` into the checkpoint under the cross-process lock: entries of other
   * writers are kept, for a session both sides know the newer `updatedAt` wins, and
   * finished sessions past their retention are dropped. Returns the merged list.
   */
  async save(records: SessionRecord[], retention: RetentionOptions = {}): Promise<SessionRecord[]> {
    // proper-lockfile locks a path by creating `<path>.lock`; the target need not exist.
    const release = await lockfile.lock(this.path, {
      realpath: false,
      stale: 10_000,
      retries: { retries: 200, minTimeout: 5, maxTimeout: 50, factor: 1.5 },
    });
    try {
      const diagnostics: string[] = [];
      let current: SessionRecord[] = [];
      let currentText: string | null = null;
      try {
        currentText = await readFile(this.path, 'utf8');
        current = (await this.parse(this.path, diagnostics)) ?? [];
      } catch (err) {
        if (!(err instanceof ProcwardError) && (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        if (err instanceof ProcwardError) currentText = null;
      }
      const merged = new Map(current.map((s) => [s.id, s]));
      for (const rec of records) {
        const other = merged.get(rec.id);
        if (!other || other.updatedAt <= rec.updatedAt) merged.set(rec.id, rec);
      }
      const expired = expiredIds(merged.values(), retention);
      const sessions = [...merged.values()].filter((s) => !expired.has(s.id)).sort((a, b) => a.startedAt - b.startedAt);
      if (currentText !== null) {
        await writeFileAtomic(this.prevPath, currentText, { mode: 0o600, fsync: true });
      }
      const doc = { version: CHECKPOINT_VERSION, writtenAt: Date.now(), sessions };
      await writeFileAtomic(this.path, `${JSON.stringify(doc, null, 1)}\n`, { mode: 0o600, fsync: true });
      fsyncDir(this.dir);
      return sessions;
    } finally {
      await release();
    }
  }
}
