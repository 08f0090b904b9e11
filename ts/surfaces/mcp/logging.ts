/**
 * MCP logging: job events go out as `notifications/message` (logger `procward`), at or above
 * the level the client set with `logging/setLevel` (`info` until it sets one, so a client
 * that never asks gets no debug chatter).
 *
 * - A completion event (a job started with `notify_on_complete` ended): level `info` when it
 *   exited with code 0, else `warning`; `data` is the event in snake_case (session_id,
 *   command, exit_code, signal, reason, output: its last 2000 characters, redacted).
 * - A watch hit (an output line matched one of the job's `watch_patterns`): level `notice`,
 *   `data` with session_id, pattern and the line (redacted, cut to 2000 characters).
 *   Commands and lines have their control characters escaped (`text.ts`). At most
 *   {@link WATCH_MESSAGES_PER_SECOND} hits a second go out one by one; the ones past that are
 *   folded into one `watch_folded` message at the second's end (level `notice`: `folded`, the
 *   count, and `sessions`, hits per session for the first 20 sessions), so a host that raised
 *   the watch limits cannot flood the client (30 000 hits were 30 000 messages, 7.6 MB).
 * - At `debug`: each tool call's end (`call_end`: tool, action, whether the client
 *   cancelled it), so a client can see that a cancelled wait stopped on the server.
 *
 * Only events of sessions the server's context may see are sent (`scope.ts`). Sending one
 * does not deliver it to the model: it stays pending until a tool result or the
 * `notifications` action delivers it (a log message reaches the client, which may never
 * show it to the model).
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { type LoggingLevel, LoggingLevelSchema, SetLevelRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CompletionEvent, WatchEvent } from '../../policy/notifications.js';
import type { ProcessRegistry } from '../../registry.js';
import type { ToolContext } from '../tool/handler.js';
import { visibleSession } from './scope.js';
import { oneLine } from './text.js';

/** The level a client gets until it sets one. */
export const DEFAULT_LOG_LEVEL: LoggingLevel = 'info';
const LINE_CHARS = 2000;
const LEVELS = LoggingLevelSchema.options;
const cut = (text: string) => oneLine(text, LINE_CHARS);

/** The server's log: `send` filters by the client's level. */
export interface McpLog {
  send(level: LoggingLevel, data: Record<string, unknown>): void;
  close(): void;
}

/**
 * Takes over `logging/setLevel` on `server` (which must declare the `logging` capability)
 * and forwards the registry's completion and watch events the context may see.
 */
export function serveLogging(server: Server, registry: ProcessRegistry, context: ToolContext): McpLog {
  let level: LoggingLevel = DEFAULT_LOG_LEVEL;
  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    level = request.params.level;
    return {};
  });
  const send = (at: LoggingLevel, data: Record<string, unknown>) => {
    if (LEVELS.indexOf(at) < LEVELS.indexOf(level)) return;
    server.notification({ method: 'notifications/message', params: { level: at, logger: 'procward', data } }).catch(() => {});
  };
  const scoped = context.taskId !== undefined || context.sessionKey !== undefined;
  const visible = async (id: string) => !scoped || (await visibleSession(registry, context, id).catch(() => undefined)) !== undefined;

  const onCompletion = (e: CompletionEvent) => {
    void visible(e.sessionId).then((ok) => {
      if (!ok) return;
      send(e.reason === 'exited' && e.exitCode === 0 ? 'info' : 'warning', {
        type: 'completion',
        session_id: e.sessionId,
        ...(e.sessionKey !== undefined && { session_key: e.sessionKey }),
        command: cut(e.command),
        exit_code: e.exitCode,
        signal: e.signal,
        reason: e.reason,
        output: e.output,
        at: e.at,
      });
    });
  };
  const fold = new WatchFold((data) => send('notice', data));
  const onWatch = (e: WatchEvent) => {
    void visible(e.sessionId).then((ok) => {
      if (!ok || LEVELS.indexOf('notice') < LEVELS.indexOf(level) || !fold.take(e.sessionId)) return;
      send('notice', {
        type: 'watch',
        session_id: e.sessionId,
        ...(e.sessionKey !== undefined && { session_key: e.sessionKey }),
        command: cut(e.command),
        pattern: cut(e.pattern),
        line: cut(e.line),
        at: e.at,
      });
    });
  };
  registry.on('completion', onCompletion);
  registry.on('watch', onWatch);
  return {
    send,
    close() {
      fold.close();
      registry.off('completion', onCompletion);
      registry.off('watch', onWatch);
    },
  };
}

/** Watch hits sent one by one per second; the rest of the second's hits are folded into one message. */
export const WATCH_MESSAGES_PER_SECOND = 10;
/** Sessions a `watch_folded` message counts hits for by name (the rest are only in `folded`). */
const FOLDED_SESSIONS = 20;

/** The per-second budget of watch messages, and the hits folded past it. */
class WatchFold {
  private windowStart = 0;
  private sent = 0;
  private folded = 0;
  private readonly bySession = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly flush: (data: Record<string, unknown>) => void) {}

  /** Whether a hit of `sessionId` may go out now; if not, it is counted for the fold message. */
  take(sessionId: string, now = Date.now()): boolean {
    if (now - this.windowStart >= 1000 && this.folded === 0) {
      this.windowStart = now;
      this.sent = 0;
    }
    if (this.sent < WATCH_MESSAGES_PER_SECOND && this.folded === 0) {
      this.sent++;
      return true;
    }
    this.folded++;
    if (this.bySession.has(sessionId) || this.bySession.size < FOLDED_SESSIONS) this.bySession.set(sessionId, (this.bySession.get(sessionId) ?? 0) + 1);
    if (!this.timer) {
      this.timer = setTimeout(() => this.emit(), Math.max(0, this.windowStart + 1000 - now));
      this.timer.unref();
    }
    return false;
  }

  private emit(): void {
    this.timer = undefined;
    const data = {
      type: 'watch_folded',
      folded: this.folded,
      sessions: Object.fromEntries(this.bySession),
      note: 'watch hits past the message rate, not sent one by one; they stay pending for the notifications action',
    };
    this.folded = 0;
    this.bySession.clear();
    this.windowStart = Date.now();
    this.sent = 0;
    this.flush(data);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

