/**
 * Notifications the model sees: every tool result carries the pending events (completions,
 * watch hits) of the call's scope under `notifications`, and taking them there delivers
 * them (`drainNotifications`: each event reaches one reader once, and is claimed in the
 * checkpoint so another host does not deliver it again). The events a result has no room
 * for stay queued for the next result; `notifications_pending` says how many. An event
 * larger than the whole room (a command of 200 000 characters, watch hits on long lines at
 * a small `max_chars`) is not left queued forever: the first event that does not fit whole
 * is delivered cut (its command, output, line, pattern and session key keep their head and
 * tail around a marker; `truncated` says how many characters each lost), so every call
 * delivers at least one pending event and each is delivered within a bounded number of
 * calls. The text is redacted whole by the registry before it gets here, so a cut never
 * shows part of a secret the whole text would have masked.
 */
import type { ProcwardEvent } from '../../policy/notifications.js';
import type { ProcessRegistry } from '../../registry.js';
import type { ToolScope } from './scope.js';

/** An event as the model reads it: snake_case keys. */
export interface ToolEvent {
  type: 'completion' | 'watch';
  session_id: string;
  session_key?: string;
  command: string;
  /** Completion: the exit code, signal name and reason; watch: the pattern and the line. */
  exit_code?: number | null;
  signal?: string | null;
  reason?: string | null;
  output?: string;
  pattern?: string;
  line?: string;
  /** Milliseconds since the epoch. */
  at: number;
  /** Present when the event was cut to fit: characters left out of each field it cut (`command`, `output`, `line`, ...). */
  truncated?: Record<string, number>;
}

function toolEvent(e: ProcwardEvent): ToolEvent {
  const base = { type: e.type, session_id: e.sessionId, ...(e.sessionKey !== undefined && { session_key: e.sessionKey }), command: e.command };
  if (e.type === 'completion') return { ...base, exit_code: e.exitCode, signal: e.signal, reason: e.reason, output: e.output, at: e.at };
  return { ...base, pattern: e.pattern, line: e.line, at: e.at };
}

/** The key of one event: the drain asks its predicate more than once about a completion. */
function eventKey(e: ProcwardEvent): string {
  return e.type === 'completion' ? `c:${e.sessionId}` : `w:${e.sessionId}:${e.at}:${e.pattern}:${e.line}`;
}

/** Fields of an event that may be cut to make it fit, longest kept last: the identifying ones never are. */
const CUTTABLE = ['command', 'output', 'line', 'pattern', 'session_key'] as const;
/** The least room worth delivering a cut event in, when events were taken whole before it. */
const MIN_CUT_ROOM = 600;

/** Position `at`, moved back off the second half of a surrogate pair. */
function whole(text: string, at: number): number {
  const c = text.charCodeAt(at);
  return at > 0 && at < text.length && c >= 0xdc00 && c <= 0xdfff ? at - 1 : at;
}

/** `text` cut to `keep` characters of its own: its head and tail around a marker saying how many went. */
function cutMiddle(text: string, keep: number): { text: string; cut: number } {
  const headEnd = whole(text, Math.ceil(keep / 2));
  const tailStart = whole(text, Math.max(headEnd, text.length - Math.floor(keep / 2)));
  const cut = tailStart - headEnd;
  return { text: `${text.slice(0, headEnd)}[… ${cut} characters cut]${text.slice(tailStart)}`, cut };
}

/** Characters of an event as a result carries it: its JSON and a separator. */
const eventSize = (e: ToolEvent) => JSON.stringify(e).length + 1;

/**
 * `event` whose JSON (plus a separator) fits `room` characters, its long fields cut
 * (see {@link cutMiddle}); `null` when even empty fields would not fit. JSON escapes
 * (a control character becomes six characters) are measured, not guessed.
 */
export function fitEvent(event: ToolEvent, room: number): ToolEvent | null {
  if (eventSize(event) <= room) return event;
  const fields = CUTTABLE.filter((k) => (event[k] ?? '').length > 0);
  const emptied: ToolEvent = { ...event, truncated: {} };
  for (const k of fields) {
    emptied[k] = '';
    (emptied.truncated as Record<string, number>)[k] = (event[k] as string).length;
  }
  // Shortest fields first: what a short field leaves unused goes to the longer ones.
  const order = [...fields].sort((a, b) => (event[a] as string).length - (event[b] as string).length);
  /** The event with `avail` characters of its own shared among the cut fields. */
  const build = (avail: number): ToolEvent => {
    const cut: ToolEvent = { ...event, truncated: {} };
    let left = avail;
    for (const [i, k] of order.entries()) {
      const text = event[k] as string;
      const share = Math.floor(left / (order.length - i));
      const kept = text.length <= share ? { text, cut: 0 } : cutMiddle(text, share);
      left -= Math.min(text.length, share);
      cut[k] = kept.text;
      if (kept.cut > 0) (cut.truncated as Record<string, number>)[k] = kept.cut;
    }
    return cut;
  };
  // The most text that fits, by bisection: escapes make the JSON's size grow unevenly.
  let lo = 0;
  let hi = Math.max(0, room - eventSize(emptied));
  if (eventSize(build(0)) > room) return null;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (eventSize(build(mid)) <= room) lo = mid;
    else hi = mid - 1;
  }
  return build(lo);
}

/**
 * Takes the scope's pending events whose JSON fits `maxChars` together (oldest sessions
 * first, as the registry holds them), leaving the rest queued. The first event that does
 * not fit whole is taken cut ({@link fitEvent}) when it is the first of the call or the
 * room left is at least {@link MIN_CUT_ROOM}; the events after it wait. Returns them by
 * time, and how many of the scope's events stay queued for lack of room.
 */
export async function takeNotifications(registry: ProcessRegistry, scope: ToolScope, maxChars: number): Promise<{ events: ToolEvent[]; pending: number }> {
  let used = 0;
  let full = false;
  const decided = new Map<string, ToolEvent | null>();
  let pending = 0;
  const events = await registry.drainNotifications({
    ownsEvent: (e) => {
      const key = eventKey(e);
      const known = decided.get(key);
      if (known !== undefined) return known !== null;
      let taken: ToolEvent | null = null;
      if (scope.owns(e)) {
        const room = maxChars - used;
        const whole = toolEvent(e);
        if (!full && eventSize(whole) <= room) taken = whole;
        else if (!full && (used === 0 || room >= MIN_CUT_ROOM)) taken = fitEvent(whole, room);
        if (taken) used += eventSize(taken);
        else pending++;
        // Once one event did not fit whole, the later ones wait: each call delivers in order.
        if (taken !== whole) full = true;
      }
      decided.set(key, taken);
      return taken !== null;
    },
  });
  return { events: events.map((e) => decided.get(eventKey(e)) ?? toolEvent(e)), pending };
}
