/** Session ids: `proc_` followed by 12 lowercase hex characters. */
import { randomBytes } from 'node:crypto';
import { ProcwardError } from '../errors.js';

const ID = /^proc_[0-9a-f]{12}$/;

/** A new random session id. */
export function newSessionId(): string {
  return `proc_${randomBytes(6).toString('hex')}`;
}

/** Whether `id` has the shape of a session id. */
export function isSessionId(id: string): boolean {
  return ID.test(id);
}

/**
 * Resolves a full id or a unique prefix of at least 4 hex characters (with or without
 * `proc_`) among `known`.
 *
 * Errors: `INVALID_ARGUMENT` for a malformed query, `UNKNOWN_SESSION` when nothing
 * matches, `AMBIGUOUS_SESSION_ID` (with the candidates) when several do.
 */
export function resolveSessionId(known: Iterable<string>, query: string): string {
  const q = query.trim().toLowerCase();
  const hex = q.startsWith('proc_') ? q.slice(5) : q;
  if (!/^[0-9a-f]{4,12}$/.test(hex)) {
    throw new ProcwardError('INVALID_ARGUMENT', `session id ${JSON.stringify(query)} is not a session id: 4 to 12 hex characters, optionally after proc_`);
  }
  const matches = [...known].filter((id) => id.slice(5).startsWith(hex));
  if (matches.length === 1) return matches[0] as string;
  if (matches.length === 0) throw new ProcwardError('UNKNOWN_SESSION', `no session matches ${JSON.stringify(query)}`);
  throw new ProcwardError('AMBIGUOUS_SESSION_ID', `${JSON.stringify(query)} matches ${matches.length} sessions`, { candidates: matches });
}
