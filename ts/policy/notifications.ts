/**
 * Notifications: completion events and watch-pattern events.
 *
 * Both live in the session record, so they are checkpointed and survive a host restart
 * until drained: a completion is pending while `notifyOnComplete` is set, the session has
 * ended and `notificationDelivered` is false; watch events wait in `watchEvents`.
 *
 * Watch patterns match whole lines (a line split across output chunks is reassembled),
 * with a per-session cooldown, a per-session lifetime cap and a registry-wide rate limit,
 * so a chatty process cannot flood the agent.
 */
import { fromNative, ProcwardError } from '../errors.js';
import { native, type WatchMatcher } from '../native.js';
import { plainText } from '../output/views.js';
import { KeyBlockTracker } from './redact/keyblock.js';
import type { CompletionReason, SessionRecord } from '../session/record.js';

/** Characters of output carried by a completion event. */
export const COMPLETION_TAIL_CHARS = 2000;

/** A session ended (queued once per session when `notifyOnComplete` is set). */
export interface CompletionEvent {
  type: 'completion';
  sessionId: string;
  sessionKey?: string;
  command: string;
  exitCode: number | null;
  signal: string | null;
  reason: CompletionReason | null;
  /** The last 2000 characters of output, plain and redacted. */
  output: string;
  /** Milliseconds since the epoch. */
  at: number;
}

/** A whole output line matched one of the session's watch patterns. */
export interface WatchEvent {
  type: 'watch';
  sessionId: string;
  sessionKey?: string;
  command: string;
  pattern: string;
  /** The matching line, plain and redacted. */
  line: string;
  at: number;
}

export type ProcwardEvent = CompletionEvent | WatchEvent;

/** Limits of watch-pattern events. */
export interface WatchLimits {
  /** Milliseconds between two events of one session. Default 2000. */
  cooldownMs?: number;
  /** Events one session may ever raise. Default 20. */
  maxPerSession?: number;
  /** Events all sessions together may raise per minute. Default 30. */
  maxPerMinute?: number;
}

/** The pending completion event of a record, if any. */
export function pendingCompletion(r: SessionRecord): CompletionEvent | null {
  if (!r.notifyOnComplete || r.status !== 'exited' || r.notificationDelivered) return null;
  return {
    type: 'completion',
    sessionId: r.id,
    ...(r.sessionKey !== undefined && { sessionKey: r.sessionKey }),
    command: r.command,
    exitCode: r.exitCode,
    signal: r.signal,
    reason: r.reason,
    output: r.completionTail ?? '',
    at: r.exitedAt ?? r.updatedAt,
  };
}

/** The pending watch events of a record. */
export function pendingWatchEvents(r: SessionRecord): WatchEvent[] {
  return (r.watchEvents ?? []).map((e) => ({
    type: 'watch',
    sessionId: r.id,
    ...(r.sessionKey !== undefined && { sessionKey: r.sessionKey }),
    command: r.command,
    pattern: e.pattern,
    line: e.line,
    at: e.at,
  }));
}

/** Whether the caller owns `event`: its predicate (a throw means no: fail closed), else session key equality. */
export function owns(event: ProcwardEvent, opts: { sessionKey?: string; ownsEvent?: (e: ProcwardEvent) => boolean }): boolean {
  if (opts.ownsEvent) {
    try {
      return opts.ownsEvent(event) === true;
    } catch {
      return false;
    }
  }
  return opts.sessionKey === undefined || event.sessionKey === opts.sessionKey;
}

/**
 * Removes from `r` the pending events the caller owns and returns them (the completion is
 * marked delivered, and returned only if `claim` says this host is the one delivering it;
 * owned watch events leave the queue). Bumps `updatedAt` when it took any.
 */
export function takeOwned(
  r: SessionRecord,
  opts: { sessionKey?: string; ownsEvent?: (e: ProcwardEvent) => boolean },
  claim: (completion: CompletionEvent) => boolean = () => true,
): ProcwardEvent[] {
  const out: ProcwardEvent[] = [];
  const watch = pendingWatchEvents(r);
  const owned = watch.map((e) => owns(e, opts));
  out.push(...watch.filter((_, i) => owned[i]));
  if (owned.includes(true)) r.watchEvents = (r.watchEvents ?? []).filter((_, i) => !owned[i]);
  const completion = pendingCompletion(r);
  if (completion && owns(completion, opts)) {
    if (claim(completion)) out.push(completion);
    r.notificationDelivered = true;
  }
  if (out.length > 0 || r.notificationDelivered) r.updatedAt = Date.now();
  return out;
}

/**
 * A registry-wide sliding-window rate limit: at most `perMinute` takes in any 60 s. The
 * stamps of the window sit in a ring (oldest at `head`), dropped from the front as they
 * age, so a take costs O(1) amortised whatever the limit (a host that raises it to tens of
 * thousands does not make every watch hit scan them all). Stamps are taken in order; a
 * clock that steps back only keeps older stamps a little longer.
 */
export class RateLimit {
  /** Filled as slots are first used: a high limit costs nothing until it is reached. */
  private readonly ring: number[] = [];
  private head = 0;
  private count = 0;
  constructor(private readonly perMinute: number) {}

  take(now = Date.now()): boolean {
    const size = Math.max(0, Math.floor(this.perMinute));
    while (this.count > 0 && now - (this.ring[this.head] as number) >= 60_000) {
      this.head = (this.head + 1) % size;
      this.count--;
    }
    if (this.count >= size) return false;
    this.ring[(this.head + this.count) % size] = now;
    this.count++;
    return true;
  }
}

/** Patterns a session may have (from the core: `procward_core::patterns`). */
export const MAX_WATCH_PATTERNS: number = native.MAX_WATCH_PATTERNS;
/** Characters a watch pattern may have. */
export const MAX_WATCH_PATTERN_CHARS: number = native.MAX_WATCH_PATTERN_CHARS;
/**
 * Characters at the start of a line that are kept for matching; the core then matches at
 * most `MAX_WATCH_LINE_BYTES` (64 KiB) of their UTF-8 form. A UTF-16 unit is never less
 * than one UTF-8 byte, so this cut never hides a byte the core would have matched.
 */
const LINE_CHARS: number = native.MAX_WATCH_LINE_BYTES;
/** Characters of the matching line carried by a watch event. */
const EVENT_LINE_CHARS = 4096;

/**
 * Milliseconds per second of the event loop that watch matching may take, for all sessions
 * of this process together (one event loop): a flood of output cannot hold the loop longer
 * than this plus one line (whose cost the core bounds to about 0.1 s). Lines past the
 * budget are not matched.
 */
const MATCH_MS_PER_SECOND = 100;

/** The event loop's matching budget, refilled each second. */
class MatchBudget {
  private windowStart = 0;
  private spent = 0;

  remaining(now: number): number {
    if (now - this.windowStart >= 1000) {
      this.windowStart = now;
      this.spent = 0;
    }
    return Math.max(0, MATCH_MS_PER_SECOND - this.spent);
  }

  spend(ms: number): void {
    this.spent += ms;
  }
}

const loopBudget = new MatchBudget();

/** Matchers compiled by {@link checkPatterns}, by the array it returned (spawn then needs no second compile). */
const compiled = new WeakMap<readonly string[], WatchMatcher>();

/**
 * Where a session's watcher stands in its output, in bytes of UTF-8 from the output's start
 * (a durable job's log offset, counting rotated parts).
 */
export interface WatchCursor {
  /** Offset of the next byte the feeder hands over. Default 0 (it starts at the output's start). */
  position?: number;
  /**
   * Lines that start before this offset were matched by an earlier host (the record's
   * `watchCursor`): they are not matched again, so a recovered session does not raise their
   * events twice. Default 0.
   */
  matchedThrough?: number;
}

/** A match that passed the limits: the line's pattern, plain text, time and byte offset. */
export interface WatchHit {
  pattern: string;
  line: string;
  at: number;
  /** Byte offset of the line's start in the session's output (see {@link WatchCursor}). */
  offset: number;
  /** The line is part of a private-key block (its BEGIN or END line, or between), read with the lines before it. */
  inKeyBlock?: boolean;
}

/** Splits a session's output into whole lines and matches them against its patterns. */
export class LineWatcher {
  /** The head of the line not yet ended, at most `LINE_CHARS` characters. */
  private partial = '';
  /** Key-block state over every line fed (matched or not), so a hit knows its context. */
  private readonly keys = new KeyBlockTracker();
  private lastAt = 0;
  private readonly matcher: WatchMatcher;
  /** Lines left unmatched because the loop's budget was spent; see {@link takeSkipped}. */
  private skipped = 0;
  private skipReported = false;
  /** Byte offset of the next byte fed. */
  private position: number;
  /** Byte offset where the line not yet ended starts. */
  private lineStart: number;
  private through: number;
  /** After `resume`: the text fed is passed over up to its first line break. */
  private seekingLine = false;
  /** The `matchedThrough` recovered from the record: lines that start before it are not matched. */
  private readonly floor: number;

  /** Throws `INVALID_ARGUMENT` for patterns {@link checkPatterns} refuses. */
  constructor(
    private readonly patterns: string[],
    private readonly limits: Required<WatchLimits>,
    private readonly rate: RateLimit,
    cursor: WatchCursor = {},
  ) {
    this.matcher = compiled.get(patterns) ?? compile(patterns);
    this.position = cursor.position ?? 0;
    this.lineStart = this.position;
    this.through = cursor.matchedThrough ?? 0;
    this.floor = this.through;
  }

  /**
   * Byte offset up to which every line was matched (or passed over: a limit, the budget):
   * the end of the last whole line fed, or of the last line when the output ended. Never
   * less than the `matchedThrough` it started with. Persisted as the record's `watchCursor`.
   */
  get matchedThrough(): number {
    return this.through;
  }

  /**
   * For a feeder that can start anywhere (a durable job's log): returns where feeding must
   * start, one byte before the first line not matched yet. The text fed is passed over up to
   * its first line break (the byte at that offset, when the cursor is exact), so a cursor
   * that is not at a line start never has a line's tail matched as a line: the first host
   * counts the bytes of decoded text, and an invalid UTF-8 byte became a 3-byte U+FFFD there.
   */
  resume(): number {
    this.partial = '';
    this.seekingLine = this.through > 0;
    this.position = Math.max(0, this.through - 1);
    this.lineStart = this.position;
    return this.position;
  }

  /** Lines skipped so far, the first time any were (then 0: a caller reports it once). */
  takeSkipped(): number {
    if (this.skipReported || this.skipped === 0) return 0;
    this.skipReported = true;
    return this.skipped;
  }

  /**
   * Feeds output; returns the matches that passed the limits. `fired` is the session's
   * lifetime count so far. Lines are matched in their plain form (escape sequences removed,
   * a progress line's latest frame), on the head of each (64 KiB, less for sets with many
   * automaton states: see `procward_core::patterns`): the rest of a longer line is dropped
   * as it arrives, so a line without end costs memory and time only for its head. Lines
   * that arrive while this process's matching budget (100 ms per second) is spent are not
   * matched (see {@link takeSkipped}), nor lines before the cursor's `matchedThrough`.
   */
  feed(text: string, fired: number): WatchHit[] {
    if (this.seekingLine) {
      const nl = text.indexOf('\n');
      const passed = nl < 0 ? text : text.slice(0, nl + 1);
      this.position += Buffer.byteLength(passed);
      this.lineStart = this.position;
      if (nl < 0) return [];
      this.seekingLine = false;
      text = text.slice(nl + 1);
    }
    const pieces = text.split('\n');
    const rest = pieces.pop() ?? '';
    const lines = pieces.map((p, i) => (i === 0 ? this.extend(p) : p.slice(0, LINE_CHARS)));
    // Each line's start offset: the first continues the partial line.
    const starts: number[] = [];
    let at = this.position;
    for (const [i, p] of pieces.entries()) {
      starts.push(i === 0 ? this.lineStart : at);
      at += Buffer.byteLength(p) + 1;
    }
    if (lines.length > 0) {
      this.partial = '';
      this.lineStart = at;
      this.through = Math.max(this.through, at);
    }
    this.position = at + Buffer.byteLength(rest);
    this.partial = this.extend(rest);
    return this.match(lines, starts, fired);
  }

  /** Matches the last line if it never got its newline (call when the output ends). */
  flush(fired: number): WatchHit[] {
    const last = this.partial;
    const start = this.lineStart;
    this.partial = '';
    this.lineStart = this.position;
    this.through = Math.max(this.through, this.position);
    return last ? this.match([last], [start], fired) : [];
  }

  /** The partial line with `piece` appended, cut to `LINE_CHARS` (a full head ignores more). */
  private extend(piece: string): string {
    const room = LINE_CHARS - this.partial.length;
    return room > 0 ? this.partial + piece.slice(0, room) : this.partial;
  }

  private match(allLines: string[], allStarts: number[], fired: number): WatchHit[] {
    // Every line fed moves the key-block state, whether it is matched or not.
    const allInKey = this.keys.linesInside(allLines);
    // Lines an earlier host matched already (they start before the recovered cursor).
    const first = allStarts.findIndex((s) => s >= this.floor);
    const inKey = first < 0 ? [] : allInKey.slice(first);
    const rawLines = first < 0 ? [] : allLines.slice(first);
    const starts = first < 0 ? [] : allStarts.slice(first);
    // A session that used up its lifetime cap can raise nothing more: no line is matched.
    if (rawLines.length === 0 || fired >= this.limits.maxPerSession) return [];
    const started = performance.now();
    const budget = loopBudget.remaining(started);
    if (budget <= 0) {
      this.skipped += rawLines.length;
      return [];
    }
    const lines = rawLines.map(plainText);
    const hits = this.matcher.matchLines(lines, budget);
    loopBudget.spend(performance.now() - started);
    const out: WatchHit[] = [];
    for (const [i, hit] of hits.entries()) {
      if (hit === -2) this.skipped++;
      if (hit < 0) continue;
      const now = Date.now();
      if (fired + out.length >= this.limits.maxPerSession || now - this.lastAt < this.limits.cooldownMs || !this.rate.take(now)) continue;
      this.lastAt = now;
      out.push({ pattern: this.patterns[hit] as string, line: (lines[i] as string).slice(0, EVENT_LINE_CHARS), at: now, offset: starts[i] as number, inKeyBlock: inKey[i] === true });
    }
    return out;
  }
}

/** Compiles patterns in the core; its `EINVAL` becomes `INVALID_ARGUMENT`. */
function compile(patterns: string[]): WatchMatcher {
  try {
    return new native.WatchMatcher(patterns);
  } catch (err) {
    throw new ProcwardError('INVALID_ARGUMENT', fromNative(err).message.replace(/^invalid input: /, ''));
  }
}

/**
 * Checks watch patterns, throwing `INVALID_ARGUMENT` with a readable reason. Patterns come
 * from agents, and JavaScript's backtracking `RegExp` can take exponential time on one
 * short line, so they are compiled and matched by the Rust `regex` crate, in time linear in
 * the line: at most {@link MAX_WATCH_PATTERNS} non-empty patterns of at most
 * {@link MAX_WATCH_PATTERN_CHARS} characters, in that crate's syntax (no look-around, no
 * backreferences), compiling to at most 1 MiB and 16 384 automaton states. Returns a copy.
 */
export function checkPatterns(patterns: unknown): string[] {
  if (patterns === undefined) return [];
  // A copy: the caller's array may change after the check.
  const list = [...checkShape(patterns)];
  compiled.set(list, compile(list));
  return list;
}

/** An array of at most `MAX_WATCH_PATTERNS` strings, counted before anything is converted (a record may hold any number). */
function checkShape(patterns: unknown): string[] {
  if (!Array.isArray(patterns)) throw new ProcwardError('INVALID_ARGUMENT', 'watchPatterns must be an array of strings');
  if (patterns.length > MAX_WATCH_PATTERNS) {
    throw new ProcwardError('INVALID_ARGUMENT', `${patterns.length} watch patterns given, at most ${MAX_WATCH_PATTERNS} per session`);
  }
  if (!patterns.every((p) => typeof p === 'string')) throw new ProcwardError('INVALID_ARGUMENT', 'watchPatterns must be an array of strings');
  return patterns;
}

/** Why a record's patterns were refused, kept per array so a refresh does not compile them again. */
const refused = new WeakMap<readonly string[], string>();

/**
 * A watcher for patterns read back from a record (untrusted: they never went through
 * `spawn`), at `cursor` (see {@link WatchCursor}), or why there is none. `fresh` is true the first time an array is refused, so the
 * caller reports it once.
 */
export function watcherForRecord(
  patterns: string[],
  limits: Required<WatchLimits>,
  rate: RateLimit,
  cursor: WatchCursor = {},
): LineWatcher | { refused: string; fresh: boolean } {
  const known = refused.get(patterns);
  if (known !== undefined) return { refused: known, fresh: false };
  try {
    return new LineWatcher(checkShape(patterns), limits, rate, cursor);
  } catch (err) {
    const reason = (err as Error).message;
    refused.set(patterns, reason);
    return { refused: reason, fresh: true };
  }
}
