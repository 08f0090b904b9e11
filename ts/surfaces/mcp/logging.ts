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
 *   Commands and lines have their control characters escaped (`text.ts`).
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
import type { ToolContext } from '../tool.js';
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
  const onWatch = (e: WatchEvent) => {
    void visible(e.sessionId).then((ok) => {
      if (!ok) return;
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
      registry.off('completion', onCompletion);
      registry.off('watch', onWatch);
    },
  };
}
