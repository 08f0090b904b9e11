/**
 * Operations scoped to an owner (a task, a conversation's session key), built on the
 * registry's public operations.
 */
import { isErrorCode, ProcwardError, type ProcwardErrorCode } from '../errors.js';
import { assertGraceMs } from '../session/termination.js';
import type { KillResult, SessionSummary } from '../types.js';

/** What scoping needs of a registry. */
export interface ScopeHost {
  list(filter?: { taskId?: string; sessionKey?: string }): Promise<SessionSummary[]>;
  kill(id: string, opts?: { graceMs?: number }): Promise<KillResult>;
}

/** Outcome of one session in a bulk kill: the kill result, or the error it raised. */
/** One session's part of a bulk kill: its kill's result, or its error (`ERROR` for an error without a procward code). */
export type BulkKillOutcome = { id: string; result: KillResult } | { id: string; error: { code: ProcwardErrorCode | 'ERROR'; message: string } };

function need(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || value === '') throw new ProcwardError('INVALID_ARGUMENT', `${what} must be a non-empty string`);
}

/** Whether `id` is named by any entry of `list` (full ids or unique prefixes, with or without `proc_`). */
function named(id: string, list: string[]): boolean {
  return list.some((q) => {
    const hex = String(q).trim().toLowerCase().replace(/^proc_/, '');
    return hex.length >= 4 && id.slice(5).startsWith(hex);
  });
}

/** A session is active while it runs, or once ended while processes it left run (its `leftovers`). */
const active = (s: SessionSummary) => s.status === 'running' || (s.leftovers ?? 0) > 0;

const ownedBy = (s: SessionSummary, taskId: string) => !s.sessionScoped && active(s) && (s.taskId === taskId || s.ownerTaskId === taskId);

/** Ids of the task's active sessions: running, or ended with live leftovers (a baseline for {@link killStartedSince}). */
export async function snapshotRunningIds(host: ScopeHost, taskId: string): Promise<string[]> {
  need(taskId, 'taskId');
  return (await host.list({ taskId })).filter((s) => ownedBy(s, taskId)).map((s) => s.id);
}

/** Kills every active session of the task except `excludeIds`, in parallel; never throws. */
export async function killAll(host: ScopeHost, opts: { taskId: string; excludeIds?: string[]; graceMs?: number }): Promise<BulkKillOutcome[]> {
  need(opts?.taskId, 'taskId');
  // Checked once up front: every kill would reject it, one outcome per session.
  if (opts.graceMs !== undefined) assertGraceMs(opts.graceMs);
  if (opts.excludeIds !== undefined && !Array.isArray(opts.excludeIds)) throw new ProcwardError('INVALID_ARGUMENT', 'excludeIds must be an array of session ids');
  const exclude = opts.excludeIds ?? [];
  const ids = (await snapshotRunningIds(host, opts.taskId)).filter((id) => !named(id, exclude));
  return Promise.all(
    ids.map((id) =>
      host.kill(id, opts.graceMs !== undefined ? { graceMs: opts.graceMs } : {}).then(
        (result): BulkKillOutcome => ({ id, result }),
        (err: { code?: string; message?: string }): BulkKillOutcome => ({ id, error: { code: err.code !== undefined && isErrorCode(err.code) ? err.code : 'ERROR', message: err.message ?? String(err) } }),
      ),
    ),
  );
}

/** Kills the task's active sessions that are not in `baseline` (started after the snapshot). */
export async function killStartedSince(host: ScopeHost, taskId: string, baseline: string[], graceMs?: number): Promise<BulkKillOutcome[]> {
  if (!Array.isArray(baseline)) throw new ProcwardError('INVALID_ARGUMENT', 'baseline must be the array snapshotRunningIds returned');
  return killAll(host, { taskId, excludeIds: baseline, ...(graceMs !== undefined && { graceMs }) });
}

/** Whether the task has an active session (detached ones are re-checked first). */
export async function hasActiveProcesses(host: ScopeHost, taskId: string): Promise<boolean> {
  return (await snapshotRunningIds(host, taskId)).length > 0;
}

/** Whether a session with this key runs and started less than `maxActiveAgeMs` ago (older ones are stale). */
export async function hasActiveForSession(host: ScopeHost, sessionKey: string, opts: { maxActiveAgeMs?: number } = {}): Promise<boolean> {
  need(sessionKey, 'sessionKey');
  const now = Date.now();
  return (await host.list({ sessionKey })).some((s) => active(s) && (opts.maxActiveAgeMs === undefined || now - s.startedAt <= opts.maxActiveAgeMs));
}
