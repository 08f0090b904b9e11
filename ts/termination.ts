/**
 * Finishing a kill that timed out: survivors are re-checked by identity
 * and SIGKILLed with their descendants every 500 ms (first after the grace period), for up
 * to 60 s, until none is left or the caller aborts (a new kill, a rescinded stop, close()).
 */
import { killTree, type Identity } from './helpers.js';

export interface BackgroundKillOptions {
  graceMs: number;
  /** The job's cgroup directory, if any. */
  cgroup?: string;
  signal: AbortSignal;
  /** Called once every survivor is gone. */
  onDone(): void;
  /** Called when survivors outlive the 60 s budget. */
  onGiveUp(left: Identity[]): void;
}

/** Starts the background loop; its timers never keep the host alive. */
export function finishKillInBackground(survivors: Identity[], opts: BackgroundKillOptions): void {
  const deadline = Date.now() + 60_000;
  let left = survivors;
  const tick = async () => {
    if (opts.signal.aborted) return;
    const next: Identity[] = [];
    for (const id of left) {
      const report = await killTree(id, { signal: 'SIGKILL', graceMs: 0, settleMs: 200, ...(opts.cgroup && { cgroup: opts.cgroup }) }).catch(() => null);
      next.push(...(report ? report.survivorIdentities : [id]));
    }
    left = next;
    if (opts.signal.aborted) return;
    if (left.length === 0) opts.onDone();
    else if (Date.now() < deadline) setTimeout(tick, 500).unref();
    else opts.onGiveUp(left);
  };
  setTimeout(tick, Math.max(opts.graceMs, 250)).unref();
}
