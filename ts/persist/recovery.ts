/**
 * Recovery of sessions that the checkpoint does not list: a host that crashed between
 * spawning a job and writing its checkpoint left `sessions/<id>/session.json` (written
 * before the spawn) and, for a durable job, the supervisor's own `supervisor.json`. Those
 * are enough to track the job again, or to report how it ended.
 *
 * Entries of a host that is still alive are returned too: that host is between its spawn
 * and its checkpoint write (which follows within 200 ms), and the caller treats them as
 * foreign (shown, never written).
 */
import { isSessionId } from '../session/ids.js';
import { lstatSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { confinePaths, readPrivate, readSupervisorIdentity, sessionDirs, sessionFiles } from './jobfiles.js';
import { readOnlyView, type SessionRecord, understood } from '../session/record.js';

export interface OrphanScan {
  records: SessionRecord[];
  /** Session files this version does not understand, as far as they can be shown (see `readOnlyView`). */
  readOnly: SessionRecord[];
  diagnostics: string[];
}

/** Session directories not in `known`, turned back into records. */
export function scanOrphanSessions(stateDir: string, known: Set<string>, ownedByLiveHost: (r: SessionRecord) => boolean): OrphanScan {
  const records: SessionRecord[] = [];
  const readOnly: SessionRecord[] = [];
  const diagnostics: string[] = [];
  for (const id of sessionDirs(stateDir)) {
    if (known.has(id) || !isSessionId(id)) continue;
    const files = sessionFiles(stateDir, id);
    const record = readSessionFile(files.metaPath, diagnostics);
    if (!record) {
      const view = readOnlyView(parseJson(readPrivate(files.metaPath)));
      if (view?.id === id) {
        readOnly.push(view);
        diagnostics.push(`${id}: session.json is not understood by this version; listed read-only`);
      } else if (!startUnderWay(files.dir, files.metaPath)) diagnostics.push(`${files.dir}: not in the checkpoint and no readable session.json; left alone`);
      continue;
    }
    if (record.id !== id) continue;
    if (record.durable) {
      const supervisor = readSupervisorIdentity(files.supervisorPath);
      if (supervisor) Object.assign(record, { pid: supervisor.pid, identity: supervisor });
    }
    records.push(record);
    // A live host's session is between its spawn and its checkpoint write: the caller
    // shows it as foreign, and its host writes it.
    if (!ownedByLiveHost(record)) diagnostics.push(`${id}: recovered from its session directory (its host stopped before writing the checkpoint)`);
  }
  return { records, readOnly, diagnostics };
}

/** How long a session directory without `session.json` counts as a start under way. */
const START_UNDER_WAY_MS = 60_000;

/**
 * Whether `dir` is a session directory another host is starting: made in the last
 * {@link START_UNDER_WAY_MS} (its `lstat` mtime), with no `session.json` yet (a start
 * makes the directory first and writes the record right after). Such a directory is
 * skipped without a word; an older one, or one whose record is there but unreadable, is
 * reported.
 */
function startUnderWay(dir: string, metaPath: string): boolean {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  return st?.isDirectory() === true && lstatSync(metaPath, { throwIfNoEntry: false }) === undefined && Math.abs(Date.now() - st.mtimeMs) < START_UNDER_WAY_MS;
}

/** A session's `session.json`, or `null` when it is missing or not a valid record. */
export function readSessionFile(path: string, diagnostics: string[] = []): SessionRecord | null {
  const record = understood(parseJson(readPrivate(path)));
  if (!record) return null;
  // `<stateDir>/sessions/<id>/session.json`: a record found there speaks only for that id.
  const dir = dirname(path);
  if (basename(dir) !== record.id) return null;
  return confinePaths(dirname(dirname(dir)), record, diagnostics);
}

function parseJson(text: string | null): unknown {
  try {
    return text === null ? null : JSON.parse(text);
  } catch {
    return null;
  }
}
