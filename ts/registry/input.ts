/**
 * What a caller sends into a session's terminal or stdin: raw writes, a line with Enter,
 * the end of input, and a PTY's new size. The session's kind does the writing.
 */
import { ProcwardError } from '../errors.js';
import { checkOptions } from '../options.js';
import type { TerminalSize, WriteOptions } from '../types.js';
import { actOn, type RegistryState } from './state.js';

/** `ProcessRegistry.write`: raw text to the session's stdin, after the writes queued before it. */
export async function write(st: RegistryState, id: string, data: string, opts: WriteOptions): Promise<{ id: string; bytes: number }> {
  checkOptions('write', opts);
  return actOn(st, id).kind.write(data, opts);
}

/** `ProcessRegistry.submit`: `text` and Enter (CR LF to a Windows PTY, LF everywhere else). */
export async function submit(st: RegistryState, id: string, text: string, opts: WriteOptions): Promise<{ id: string; bytes: number }> {
  checkOptions('submit', opts);
  if (typeof text !== 'string') throw new ProcwardError('INVALID_ARGUMENT', 'text must be a string');
  const live = actOn(st, id);
  const enter = process.platform === 'win32' && live.job?.inputKind === 'pty' ? '\r\n' : '\n';
  return live.kind.write(`${text}${enter}`, opts);
}

/** `ProcessRegistry.closeStdin`: ends the session's input after the writes that wait. */
export async function closeStdin(st: RegistryState, id: string): Promise<{ id: string; closed: true }> {
  return actOn(st, id).kind.closeStdin();
}

/** `ProcessRegistry.resize`: a PTY session's terminal to `cols` × `rows` (1 to 65535 each). */
export async function resize(st: RegistryState, id: string, size: Required<TerminalSize>): Promise<{ id: string; cols: number; rows: number }> {
  checkOptions('resize', size, true);
  for (const key of ['cols', 'rows'] as const) {
    const v = size?.[key];
    if (!Number.isInteger(v) || v < 1 || v > 65535) throw new ProcwardError('INVALID_ARGUMENT', `${key} must be an integer from 1 to 65535, got ${String(v)}`);
  }
  const live = actOn(st, id);
  live.kind.resize(size);
  return { id: live.record.id, cols: size.cols, rows: size.rows };
}
