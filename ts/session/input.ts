/**
 * Writing to a job's input, the same way for a pipe, a PTY and a durable job's FIFO: a write
 * delivers every byte to a job that reads, in order after the writes before it, and never
 * blocks the event loop (the native core's writer thread, or `stdinfifo.ts`, waits for the
 * job). A write that stops short rejects with a `ProcwardError` whose `written` (also
 * `details.written`) says how many of its bytes reached the job's input, so a caller can
 * resume after them:
 *
 * - `WRITE_TIMEOUT`: the job took none of its input for `timeoutMs` (default 30 s): it is
 *   not reading it. Writes queued behind it fail the same way with `written: 0` (nothing of
 *   them was sent), so what the job got is a prefix of what was written.
 * - `SESSION_EXITED`: the job exited (or closed its stdin) before taking everything.
 * - `STDIN_CLOSED`: after `closeStdin`.
 */
import { fromNative, ProcwardError } from '../errors.js';
import type { WriteOutcome } from '../native.js';
import type { WriteOptions } from '../types.js';
import type { Live } from './kind.js';
import { inputOf } from './live.js';

/** How long a write waits while the job takes none of its bytes, unless told (milliseconds). */
export const DEFAULT_WRITE_TIMEOUT_MS = 30_000;

/** The write's timeout in milliseconds. Errors: `INVALID_ARGUMENT` for one that is not a positive finite number. */
export function writeTimeoutMs(opts: WriteOptions | undefined): number {
  const t = opts?.timeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS;
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) {
    throw new ProcwardError('INVALID_ARGUMENT', `timeoutMs must be a positive number of milliseconds, got ${typeof t === 'number' ? t : typeof t}`);
  }
  return t;
}

/** A write that stopped short: `code`, the message, and `written` (in `details` and as the error's own property). */
export function writeFailed(code: 'WRITE_TIMEOUT' | 'SESSION_EXITED' | 'STDIN_CLOSED' | 'EIO', message: string, written: number, details: Record<string, unknown> = {}): ProcwardError {
  return new ProcwardError(code, message, { ...details, written });
}

/**
 * Writes to the input of a job this host started (pipe or PTY). Resolves once every byte
 * reached the job's input; rejects as the module docs say, or with `NO_STDIN`.
 */
export async function writeInput(live: Live, data: string, opts?: WriteOptions): Promise<{ id: string; bytes: number }> {
  if (typeof data !== 'string') throw new ProcwardError('INVALID_ARGUMENT', 'data must be a string');
  const timeoutMs = writeTimeoutMs(opts);
  const r = live.record;
  if (r.status === 'exited') throw writeFailed('SESSION_EXITED', `${r.id} has exited; its stdin is closed`, 0);
  const job = inputOf(live);
  const bytes = Buffer.byteLength(data);
  let outcome: WriteOutcome;
  try {
    // Called before the first await: writes reach the native queue in the order they were made.
    outcome = await job.write(data, timeoutMs);
  } catch (err) {
    throw fromNative(err);
  }
  const { failure, written } = outcome;
  const of = `${written} of ${bytes} bytes written`;
  switch (failure ?? null) {
    case null:
      return { id: r.id, bytes };
    case 'timed_out':
      throw writeFailed('WRITE_TIMEOUT', `${r.id} took none of its input for ${timeoutMs} ms: it is not reading its stdin (${of})`, written);
    case 'dropped':
      throw writeFailed('WRITE_TIMEOUT', `${r.id}: not written, an earlier write to its stdin failed (${of})`, written, { dropped: true });
    case 'exited':
      throw writeFailed('SESSION_EXITED', `${r.id} no longer reads its stdin: it exited or closed it (${of})`, written);
    case 'closed':
      // The host lets go of a job's input when the job ends.
      if (live.record.status === 'exited') throw writeFailed('SESSION_EXITED', `${r.id} has exited; its stdin is closed (${of})`, written);
      throw writeFailed('STDIN_CLOSED', `${r.id}: its stdin was closed (${of})`, written);
    default:
      throw writeFailed('EIO', `${r.id}: ${outcome.message ?? 'the write failed'}`, written);
  }
}
