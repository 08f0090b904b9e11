/**
 * Job logs as MCP resources: `procward://sessions/<id>/log` (a resource template), one per
 * session the server's context may see (`scope.ts`).
 *
 * - `resources/list`: the visible sessions, oldest first, 500 per page (the cursor is the
 *   next index, as a decimal string).
 * - `resources/read`: the last 1000 lines of the session's output, plain (escape sequences
 *   removed) and redacted before anything is cut, within 64 KiB of UTF-8 (the registry's
 *   `readLog`; a single longer line is cut with a marker). When the page is not the whole
 *   output, a first line `[procward: <showing>]` says which lines it holds; the `process_read`
 *   tool's `log` action pages through the rest.
 * - `resources/subscribe`: while a visible session's log is subscribed, the server checks it
 *   once a second and sends `notifications/resources/updated` when its output grew or the
 *   job ended (and once more when the session is gone, pruned).
 *
 * A URI that is malformed, names an unknown session or one out of the context's sight is
 * the same error: -32002, resource not found (never a hint that the session exists).
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { ProcessRegistry } from '../../registry.js';
import type { SessionSummary } from '../../types.js';
import type { ToolContext } from '../tool/handler.js';
import { visibleSession, visibleSessions } from './scope.js';
import { oneLine } from './text.js';

export const LOG_URI_TEMPLATE = 'procward://sessions/{session_id}/log';
/** Lines a resource read returns at most (the last ones). */
export const RESOURCE_LINES = 1000;
/** UTF-8 bytes of text a resource read returns at most. */
export const RESOURCE_MAX_BYTES = 64 * 1024;
const PAGE_SIZE = 500;
/** Milliseconds between two checks of the subscribed logs. */
export const SUBSCRIPTION_TICK_MS = 1000;
/** MCP's "resource not found" (the SDK has no name for it). */
const RESOURCE_NOT_FOUND = -32002;

export function logUri(id: string): string {
  return `procward://sessions/${id}/log`;
}

/** The session id of a log URI, or null when it is not one (ids are `proc_` + 12 hex, exactly). */
export function sessionOfUri(uri: string): string | null {
  return /^procward:\/\/sessions\/(proc_[0-9a-f]{12})\/log$/.exec(uri)?.[1] ?? null;
}

function notFound(uri: string): McpError {
  const shown = oneLine(uri, 200);
  return new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${JSON.stringify(shown)} (resources are procward://sessions/<session id>/log for the sessions resources/list gives)`, { uri: shown });
}

function describe(s: SessionSummary): string {
  if (s.status === 'running') return `running, PID ${s.pid ?? 'unknown'}`;
  const how = s.signal ? `signal ${s.signal}` : s.exitCode !== null ? `exit code ${s.exitCode}` : 'exit code unknown';
  return `${s.reason}, ${how}`;
}

/** What a subscribed log looked like at the last check. */
interface Watched {
  id: string;
  signature: string | null;
  ended: boolean;
}

/**
 * Serves the log resources on `server` (which must declare the `resources` capability with
 * `subscribe`). Returns `close`, which stops the subscription checks.
 */
export function serveLogResources(server: Server, registry: ProcessRegistry, context: ToolContext): { close(): void } {
  const watched = new Map<string, Watched>();
  let timer: NodeJS.Timeout | undefined;
  let checking = false;

  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      {
        uriTemplate: LOG_URI_TEMPLATE,
        name: 'session-log',
        title: 'Output log of a background session',
        description: `The last ${RESOURCE_LINES} lines of a session's output (stdout and stderr merged, redacted, at most ${RESOURCE_MAX_BYTES / 1024} KiB).`,
        mimeType: 'text/plain',
      },
    ],
  }));

  server.setRequestHandler(ListResourcesRequestSchema, async (request) => {
    const cursor = request.params?.cursor;
    const start = cursor === undefined ? 0 : /^\d{1,9}$/.test(cursor) ? Number(cursor) : Number.NaN;
    if (Number.isNaN(start)) throw new McpError(ErrorCode.InvalidParams, 'invalid cursor: pass back the nextCursor of the previous page');
    const sessions = await visibleSessions(registry, context);
    const page = sessions.slice(start, start + PAGE_SIZE);
    return {
      resources: page.map((s) => ({
        uri: logUri(s.id),
        name: s.id,
        title: `${s.id}: ${oneLine(s.command, 80)}`,
        description: `Output log of \`${oneLine(s.command, 200)}\` (${describe(s)}).`,
        mimeType: 'text/plain',
      })),
      ...(start + PAGE_SIZE < sessions.length && { nextCursor: String(start + PAGE_SIZE) }),
    };
  });

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params;
    const id = sessionOfUri(uri);
    if (id === null || !(await visibleSession(registry, context, id))) throw notFound(uri);
    const page = await registry.readLog(id, { limit: RESOURCE_LINES, maxBytes: RESOURCE_MAX_BYTES });
    const partial = page.offset > 0 || page.droppedChars > 0 || page.logEvicted === true;
    return { contents: [{ uri, mimeType: 'text/plain', text: partial ? `[procward: ${page.showing}]\n${page.text}` : page.text }] };
  });

  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const { uri } = request.params;
    const id = sessionOfUri(uri);
    if (id === null || !(await visibleSession(registry, context, id))) throw notFound(uri);
    if (!watched.has(uri)) watched.set(uri, { id, signature: await signature(registry, id), ended: false });
    if (!timer) {
      timer = setInterval(() => void check(), SUBSCRIPTION_TICK_MS);
      timer.unref();
    }
    return {};
  });

  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    watched.delete(request.params.uri);
    if (watched.size === 0) stop();
    return {};
  });

  function stop(): void {
    if (timer) clearInterval(timer);
    timer = undefined;
  }

  async function check(): Promise<void> {
    if (checking) return;
    checking = true;
    try {
      for (const [uri, w] of watched) {
        if (w.ended) continue;
        const now = await signature(registry, w.id);
        if (now === w.signature) continue;
        w.signature = now;
        w.ended = now === null || now.startsWith('exited');
        await server.sendResourceUpdated({ uri }).catch(() => {});
      }
    } finally {
      checking = false;
    }
  }

  return {
    close() {
      watched.clear();
      stop();
    },
  };
}

/**
 * A cheap fingerprint of a session's output and status: it changes when the job ends and
 * when output arrives (lines counted, bytes dropped by the caps, and the preview, for
 * output that does not end a line). Null once the session is gone.
 */
async function signature(registry: ProcessRegistry, id: string): Promise<string | null> {
  try {
    const poll = await registry.poll(id);
    const tail = await registry.readLog(id, { limit: 1, maxBytes: 256 });
    return `${poll.status}|${tail.totalLines}|${tail.droppedChars}|${poll.outputPreview.length}|${poll.outputPreview.slice(-64)}`;
  } catch {
    return null;
  }
}
