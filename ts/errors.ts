/**
 * Errors of procward. Every error carries a stable `code`; OS-level failures keep the
 * errno name (`ENOENT`, `EMFILE`, ...), procward's own failures have descriptive codes.
 */

/** Codes procward itself raises (OS errno names such as `ENOENT` or `EMFILE` also occur). */
export type ProcwardErrorCode =
  | 'UNKNOWN_SESSION'
  | 'AMBIGUOUS_SESSION_ID'
  | 'INVALID_ARGUMENT'
  | 'KILL_SURVIVORS'
  | 'KILL_REFUSED'
  | 'IDENTITY_UNKNOWN'
  | 'REGISTRY_CLOSED'
  | 'SPAWN_FAILED'
  | 'CHECKPOINT_CORRUPT'
  | 'LOCK_TIMEOUT'
  | 'SESSION_EXITED'
  | 'NO_STDIN'
  | 'STDIN_CLOSED'
  | 'EAGAIN'
  | 'ENVIRONMENT_UNAVAILABLE'
  | 'STATE_DIR_UNTRUSTED'
  | 'SESSION_READ_ONLY';

/** An error with a stable `code` and optional structured `details`. */
export class ProcwardError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ProcwardErrorCode | string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'ProcwardError';
    this.code = code;
    this.details = details;
  }
}

/**
 * Turns an error thrown by the native binding (message `CODE: text`, see the binding's
 * `map_error`) into a {@link ProcwardError} with that code.
 */
export function fromNative(err: unknown): ProcwardError {
  if (err instanceof ProcwardError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const match = /^([A-Z][A-Z0-9_]+): (.*)$/s.exec(message);
  return match ? new ProcwardError(match[1] as string, match[2] as string) : new ProcwardError('EIO', message);
}
