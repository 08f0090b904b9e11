/**
 * Notifications the model sees: every tool result carries the pending events (completions,
 * watch hits) of the call's scope under `notifications`, and taking them there delivers
 * them (`drainNotifications`: each event reaches one reader once, and is claimed in the
 * checkpoint so another host does not deliver it again). The events a result has no room
 * for stay queued for the next result; `notifications_pending` says how many.
 */
import type { ProcwardEvent } from '../policy/notifications.js';
import type { ProcessRegistry } from '../registry.js';
import type { ToolScope } from './toolscope.js';

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

/**
 * Takes the scope's pending events whose JSON fits `maxChars` together (oldest sessions
 * first, as the registry holds them), leaving the rest queued. Returns them by time, and
 * how many of the scope's events stay queued for lack of room.
 */
export async function takeNotifications(registry: ProcessRegistry, scope: ToolScope, maxChars: number): Promise<{ events: ToolEvent[]; pending: number }> {
  let used = 0;
  const decided = new Map<string, boolean>();
  let pending = 0;
  const events = await registry.drainNotifications({
    ownsEvent: (e) => {
      const key = eventKey(e);
      const known = decided.get(key);
      if (known !== undefined) return known;
      let take = scope.owns(e);
      if (take) {
        const size = JSON.stringify(toolEvent(e)).length + 1;
        take = used + size <= maxChars;
        if (take) used += size;
        else pending++;
      }
      decided.set(key, take);
      return take;
    },
  });
  return { events: events.map(toolEvent), pending };
}
