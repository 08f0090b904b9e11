/**
 * The session's mark: what proves a process is a job's (see the core's `membership` module
 * and SECURITY.md). Each local or durable session draws a 128-bit nonce when it starts; the
 * job gets `PROCWARD_SESSION_ID=<session id>:<nonce>` as the last word on its environment,
 * and every process it starts inherits it through `fork` and `exec`. A kill, a signal and the
 * leftover count take a process as the job's only when it carries the mark (or is in the
 * job's cgroup, or is reached from a proven process by the kernel's own links), never by its
 * PID, group or session number alone, nor because a record names it.
 *
 * Neither the caller's `env` nor `allowEnv` can set or remove the mark (`INVALID_ARGUMENT`).
 * A procward that runs inside another procward's job keeps the outer marks: the host's own
 * `PROCWARD_SESSION_ID` (and the `PROCWARD_OUTER_SESSION_IDS` it got) go on, innermost first
 * and space-separated, in the job's `PROCWARD_OUTER_SESSION_IDS`, so the outer job's kill
 * still proves the inner job's processes.
 */
import { randomBytes } from 'node:crypto';

/** The variable that carries a job's own mark. */
export const MARK_VAR = 'PROCWARD_SESSION_ID';
/** The variable that carries the marks of the jobs a job runs inside. */
export const OUTER_MARKS_VAR = 'PROCWARD_OUTER_SESSION_IDS';
/** A mark: the session id, a colon, 32 lowercase hex digits. */
export const MARK_PATTERN = /^proc_[0-9a-f]{12}:[0-9a-f]{32}$/;
/** Most outer marks kept (a chain of nested procwards deeper than this loses its outermost). */
const MAX_OUTER = 16;

/** A new mark for session `id`. */
export function newMark(id: string): string {
  return `${id}:${randomBytes(16).toString('hex')}`;
}

/** Whether `name` is one of the mark's variables, which a caller may neither set nor pass through. */
export function isMarkVariable(name: string): boolean {
  const upper = name.toUpperCase();
  return upper === MARK_VAR || upper === OUTER_MARKS_VAR;
}

/**
 * The variables that mark a job: its own mark, and the marks of the jobs this host runs in
 * (from `host`, the host's environment; malformed words are dropped).
 */
export function markVariables(mark: string, host: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const outer = [host[MARK_VAR], ...(host[OUTER_MARKS_VAR]?.split(' ') ?? [])].filter((m): m is string => m !== undefined && MARK_PATTERN.test(m) && m !== mark);
  const vars: Record<string, string> = { [MARK_VAR]: mark };
  if (outer.length > 0) vars[OUTER_MARKS_VAR] = [...new Set(outer)].slice(0, MAX_OUTER).join(' ');
  return vars;
}

/**
 * The record's mark when it is the session's own (`<its id>:<nonce>`): a record naming
 * another session's mark proves nothing of this one's processes.
 */
export function ownMark(record: { id: string; mark?: string | undefined }): string | undefined {
  return record.mark?.startsWith(`${record.id}:`) ? record.mark : undefined;
}
