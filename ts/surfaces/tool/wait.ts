/**
 * Waits that fit the host of a tool call. MCP clients give up on a request after 60 s by
 * default (the official SDK's `DEFAULT_REQUEST_TIMEOUT_MSEC`) unless progress notifications
 * keep it alive (`resetTimeoutOnProgress`), and a host that aborts a call (an AI SDK
 * `generateText` aborted, an MCP request cancelled) must not wait out the whole timeout.
 * So: the call's abort signal reaches `registry.wait`, and an aborted wait returns at once
 * with the job still running; the host's progress callback is called about once a second;
 * and a call without a progress callback waits at most {@link UNREPORTED_WAIT_MS}, then
 * says the job is still running and to call again.
 */
import type { ProcessRegistry } from '../../registry.js';
import type { WaitResult } from '../../types.js';

/** The longest wait of a call whose host takes no progress: below the common 60 s request timeout. */
export const UNREPORTED_WAIT_MS = 50_000;
/** Milliseconds between two progress reports. */
const PROGRESS_EVERY_MS = 1_000;

/** What the host of a call gives a wait. */
export interface WaitHost {
  signal?: AbortSignal;
  onProgress?: (progress: { elapsedMs: number; totalMs: number; message: string }) => void;
}

/** A wait's result, and why it ended early when it did. */
export interface HostWait {
  result: WaitResult;
  /** The host aborted the call; the job may still run. */
  aborted: boolean;
  /** The wait was cut to {@link UNREPORTED_WAIT_MS} because the host takes no progress. */
  clamped: boolean;
}

/**
 * Waits for `id` to end for at most `timeoutMs` (less without a progress callback, see
 * above). Errors: those of `registry.wait`, except an abort, which resolves with the
 * session's state as of now (`aborted: true`).
 */
export async function waitForHost(registry: ProcessRegistry, id: string, timeoutMs: number, host: WaitHost): Promise<HostWait> {
  const clamped = !host.onProgress && timeoutMs > UNREPORTED_WAIT_MS;
  const totalMs = clamped ? UNREPORTED_WAIT_MS : timeoutMs;
  const started = Date.now();
  const report = host.onProgress;
  const timer = report
    ? setInterval(() => {
        const elapsedMs = Date.now() - started;
        try {
          report({ elapsedMs, totalMs, message: `${id} still running after ${Math.round(elapsedMs / 1000)} s` });
        } catch {
          // The host's callback failing must not end the wait.
        }
      }, PROGRESS_EVERY_MS)
    : undefined;
  timer?.unref();
  try {
    const result = await registry.wait(id, { timeoutMs: totalMs, ...(host.signal && { signal: host.signal }) });
    return { result, aborted: false, clamped: clamped && result.timedOut };
  } catch (err) {
    if (!host.signal?.aborted) throw err;
    const now = await registry.poll(id);
    return { result: { ...now, timedOut: false, processRunning: now.status === 'running' }, aborted: true, clamped: false };
  } finally {
    if (timer) clearInterval(timer);
  }
}
