/**
 * What records read from the state directory may carry out of it. An older version stored
 * commands, completion tails and watch-event lines unredacted, and anyone who can write the
 * directory can put a secret in any field; so every record read from disk is redacted on
 * its way in, once per read, before any surface (list, poll, wait, events, CLI) shows it.
 * The same text is redacted once: results are cached by the text itself.
 *
 * Labels (`taskId`, `ownerTaskId`, `sessionKey`) stay as read: scoping matches them, so
 * they are redacted where they are shown (see `session/live.ts`'s `summary`).
 */
import { redact, redactCommand } from '../policy/redact.js';
import type { SessionRecord } from '../session/record.js';

/** Texts kept in each cache before it starts over (a few MB at most). */
const CACHE_ENTRIES = 4096;

/** A bounded memo of one redaction function: cleared when full, never grows past its cap. */
function memo(fn: (text: string) => string): (text: string) => string {
  const cache = new Map<string, string>();
  return (text) => {
    const hit = cache.get(text);
    if (hit !== undefined) return hit;
    const out = fn(text);
    if (cache.size >= CACHE_ENTRIES) cache.clear();
    cache.set(text, out);
    return out;
  };
}

const command = memo(redactCommand);
/** Output text (a completion tail, a watched line), redacted as output is. */
export const redactStoredText = memo((t) => redact(t));
const text = redactStoredText;

/** Redacts, in place, the fields of a record read from disk that are shown as text; returns it. */
export function redactStored<R extends SessionRecord>(record: R): R {
  record.command = command(record.command);
  if (record.completionTail !== undefined) record.completionTail = text(record.completionTail);
  if (record.watchEvents) record.watchEvents = record.watchEvents.map((e) => ({ ...e, line: text(e.line) }));
  return record;
}

/** Most diagnostics one read adds; the rest are counted in one last line. */
export const MAX_READ_DIAGNOSTICS = 100;

/**
 * Appends `items` to `target` one by one (never spread into a call: 200 000 of them would
 * overflow the stack), at most `max`, then one line saying how many more there were.
 */
export function appendDiagnostics(target: string[], items: readonly string[], max = MAX_READ_DIAGNOSTICS): void {
  const n = Math.min(items.length, max);
  for (let i = 0; i < n; i++) target.push(items[i] as string);
  if (items.length > n) target.push(`… and ${items.length - n} more diagnostics like these`);
}
