/**
 * A session's end as the registry publishes it (exactly once, whoever noticed it first),
 * and an ended session forgotten on request, as retention would later.
 */
import { ProcwardError } from '../errors.js';
import { visibleTail } from '../output/tail.js';
import { preview } from '../output/views.js';
import { COMPLETION_TAIL_CHARS, pendingCompletion } from '../policy/notifications.js';
import type { Live, Outcome } from '../session/kind.js';
import { watch } from './notify.js';
import { actOn, clean, type RegistryState, rebalance, refresh } from './state.js';

/** Publishes a session's end. Exactly one finisher wins; later calls change nothing. */
export function finish(st: RegistryState, live: Live, outcome: Outcome): boolean {
  const r = live.record;
  if (r.status === 'exited') return false;
  Object.assign(r, {
    status: 'exited',
    // A recovered durable job ended when its exit file says, not when we noticed.
    exitedAt: Math.max(r.startedAt, Math.min(outcome.exitedAt ?? Date.now(), Date.now())),
    exitCode: outcome.exitCode,
    signal: outcome.signal,
    reason: outcome.reason,
    terminationSource: outcome.source,
    updatedAt: Date.now(),
    writer: st.store.writer,
  });
  if (outcome.timedOut) r.timedOut = true;
  st.deadlines.clear(r.id);
  live.kind.recordEnd();
  watch(st, live, null);
  if (r.notifyOnComplete && r.completionTail === undefined) {
    const tail = visibleTail(live.tail);
    r.completionTail = preview(tail.text, COMPLETION_TAIL_CHARS, (t, k) => clean(st, t, k), tail.startsInKeyBlock);
  }
  delete live.watcher;
  rebalance(st, live);
  live.kind.ended();
  st.leftovers.soon(live);
  st.logs.ended(live);
  for (const w of live.waiters) w();
  live.waiters.clear();
  // A caller's wait or kill under way returns this end: its completion is theirs, never
  // queued for a drain nor told to listeners (one delivery per end).
  if (live.endReaders > 0 && live.kind.owned && pendingCompletion(r)) {
    r.notificationDelivered = true;
    live.heldCompletion = true;
  }
  const completion = pendingCompletion(r);
  if (completion && live.kind.owned) st.emit('completion', completion);
  // An end kept on disk (a durable job's exit file) lets its checkpoint write wait for the
  // next one (or a short timer); other ends are written at once.
  if (live.kind.onDisk && !completion) st.store.persistSoon();
  else st.store.persist().catch(st.store.reportWriteError);
  return true;
}

/** `ProcessRegistry.forget`: drops one ended session, its record, log and exit file. */
export async function forget(st: RegistryState, id: string): Promise<{ id: string }> {
  const live = actOn(st, id);
  await refresh(st, live);
  const r = live.record;
  if (r.status !== 'exited') throw new ProcwardError('SESSION_RUNNING', `${r.id} is still running: only an ended session can be forgotten (kill it first)`);
  if (!st.store.forgetEnded(r)) throw new ProcwardError('SESSION_OWNED', `${r.id} belongs to another live host; that host keeps or prunes it`);
  await st.store.persist();
  return { id: r.id };
}
