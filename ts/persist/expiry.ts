/**
 * Retention as the state directory applies it on every write (see `policy/retention.ts` for
 * the rule): the same answer as `expiredIds` over every record, for the cost of one look
 * at each while the size cap is not reached (issue 14). Under the cap only the TTL prunes,
 * and a record whose TTL has not run out cannot be pruned, so only the others are handed to
 * `expiredIds` (which sorts what it is given and asks `mayPrune` of each); over the cap
 * every record counts and all of them are handed over.
 */
import { DEFAULT_FINISHED_TTL_MS, DEFAULT_MAX_SESSIONS, expiredIds, type RetentionOptions } from '../policy/retention.js';
import type { SessionRecord } from '../session/record.js';

/** What `expiredIds(records, opts, now, mayPrune)` returns. */
export function expiredNow(records: SessionRecord[], opts: RetentionOptions, now: number, mayPrune: (r: SessionRecord) => boolean): Set<string> {
  if (records.length > (opts.maxSessions ?? DEFAULT_MAX_SESSIONS)) return expiredIds(records, opts, now, mayPrune);
  const ttl = opts.finishedTtlMs ?? DEFAULT_FINISHED_TTL_MS;
  const due: SessionRecord[] = [];
  for (const r of records) if (r.status === 'exited' && (r.exitedAt ?? 0) + ttl < now) due.push(r);
  return due.length === 0 ? new Set() : expiredIds(due, opts, now, mayPrune);
}
