/**
 * The registry-wide output budget (`maxTotalOutputChars`, bytes of UTF-8 text): running
 * sessions share it (each gets at most its own cap, `maxOutputChars`), finished sessions
 * whose output is also on disk give up their tail first, then finished others, in the
 * order they ended.
 *
 * A rebalance runs on every spawn and every end, so it costs O(1) amortised, not the
 * registry's size nor the running sessions (issue 14: walking 10 000 finished sessions twice
 * per spawn was a tenth of a spawn; resizing every running tail on every end made a burst of
 * N ends cost N² native calls, 34 s of exit-notice delay at 2000 jobs).
 *
 * - All running tails share one limit. It follows the share `budget / running` with
 *   hysteresis: it is reset to share/√2 (or the cap, when the share is above the cap) only
 *   when the share falls below it or rises to twice it, so between two resets of every
 *   running tail the number of running sessions changes by a factor of about √2 at least. A
 *   running tail keeps between half and all of its share (√2/2 right after a reset), never
 *   more, so running tails never hold more than
 *   `budget` together (each may hold one more read chunk, 64 KiB at most, until its reader
 *   next appends: the native tail trims on append).
 * - Finished tails are counted as they end (what the tail held then). They give way only
 *   when they might not fit beside the running tails; what the running tails hold is then
 *   read (one native call per running session) at most once per event-loop turn, and that
 *   reading is lowered as sessions end or tails shrink in the same turn. Slack: the output
 *   running tails took in within that turn.
 * - A ledger per registry map keeps the running sessions and the finished ones that hold
 *   bytes; it takes sessions added since the last call from one iterator over the map (a
 *   Map's iterator visits entries added after it was made, in insertion order), is told of
 *   ends (`changed`) and of pruned sessions (`forget`), and is rebuilt from the whole map
 *   every REBUILD_EVERY calls, so a change it was not told of is caught up with.
 */
import type { Live } from '../session/kind.js';

/** Calls after which the ledger is rebuilt from the whole map. */
const REBUILD_EVERY = 4096;

/** The running tails' limit is reset when the share leaves [limit, GROWTH × limit). */
const GROWTH = 2;

interface Ledger {
  /** Over the registry's map, never run past its end (it would stay done). */
  entries: Iterator<Live>;
  /** Sessions taken from `entries` and still in the map. */
  taken: WeakSet<Live>;
  count: number;
  running: Set<Live>;
  /** The share the running tails' limit was last set from (bytes, not capped by `maxOutputChars`). */
  level: number;
  /** The limit every running tail has (bytes); NaN until first set. */
  limit: number;
  /** Finished sessions whose tail holds bytes, in the order they were filed: those whose output is on disk, and the others. */
  onDisk: Set<Live>;
  inMemory: Set<Live>;
  /** Bytes the finished tails in `onDisk` and `inMemory` hold. */
  finishedHeld: number;
  /** Bytes the running tails held when last read in this event-loop turn (undefined: not read in this turn). */
  runningHeld: number | undefined;
  calls: number;
}

const ledgers = new WeakMap<Map<string, Live>, Ledger>();

/** Counters for tests and benchmarks: native tail resizes and reads of what running tails hold. */
export const budgetCounters = { resizes: 0, runningReads: 0 };

function fresh(sessions: Map<string, Live>): Ledger {
  const ledger: Ledger = {
    entries: sessions.values(),
    taken: new WeakSet<Live>(),
    count: 0,
    running: new Set<Live>(),
    level: Number.NaN,
    limit: Number.NaN,
    onDisk: new Set<Live>(),
    inMemory: new Set<Live>(),
    finishedHeld: 0,
    runningHeld: undefined,
    calls: 0,
  };
  ledgers.set(sessions, ledger);
  return ledger;
}

function resize(l: Live, limit: number): void {
  if (l.tailLimit === limit) return;
  l.tail.shrinkTo(limit);
  l.tailLimit = limit;
  budgetCounters.resizes++;
}

/** Files a session as running, or as finished with what its tail holds (remembered: native tails answer through the addon). */
function file(ledger: Ledger, l: Live): void {
  if (l.record.status === 'running') {
    ledger.running.add(l);
    if (!Number.isNaN(ledger.limit)) resize(l, ledger.limit);
    return;
  }
  l.heldAfterExit ??= l.tail.heldChars;
  const finished = l.kind.onDisk ? ledger.onDisk : ledger.inMemory;
  if (l.heldAfterExit > 0 && !finished.has(l)) {
    finished.add(l);
    ledger.finishedHeld += l.heldAfterExit;
  }
}

/** Moves a session that ended from the running ones to the finished ones. */
function settle(ledger: Ledger, l: Live): void {
  if (l.record.status === 'running' || !ledger.running.delete(l)) return;
  file(ledger, l);
  // Its bytes now count as finished: a reading of the running tails in this turn no longer holds them.
  if (ledger.runningHeld !== undefined) ledger.runningHeld = Math.max(0, ledger.runningHeld - (l.heldAfterExit ?? 0));
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
  if (ledger.onDisk.delete(live) || ledger.inMemory.delete(live)) ledger.finishedHeld -= live.heldAfterExit ?? 0;
}

/** Sets the running tails' limit from the share, when the share left the hysteresis band. */
function share(ledger: Ledger, budget: number, tailChars: number): void {
  const running = ledger.running.size;
  const fair = running ? budget / running : Number.POSITIVE_INFINITY;
  if (fair < ledger.level || fair >= GROWTH * ledger.level || Number.isNaN(ledger.level)) {
    // Halfway (geometrically) inside the band; a share above the cap keeps the cap.
    ledger.level = fair >= tailChars ? Math.max(fair / Math.SQRT2, tailChars) : fair / Math.SQRT2;
  }
  const limit = Math.floor(Math.min(tailChars, ledger.level));
  if (limit === ledger.limit) return;
  const shrinks = !(limit > ledger.limit);
  ledger.limit = limit;
  for (const l of ledger.running) resize(l, limit);
  if (shrinks && ledger.runningHeld !== undefined) ledger.runningHeld = Math.min(ledger.runningHeld, running * limit);
}

/** What the running tails hold, read at most once per event-loop turn. */
function runningHeld(ledger: Ledger): number {
  if (ledger.runningHeld === undefined) {
    let held = 0;
    for (const l of ledger.running) held += l.tail.heldChars;
    budgetCounters.runningReads++;
    ledger.runningHeld = held;
    setImmediate(() => {
      ledger.runningHeld = undefined;
    }).unref();
  }
  return ledger.runningHeld;
}

/** Drops finished tails, on-disk ones first, each set in the order it was filed, until `total` fits `budget`. */
function evict(ledger: Ledger, budget: number): void {
  let total = runningHeld(ledger) + ledger.finishedHeld;
  for (const finished of [ledger.onDisk, ledger.inMemory]) {
    for (const l of finished) {
      if (total <= budget) return;
      total -= l.heldAfterExit ?? 0;
      ledger.finishedHeld -= l.heldAfterExit ?? 0;
      finished.delete(l);
      l.tail.shrinkTo(0);
      l.heldAfterExit = 0;
    }
  }
}

/**
 * Keeps the tails of `sessions` within `budget` bytes (see the module's notes for the
 * slack); `tailChars` is one session's cap. `changed`: the session that just started or
 * ended (without it, every running session is checked for an end: O(running)).
 */
export function rebalance(sessions: Map<string, Live>, budget: number, tailChars: number, changed?: Live): void {
  const ledger = ledgerOf(sessions);
  if (changed) settle(ledger, changed);
  else for (const l of ledger.running) settle(ledger, l);
  share(ledger, budget, tailChars);
  // Running tails stay within `running × limit ≤ budget`; read them only when finished
  // tails might not fit beside them.
  if (ledger.finishedHeld === 0 || ledger.running.size * ledger.limit + ledger.finishedHeld <= budget) return;
  evict(ledger, budget);
}
