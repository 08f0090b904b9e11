/**
 * Errors of procward. Every error carries a stable `code`; OS-level failures keep the
 * errno name (`ENOENT`, `EMFILE`, ...), procward's own failures have descriptive codes.
 */

/**
 * OS error names an operation can fail with: those the native core reports (`Error::code`:
 * errno names, and on Windows the Win32 errors that mean the same) and those of Node's file
 * calls on the state directory. Any other name the native layer or a file call gives becomes
 * `EIO`, with the name in `details.errno`.
 */
export const ERRNO_CODES = [
  'EACCES',
  'EAGAIN',
  'EBADF',
  'EBUSY',
  'EDQUOT',
  'EEXIST',
  'EINVAL',
  'EIO',
  'EISDIR',
  'ELOOP',
  'EMFILE',
  'ENFILE',
  'ENOENT',
  'ENOMEM',
  'ENOSPC',
  'ENOTDIR',
  'ENOTEMPTY',
  'ENOTSUP',
  'EPERM',
  'EPIPE',
  'EROFS',
  'ESRCH',
  'ETIMEDOUT',
  'EXDEV',
  'E2BIG',
] as const;

/** An OS error name (see {@link ERRNO_CODES}). */
export type ErrnoCode = (typeof ERRNO_CODES)[number];

/** procward's own codes. */
export const PROCWARD_CODES = [
  'UNKNOWN_SESSION',
  'AMBIGUOUS_SESSION_ID',
  'INVALID_ARGUMENT',
  'KILL_SURVIVORS',
  'KILL_REFUSED',
  'IDENTITY_UNKNOWN',
  'REGISTRY_CLOSED',
  'SPAWN_FAILED',
  'CHECKPOINT_CORRUPT',
  'LOCK_TIMEOUT',
  'SESSION_EXITED',
  'NO_STDIN',
  'STDIN_CLOSED',
  'WRITE_TIMEOUT',
  'ENVIRONMENT_UNAVAILABLE',
  'STATE_DIR_UNTRUSTED',
  'SESSION_READ_ONLY',
  // forget() of a session that still runs, or that another live host owns.
  'SESSION_RUNNING',
  'SESSION_OWNED',
  // The host's spawn policy refused a spawn (details: rule, reason); see policy/spawnpolicy.ts.
  'SPAWN_REFUSED',
] as const;

/** Every `code` a {@link ProcwardError} can carry: procward's own codes and {@link ErrnoCode}s. */
export type ProcwardErrorCode = ErrnoCode | (typeof PROCWARD_CODES)[number];

/** An error with a stable `code` and optional structured `details`. */
export class ProcwardError extends Error {
  readonly code: ProcwardErrorCode;
  readonly details: Record<string, unknown> | undefined;
  /**
   * A write to a job's input (`write`, `submit`) that stopped short: how many bytes of it
   * reached the job's input, so a retry can resume after them (also `details.written`).
   */
  readonly written: number | undefined;

  constructor(code: ProcwardErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'ProcwardError';
    this.code = code;
    this.details = details;
    this.written = typeof details?.written === 'number' ? details.written : undefined;
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
  if (!match) return new ProcwardError('EIO', message);
  const [, code, text] = match as unknown as [string, string, string];
  return isErrorCode(code) ? new ProcwardError(code, text) : new ProcwardError('EIO', text, { errno: code });
}

const KNOWN_CODES: ReadonlySet<string> = new Set<string>([...ERRNO_CODES, ...PROCWARD_CODES]);

/** Whether `code` is one of the codes a {@link ProcwardError} carries. */
export function isErrorCode(code: string): code is ProcwardErrorCode {
  return KNOWN_CODES.has(code);
}
