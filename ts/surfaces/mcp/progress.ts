/**
 * MCP progress for a running tool call: when the request carries a progress token
 * (`_meta.progressToken`, which the official client sends when `callTool` is given an
 * `onprogress` callback), `notifications/progress` go out until the call returns (about
 * once a second during a wait, at least every 1.5 s for any call), so a client with `resetTimeoutOnProgress: true` keeps waiting past its
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

/**
 * Milliseconds of silence after which the heartbeat reports: longer than the handler's
 * own period (about 1 s), so the two never double up, and far below any client timeout.
 */
export const HEARTBEAT_MS = 1500;

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
  let total: number | undefined;
  let stopped = false;
  let heartbeat: NodeJS.Timeout | undefined;
  const send = (message: string) => {
    if (stopped || extra.signal.aborted) return;
    last = Math.max(last + 1, Date.now() - started);
    const params = { progressToken: token, progress: last, ...(total !== undefined && total >= last && { total }), message };
    extra.sendNotification({ method: 'notifications/progress', params }).catch(() => {});
    arm();
  };
  // Re-armed by every notification: it fires only after HEARTBEAT_MS without one.
  const arm = () => {
    clearTimeout(heartbeat);
    heartbeat = setTimeout(() => send(`${label}: running for ${Math.round((Date.now() - started) / 1000)} s`), HEARTBEAT_MS);
    heartbeat.unref();
  };
  arm();
  return {
    onProgress: (p) => {
      if (typeof p.totalMs === 'number' && Number.isFinite(p.totalMs)) total = p.totalMs;
      send(p.message);
    },
    stop() {
      stopped = true;
      clearTimeout(heartbeat);
    },
  };
}
