/**
 * Reading one generation of the checkpoint (`checkpoint.json` or `checkpoint.prev.json`) as
 * untrusted input: the document's shape, then each entry on its own.
 *
 * - An entry this version does not fully understand (a newer schema version, an unknown
 *   field or value, a field that fails validation) is never dropped: it is kept raw, listed
 *   read-only and written back untouched. A document of a newer version is read with all its
 *   entries read-only and is never written over.
 * - Paths in entries are replaced by the ones their session id gives (see `confinePaths`).
 * - A kept entry nested deeper than 64 levels or larger than 1 MiB is not kept (see
 *   `bounds.ts`): the file is copied to `checkpoint.json.quarantine-<inode>` and a note
 *   names it. Of two entries with one id the newer stands, with a note. One read adds at
 *   most 100 notes; the rest are counted.
 * - A file that is empty, not JSON or of the wrong shape throws `CHECKPOINT_CORRUPT` (as
 *   does one that is not a plain regular file: see `checkpointfile.ts`); the caller moves it
 *   aside.
 */
import { constants } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { ProcwardError } from '../errors.js';
import { readOnlyView, SESSION_SCHEMA_VERSION, type SessionRecord, sessionRecordSchema, understood } from '../session/record.js';
import { outOfBounds } from './bounds.js';
import { readCheckpointText } from './checkpointfile.js';
import { confinePaths } from './jobfiles.js';
import { MAX_READ_DIAGNOSTICS } from './stored.js';

/** The document version this procward reads and writes. */
export const CHECKPOINT_VERSION = 1;

/** One generation as read. */
export interface Generation {
  sessions: SessionRecord[];
  /** The file's identity when it was read (see `keyOf`). */
  key: string;
  /** Raw entries this version does not understand, written back untouched (see `session/record.ts`). */
  kept: unknown[];
  /** Written by a newer procward (document version above ours): read, never written over. */
  newer: boolean;
  /** What reading found that is not damage (read-only entries, ignored paths): reported by `load` only. */
  notes: string[];
}

/** The identity of a file's current content: device, inode, size, modification and change times. */
export const keyOf = (st: { dev: number; ino: number; size: number; mtimeMs: number; ctimeMs: number }) => `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;

/** The id of a raw entry, when it has one of the right shape. */
export const rawId = (raw: unknown): string | undefined => readOnlyView(raw)?.id;

/**
 * The document's version and entries: `{ version: <positive integer>, sessions: [...] }`
 * (other fields are ignored), else `null`.
 */
function documentOf(doc: unknown): { version: number; sessions: unknown[] } | null {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return null;
  const { version, sessions } = doc as Record<string, unknown>;
  return Number.isSafeInteger(version) && (version as number) > 0 && Array.isArray(sessions) ? { version: version as number, sessions } : null;
}

/**
 * Reads the generation at `path` of the state directory `dir`; `null` when the file does not
 * exist. Throws `CHECKPOINT_CORRUPT` (see the module docs).
 */
export async function readGeneration(dir: string, path: string): Promise<Generation | null> {
  // Untrusted bytes: not a symlink, FIFO, device, foreign hard link or huge file (see checkpointfile.ts).
  const file = await readCheckpointText(path);
  if (file === null) return null;
  const { text } = file;
  let doc: { version: number; sessions: unknown[] } | null;
  try {
    doc = documentOf(JSON.parse(text));
  } catch (err) {
    const why = text.trim() === '' ? 'it is empty' : `invalid JSON (${(err as Error).message})`;
    throw new ProcwardError('CHECKPOINT_CORRUPT', `${path}: ${why}`);
  }
  if (doc === null) throw new ProcwardError('CHECKPOINT_CORRUPT', `${path}: wrong shape (expected { version: 1, sessions: [...] })`);
  const newer = doc.version > CHECKPOINT_VERSION;
  const notes = newer ? [`${path}: written by a newer procward (checkpoint version ${doc.version}, this one reads ${CHECKPOINT_VERSION}): its sessions are read-only and it is never written over`] : [];
  const sessions: SessionRecord[] = [];
  const kept: unknown[] = [];
  const byId = new Map<string, number>();
  let quarantined = false;
  let unexplained = 0;
  const entries = doc.sessions;
  const writers = new Map<string, SessionRecord['writer']>();
  for (let i = 0; i < entries.length; i++) {
    const raw = entries[i];
    const record = newer ? null : understood(raw);
    if (record) {
      record.writer = sharedWriter(writers, record.writer);
      // Two entries of one session: the newer one stands (as when hosts merge).
      const seen = byId.get(record.id);
      if (seen !== undefined) {
        notes.push(`${path}: entry ${i} repeats session ${record.id}; the newer of the two is kept`);
        if ((sessions[seen] as SessionRecord).updatedAt <= record.updatedAt) sessions[seen] = confinePaths(dir, record, notes);
        continue;
      }
      byId.set(record.id, sessions.length);
      sessions.push(confinePaths(dir, record, notes));
      continue;
    }
    // Kept entries are written back on every write: one too deep or too large to write is
    // set aside (the file is copied aside first); the rest of the document still loads.
    const bound = newer ? null : outOfBounds(raw);
    if (bound !== null) {
      quarantined = true;
      notes.push(`${path}: entry ${i} (${rawId(raw) ?? 'no session id'}) is ${bound}; not kept (the file is copied to ${path}.quarantine-${file.st.ino})`);
      continue;
    }
    // Never dropped: a newer host's entry, or one damaged in one field, may be a running job.
    kept.push(raw);
    // The reason costs a second validation: worked out only for the notes that are kept.
    if (!newer && notes.length < MAX_READ_DIAGNOSTICS) notes.push(`${path}: entry ${i} (${rawId(raw) ?? 'no session id'}) kept read-only: ${whyNotUnderstood(raw)}`);
    else if (!newer) unexplained++;
  }
  if (quarantined) await copyFile(path, `${path}.quarantine-${file.st.ino}`, constants.COPYFILE_EXCL).catch(() => undefined);
  // The identity of the inode read (a writer never changes a file in place).
  return { sessions, key: keyOf(file.st), kept, newer, notes: capped(notes, unexplained) };
}

/**
 * One object for every entry of one writer (records never change a writer in place, they
 * replace it): 10 000 entries of a few hosts hold a few writer objects, and the questions
 * asked per writer (is that host alive?) are answered once per object.
 */
function sharedWriter(writers: Map<string, SessionRecord['writer']>, w: SessionRecord['writer']): SessionRecord['writer'] {
  const key = `${w.pid}:${w.startTime}:${w.bootId}:${w.instance ?? ''}`;
  const known = writers.get(key);
  if (known && known.pid === w.pid && known.startTime === w.startTime && known.bootId === w.bootId && known.instance === w.instance) return known;
  writers.set(key, w);
  return w;
}

/**
 * At most MAX_READ_DIAGNOSTICS notes of one read, then how many more (200 000 damaged
 * entries would be a line each); `more` entries kept read-only were not even described.
 */
function capped(notes: string[], more: number): string[] {
  if (notes.length + (more > 0 ? 1 : 0) <= MAX_READ_DIAGNOSTICS) return more > 0 ? [...notes, `… and ${more} more entries kept read-only`] : notes;
  const out = notes.slice(0, MAX_READ_DIAGNOSTICS - 1);
  out.push(`… and ${notes.length - out.length} more notes and ${more} more entries kept read-only`);
  return out;
}

/** The first reason an entry is not understood (for the note). */
function whyNotUnderstood(raw: unknown): string {
  const parsed = sessionRecordSchema.safeParse(raw);
  if (parsed.success) return `written with schema version ${parsed.data.schemaVersion}, newer than ${SESSION_SCHEMA_VERSION}`;
  const issue = parsed.error.issues[0];
  return `${issue?.path.join('.') ?? ''} ${issue?.message ?? 'invalid'}`.trim();
}
