/**
 * MCP progress for a running tool call: when the request carries a progress token
 * (`_meta.progressToken`, which the official client sends when `callTool` is given an
 * `onprogress` callback), `notifications/progress` go out about once a second until the
 * call returns, so a client with `resetTimeoutOnProgress: true` keeps waiting past its
 * request timeout (60 s by default in the official SDK).
 *
 * The tool handler's own progress (a `wait`'s "still running" messages, with the wait's
 * length as `total`) is forwarded as it comes; a heartbeat fills the seconds it leaves
 * silent, so every call that takes time (a kill with a long grace period, a slow stdin
 * write) reports too. `progress` is the call's elapsed time in milliseconds (it grows with
 * every notification, as MCP requires), `total` the wait's timeout in milliseconds when
 * the handler says it.
 */
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';

/** Milliseconds between two progress notifications when the handler reports nothing. */
export const HEARTBEAT_MS = 1000;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** A running call's progress: `onProgress` for the tool handler (absent without a token), `stop` when the call returns. */
export interface CallProgress {
  onProgress?: (progress: { elapsedMs: number; totalMs?: number; message: string }) => void;
  stop(): void;
}

/** Starts reporting progress for the call `label` (e.g. `process_read wait`), if the request asked for it. */
export function callProgress(extra: Extra, label: string): CallProgress {
  const token = extra._meta?.progressToken;
  if (token === undefined) return { stop() {} };
  const started = Date.now();
  let last = 0;
  let lastAt = 0;
  let total: number | undefined;
  let stopped = false;
  const send = (message: string) => {
    if (stopped || extra.signal.aborted) return;
    lastAt = Date.now();
    last = Math.max(last + 1, lastAt - started);
    const params = { progressToken: token, progress: last, ...(total !== undefined && total >= last && { total }), message };
    extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {});
  };
  const heartbeat = setInterval(() => {
    if (Date.now() - lastAt >= HEARTBEAT_MS - 100) send(`${label}: running for ${Math.round((Date.now() - started) / 1000)} s`);
  }, HEARTBEAT_MS);
  heartbeat.unref();
  return {
    onProgress: (p) => {
      if (typeof p.totalMs === 'number' && Number.isFinite(p.totalMs)) total = p.totalMs;
      send(p.message);
    },
    stop() {
      stopped = true;
      clearInterval(heartbeat);
    },
  };
}
