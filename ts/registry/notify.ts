/**
 * The registry's notifications: watch-pattern matches as output arrives, a completion
 * marked delivered once the caller saw the end, and the pending events a caller drains
 * (see `policy/notifications.ts` for the events themselves).
 */
import { checkOptions } from '../options.js';
import { type CompletionEvent, owns, pendingCompletion, type ProcwardEvent, takeOwned } from '../policy/notifications.js';
import type { Live } from '../session/kind.js';
import type { DrainOptions } from '../types.js';
import { refreshMany } from '../session/refreshmany.js';
import { assertOpen, type RegistryState, refresh, SETTLED } from './state.js';

/** Feeds output to the session's watcher (`null`: the output ended); persists and emits what matched. */
export function watch(st: RegistryState, live: Live, text: string | null): void {
  if (!live.watcher || !live.kind.owned) return;
  const events = st.watching.feed(live.record, live.watcher, text);
  if (!events) return;
  for (const e of events) st.emit('watch', e);
  st.store.persist().catch(st.store.reportWriteError);
}

/** Marks the session's completion event delivered (wait, end-reaching readLog, kill, acknowledged poll). */
export function consume(st: RegistryState, live: Live): void {
  const r = live.record;
  if (!pendingCompletion(r) || !live.kind.owned) return;
  r.notificationDelivered = true;
  r.updatedAt = Date.now();
  st.store.persist().catch(st.store.reportWriteError);
}

/**
 * A reader under way (a caller's wait or kill) is done: `seen`, it returned the session's
 * end to its caller. A completion held for readers (see `Live.heldCompletion`) stays
 * delivered once one of them returned the end; when the last of them did not (a kill that
 * threw `KILL_SURVIVORS`, an aborted or timed-out wait), it is queued again and told to
 * listeners, so it is never lost.
 */
export function settleHeld(st: RegistryState, live: Live, seen: boolean): void {
  if (!live.heldCompletion) return;
  if (seen) {
    delete live.heldCompletion;
    return;
  }
  if (live.endReaders > 0) return;
  delete live.heldCompletion;
  const r = live.record;
  r.notificationDelivered = false;
  r.updatedAt = Date.now();
  const completion = pendingCompletion(r);
  if (completion && live.kind.owned) st.emit('completion', completion);
  st.store.persist().catch(st.store.reportWriteError);
}

/** `ProcessRegistry.drainNotifications`: the pending events the caller owns, oldest first. */
export async function drainNotifications(st: RegistryState, opts: DrainOptions): Promise<ProcwardEvent[]> {
  assertOpen(st);
  checkOptions('drainNotifications', opts);
  const out: ProcwardEvent[] = [];
  const lives = [...st.sessions.values()];
  await refreshMany(lives, (live) => refresh(st, live), SETTLED);
  const mine = lives.filter((l) => l.kind.owned);
  // Completions are claimed in the checkpoint first: another host may have delivered them.
  const candidates = mine.map((l) => pendingCompletion(l.record)).filter((c): c is CompletionEvent => c !== null && owns(c, opts));
  const claimed = await st.store.claimCompletions(candidates.map((c) => c.sessionId));
  for (const live of mine) out.push(...takeOwned(live.record, opts, (c) => claimed.has(c.sessionId)));
  if (out.length > 0) await st.store.persist();
  return out.sort((a, b) => a.at - b.at);
}
