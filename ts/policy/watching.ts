/**
 * Watch patterns of a registry's sessions: one rate limit for all of them, watchers for
 * patterns read back from records (untrusted), and the events a session's output raised,
 * redacted and queued on its record.
 *
 * Each line raises its event once across hosts and recoveries: the record keeps
 * `watchCursor`, the byte offset in the session's output up to which every line was matched,
 * and it is checkpointed with the events queued so far (one record, one write), so a host
 * that recovers the session resumes matching there. An event drained by the host before
 * lies before the cursor and is not raised again; one still queued is recovered with the
 * record and not raised a second time. Queued events also carry their line's offset, and
 * a second event for a queued offset is dropped. Lines after the last checkpoint write are
 * matched again after a crash (their events were not written either): at least once.
 */
import type { SessionRecord } from '../session/record.js';
import type { RegistryOptions } from '../types.js';
import { LineWatcher, pendingWatchEvents, RateLimit, type WatchEvent, watcherForRecord } from './notifications.js';
import { isKeyMaterialLine, KEY_MASK } from './redact.js';

export class Watching {
  private readonly rate: RateLimit;

  constructor(
    private readonly options: RegistryOptions,
    private readonly diagnostics: string[],
    /** Redacts a line (the registry's redaction, off when the host turned it off). */
    private readonly clean: (text: string) => string,
  ) {
    this.rate = new RateLimit(options.watch?.maxPerMinute ?? 30);
  }

  /**
   * The session's watcher. Patterns read back from a record are untrusted (they did not
   * pass `spawn`): ones the core refuses (too many, too long, not linear-time) leave the
   * session unwatched, with one diagnostic.
   */
  watcherFor(record: SessionRecord): LineWatcher | undefined {
    if (!record.watchPatterns?.length || record.status === 'exited') return undefined;
    const w = this.options.watch ?? {};
    const limits = { cooldownMs: w.cooldownMs ?? 2000, maxPerSession: w.maxPerSession ?? 20, maxPerMinute: w.maxPerMinute ?? 30 };
    const watcher = watcherForRecord(record.watchPatterns, limits, this.rate, { matchedThrough: record.watchCursor ?? 0 });
    if (watcher instanceof LineWatcher) return watcher;
    if (watcher.fresh) this.diagnostics.push(`${record.id}: watch patterns ignored: ${watcher.refused}`);
    return undefined;
  }

  /**
   * Feeds output to a session's watcher (`null`: the output ended), moves the record's
   * `watchCursor` and queues what matched on the record, redacted. Returns the new events,
   * or `null` when nothing matched.
   */
  feed(r: SessionRecord, watcher: LineWatcher, text: string | null): WatchEvent[] | null {
    const raw = text === null ? watcher.flush(r.watchFired ?? 0) : watcher.feed(text, r.watchFired ?? 0);
    // Checkpointed with the record, by the save that writes the events below or by a later one.
    if (watcher.matchedThrough > (r.watchCursor ?? 0)) r.watchCursor = watcher.matchedThrough;
    const skipped = watcher.takeSkipped();
    if (skipped > 0) this.diagnostics.push(`${r.id}: ${skipped} output lines not matched against watch patterns: the matching budget (100 ms per second) was spent`);
    if (raw.length === 0) return null;
    const queued = new Set((r.watchEvents ?? []).map((e) => e.offset));
    const hits = raw.filter((h) => !queued.has(h.offset));
    if (hits.length === 0) return null;
    // A line of a private-key block (known from the lines fed before it), or one that looks
    // like key material on its own, is masked whole.
    const cleaned = hits.map(({ inKeyBlock, ...h }) => ({ ...h, line: this.options.redact !== false && (inKeyBlock === true || isKeyMaterialLine(h.line)) ? KEY_MASK : this.clean(h.line) }));
    r.watchEvents = [...(r.watchEvents ?? []), ...cleaned].slice(-50);
    r.watchFired = (r.watchFired ?? 0) + hits.length;
    r.updatedAt = Date.now();
    return pendingWatchEvents({ ...r, watchEvents: cleaned });
  }
}
