/**
 * The registry-wide output budget (`maxTotalOutputChars`): running sessions share it (each
 * gets at most its own cap), finished sessions whose output is also on disk give up their
 * tail first, then finished others, oldest first.
 *
 * A rebalance runs on every spawn and every end, so it costs the running sessions, not the
 * registry's size (issue 14: walking 10 000 finished sessions twice per spawn was a tenth
 * of a spawn). A ledger per registry map keeps the running sessions and the bytes finished
 * ones hold; it takes the sessions added since the last call from one iterator over the map
 * (a Map's iterator visits entries added after it was made, in insertion order), is told of
 * pruned ones (`forget`), and is rebuilt from the whole map every REBUILD_EVERY calls, so a
 * change it was not told of is caught up with.
 */
import type { Live } from '../session/kind.js';

/** Calls after which the ledger is rebuilt from the whole map. */
const REBUILD_EVERY = 4096;

interface Ledger {
  /** Over the registry's map, never run past its end (it would stay done). */
  entries: Iterator<Live>;
  /** Sessions taken from `entries` and still in the map. */
  taken: WeakSet<Live>;
  count: number;
  running: Set<Live>;
  /** Finished sessions whose tail still holds bytes, and the sum of those bytes. */
  finished: Set<Live>;
  finishedHeld: number;
  calls: number;
}

const ledgers = new WeakMap<Map<string, Live>, Ledger>();

function fresh(sessions: Map<string, Live>): Ledger {
  const ledger = { entries: sessions.values(), taken: new WeakSet<Live>(), count: 0, running: new Set<Live>(), finished: new Set<Live>(), finishedHeld: 0, calls: 0 };
  ledgers.set(sessions, ledger);
  return ledger;
}

/** Files a session as running, or as finished with what its tail holds (remembered: native tails answer through the addon). */
function file(ledger: Ledger, l: Live): void {
  if (l.record.status === 'running') {
    ledger.running.add(l);
    return;
  }
  l.heldAfterExit ??= l.tail.heldChars;
  if (l.heldAfterExit > 0 && !ledger.finished.has(l)) {
    ledger.finished.add(l);
    ledger.finishedHeld += l.heldAfterExit;
  }
}

/** The ledger of `sessions`, with the sessions added since the last call taken in. */
function ledgerOf(sessions: Map<string, Live>): Ledger {
  let ledger = ledgers.get(sessions);
  if (!ledger || ++ledger.calls >= REBUILD_EVERY || ledger.count > sessions.size) ledger = fresh(sessions);
  while (ledger.count < sessions.size) {
    const next = ledger.entries.next();
    // Counts that disagree with the map (a change nobody told of): start over.
    if (next.done) {
      fresh(sessions);
      return ledgerOf(sessions);
    }
    ledger.taken.add(next.value);
    ledger.count++;
    file(ledger, next.value);
  }
  return ledger;
}

/** Tells the budget that `live` is about to leave `sessions` (pruned). */
export function forget(sessions: Map<string, Live>, live: Live): void {
  const ledger = ledgers.get(sessions);
  if (!ledger?.taken.has(live)) return;
  ledger.taken.delete(live);
  ledger.count--;
  ledger.running.delete(live);
  if (ledger.finished.delete(live)) ledger.finishedHeld -= live.heldAfterExit ?? 0;
}

/** Shrinks the tails of `sessions` to fit `budget` bytes; `tailChars` is one session's cap. */
export function rebalance(sessions: Map<string, Live>, budget: number, tailChars: number): void {
  const ledger = ledgerOf(sessions);
  // Sessions that ended since the last call.
  for (const l of ledger.running) {
    if (l.record.status === 'running') continue;
    ledger.running.delete(l);
    file(ledger, l);
  }
  const running = ledger.running.size;
  const share = running ? Math.min(tailChars, Math.floor(budget / running)) : tailChars;
  for (const l of ledger.running) {
    if (l.tailLimit !== share) {
      l.tail.shrinkTo(share);
      l.tailLimit = share;
    }
  }
  // Running tails stay within `running × share ≤ budget`; count them only when finished
  // tails might not fit beside them.
  if (ledger.finished.size === 0 || running * share + ledger.finishedHeld <= budget) return;
  let total = ledger.finishedHeld;
  for (const l of ledger.running) total += l.tail.heldChars;
  const finished = [...ledger.finished].sort((a, b) => Number(b.kind.onDisk) - Number(a.kind.onDisk) || (a.record.exitedAt ?? 0) - (b.record.exitedAt ?? 0));
  for (const l of finished) {
    if (total <= budget) break;
    total -= l.heldAfterExit ?? 0;
    ledger.finishedHeld -= l.heldAfterExit ?? 0;
    ledger.finished.delete(l);
    l.tail.shrinkTo(0);
    l.heldAfterExit = 0;
  }
}
