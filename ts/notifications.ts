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
import isSafeRegex from 'safe-regex2';
import { plainText } from './output.js';
import type { SessionRecord } from './session.js';

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
  reason: string | null;
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

/** A registry-wide sliding-window rate limit. */
export class RateLimit {
  private stamps: number[] = [];
  constructor(private readonly perMinute: number) {}

  take(now = Date.now()): boolean {
    this.stamps = this.stamps.filter((t) => now - t < 60_000);
    if (this.stamps.length >= this.perMinute) return false;
    this.stamps.push(now);
    return true;
  }
}

/** Splits a session's output into whole lines and matches them against its patterns. */
export class LineWatcher {
  private partial = '';
  private lastAt = 0;
  private readonly regexes: [string, RegExp][];

  constructor(
    patterns: string[],
    private readonly limits: Required<WatchLimits>,
    private readonly rate: RateLimit,
  ) {
    this.regexes = patterns.map((p) => [p, new RegExp(p)]);
  }

  /**
   * Feeds output; returns the matches that passed the limits. `fired` is the session's
   * lifetime count so far. Lines are matched in their plain form (escape sequences removed,
   * a progress line's latest frame), at most the first 4096 characters of each.
   */
  feed(text: string, fired: number): { pattern: string; line: string; at: number }[] {
    const lines = (this.partial + text).split(/\r?\n/);
    this.partial = lines.pop() ?? '';
    if (this.partial.length > 64 * 1024) this.partial = this.partial.slice(-64 * 1024);
    return this.match(lines, fired);
  }

  /** Matches the last line if it never got its newline (call when the output ends). */
  flush(fired: number): { pattern: string; line: string; at: number }[] {
    const last = this.partial;
    this.partial = '';
    return last ? this.match([last], fired) : [];
  }

  private match(rawLines: string[], fired: number): { pattern: string; line: string; at: number }[] {
    const out: { pattern: string; line: string; at: number }[] = [];
    for (const raw of rawLines) {
      const line = plainText(raw).slice(0, 4096);
      const hit = this.regexes.find(([, re]) => re.test(line));
      if (!hit) continue;
      const now = Date.now();
      if (fired + out.length >= this.limits.maxPerSession || now - this.lastAt < this.limits.cooldownMs || !this.rate.take(now)) continue;
      this.lastAt = now;
      out.push({ pattern: hit[0], line, at: now });
    }
    return out;
  }
}

/**
 * Compiles watch patterns, throwing a readable error for an invalid one. Patterns come from
 * agents, so ones that can backtrack catastrophically (`^(a+)+$`, star height above one, as
 * judged by safe-regex2) are refused: one would freeze the host on a single line.
 */
export function checkPatterns(patterns: unknown): string[] {
  if (patterns === undefined) return [];
  if (!Array.isArray(patterns) || !patterns.every((p) => typeof p === 'string' && p.length > 0 && p.length <= 512)) {
    throw new TypeError('watchPatterns must be an array of non-empty strings of at most 512 characters');
  }
  for (const p of patterns) {
    new RegExp(p);
    if (!isSafeRegex(p)) throw new TypeError(`watch pattern ${JSON.stringify(p)} may backtrack catastrophically; simplify its nested quantifiers`);
  }
  return patterns;
}
