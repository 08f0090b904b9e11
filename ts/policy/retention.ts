/**
 * Retention of finished sessions: pruned after a TTL, and oldest-finished-first when the
 * registry holds more than its cap. The rule is a pure function of the records, the clock
 * and who may prune what, so hosts sharing a state directory agree on it.
 *
 * Never pruned: a running session; a session the caller may not prune (`mayPrune`: a host
 * prunes only sessions it owns or that no live host owns, since a host with a shorter
 * retention must not delete the data of one that keeps it longer). The cap never prunes a
 * session whose completion event is not yet delivered either, and the TTL only once that
 * session ended a day ago ({@link UNDELIVERED_KEEP_MS}): an agent away longer than the TTL
 * (or a host that set it to 0) still learns how its job ended. The cap is therefore exceeded
 * while more sessions than that are running, foreign or undelivered.
 */
import type { SessionRecord } from '../session/record.js';

export interface RetentionOptions {
  /** Milliseconds a finished session is kept after it ended. Default 30 minutes. */
  finishedTtlMs?: number;
  /**
   * Sessions kept at most; beyond it the oldest finished ones go first. Default 1000. A
   * soft cap: running sessions, sessions of other live hosts and finished sessions whose
   * completion event is not yet delivered are never pruned to meet it.
   */
  maxSessions?: number;
}

export const DEFAULT_FINISHED_TTL_MS = 30 * 60 * 1000;
/** How long past its end a session with an undelivered completion outlives the TTL: a day. */
export const UNDELIVERED_KEEP_MS = 24 * 60 * 60 * 1000;
export const DEFAULT_MAX_SESSIONS = 1000;

/** A completion event is queued for the session and not yet delivered (see `notifications.ts`). */
const completionPending = (r: SessionRecord) => r.notifyOnComplete === true && r.notificationDelivered !== true;

/**
 * The ids of the sessions to drop from `records` at time `now` (milliseconds). `mayPrune`
 * says which sessions this caller may drop at all (default: all); the others still count
 * towards the cap.
 */
export function expiredIds(records: Iterable<SessionRecord>, opts: RetentionOptions = {}, now = Date.now(), mayPrune: (r: SessionRecord) => boolean = () => true): Set<string> {
  const ttl = opts.finishedTtlMs ?? DEFAULT_FINISHED_TTL_MS;
  const cap = opts.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const all = [...records];
  const out = new Set<string>();
  const finished = all.filter((r) => r.status === 'exited' && mayPrune(r)).sort((a, b) => (a.exitedAt ?? 0) - (b.exitedAt ?? 0));
  for (const r of finished) {
    const keep = completionPending(r) ? Math.max(ttl, UNDELIVERED_KEEP_MS) : ttl;
    if ((r.exitedAt ?? 0) + keep < now) out.add(r.id);
  }
  let excess = all.length - out.size - cap;
  for (const r of finished) {
    if (excess <= 0) break;
    if (!out.has(r.id) && !completionPending(r)) {
      out.add(r.id);
      excess--;
    }
  }
  return out;
}
