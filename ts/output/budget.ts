/**
 * The registry-wide output budget (`maxTotalOutputChars`): running sessions share it (each
 * gets at most its own cap), finished sessions whose output is also on disk give up their
 * tail first, then finished others, oldest first.
 */
import type { Live } from '../session/kind.js';

/** Shrinks the tails of `sessions` to fit `budget` bytes; `tailChars` is one session's cap. */
export function rebalance(sessions: Map<string, Live>, budget: number, tailChars: number): void {
  let running = 0;
  for (const l of sessions.values()) if (l.record.status === 'running') running++;
  const share = running ? Math.min(tailChars, Math.floor(budget / running)) : tailChars;
  // Native tails answer through a call into the addon, so limits and the sizes of
  // finished tails (which barely change) are remembered here.
  let finishedHeld = 0;
  const finished: Live[] = [];
  for (const l of sessions.values()) {
    if (l.record.status === 'running') {
      if (l.tailLimit !== share) {
        l.tail.shrinkTo(share);
        l.tailLimit = share;
      }
    } else {
      l.heldAfterExit ??= l.tail.heldChars;
      finishedHeld += l.heldAfterExit;
      if (l.heldAfterExit > 0) finished.push(l);
    }
  }
  // Running tails stay within `running × share ≤ budget`; count them only when finished
  // tails might not fit beside them.
  if (finished.length === 0 || running * share + finishedHeld <= budget) return;
  let total = finishedHeld;
  for (const l of sessions.values()) if (l.record.status === 'running') total += l.tail.heldChars;
  finished.sort((a, b) => Number(b.kind.onDisk) - Number(a.kind.onDisk) || (a.record.exitedAt ?? 0) - (b.record.exitedAt ?? 0));
  for (const l of finished) {
    if (total <= budget) break;
    total -= l.heldAfterExit ?? 0;
    l.tail.shrinkTo(0);
    l.heldAfterExit = 0;
  }
}
