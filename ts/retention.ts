/**
 * Retention of finished sessions: pruned after a TTL, and oldest-finished-first when the
 * registry holds more than its cap. Running sessions are never evicted. The rule is a pure
 * function of the records and the clock, so every host sharing a state directory prunes
 * the same entries.
 */
import type { SessionRecord } from './session.js';

export interface RetentionOptions {
  /** Milliseconds a finished session is kept after it ended. Default 30 minutes. */
  finishedTtlMs?: number;
  /** Sessions kept at most; beyond it the oldest finished ones go first. Default 1000. */
  maxSessions?: number;
}

export const DEFAULT_FINISHED_TTL_MS = 30 * 60 * 1000;
export const DEFAULT_MAX_SESSIONS = 1000;

/** The ids of the sessions to drop from `records` at time `now` (milliseconds). */
export function expiredIds(records: Iterable<SessionRecord>, opts: RetentionOptions = {}, now = Date.now()): Set<string> {
  const ttl = opts.finishedTtlMs ?? DEFAULT_FINISHED_TTL_MS;
  const cap = opts.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const all = [...records];
  const out = new Set<string>();
  const finished = all.filter((r) => r.status === 'exited').sort((a, b) => (a.exitedAt ?? 0) - (b.exitedAt ?? 0));
  for (const r of finished) if ((r.exitedAt ?? 0) + ttl < now) out.add(r.id);
  let excess = all.length - out.size - cap;
  for (const r of finished) {
    if (excess <= 0) break;
    if (!out.has(r.id)) {
      out.add(r.id);
      excess--;
    }
  }
  return out;
}
