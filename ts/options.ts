/** Checks of `ProcessRegistry.open`'s options, before anything is opened or created. */
import { ProcwardError } from './errors.js';
import { MAX_GRACE_MS } from './processes.js';
import type { RegistryOptions } from './types.js';

/** Throws `INVALID_ARGUMENT` naming the first option that is out of range or of the wrong type. */
export function checkRegistryOptions(options: RegistryOptions): void {
  const counts: [string, unknown][] = [
    ['maxOutputChars', options.maxOutputChars],
    ['maxTotalOutputChars', options.maxTotalOutputChars],
    ['finishedTtlMs', options.finishedTtlMs],
    ['maxSessions', options.maxSessions],
    ['watch.cooldownMs', options.watch?.cooldownMs],
    ['watch.maxPerSession', options.watch?.maxPerSession],
    ['watch.maxPerMinute', options.watch?.maxPerMinute],
    ['sandbox.pollIntervalMs', options.sandbox?.pollIntervalMs],
    ['sandbox.lostAfterMs', options.sandbox?.lostAfterMs],
    ['logMaxBytes', options.logMaxBytes],
    ['maxTotalLogBytes', options.maxTotalLogBytes],
  ];
  for (const [key, v] of counts) {
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 0)) throw new ProcwardError('INVALID_ARGUMENT', `${key} must be a non-negative integer, got ${String(v)}`);
  }
  if (options.graceMs !== undefined && !(Number.isInteger(options.graceMs) && options.graceMs >= 0 && options.graceMs <= MAX_GRACE_MS)) {
    throw new ProcwardError('INVALID_ARGUMENT', `graceMs must be an integer from 0 to ${MAX_GRACE_MS}, got ${String(options.graceMs)}`);
  }
  if (options.logMaxBytes !== undefined && options.logMaxBytes < 4096) throw new ProcwardError('INVALID_ARGUMENT', `logMaxBytes must be at least 4096, got ${options.logMaxBytes}`);
  if (options.shell !== undefined && (typeof options.shell !== 'string' || options.shell === '')) throw new ProcwardError('INVALID_ARGUMENT', 'shell must be a non-empty path or command name');
  if (options.shellArgs !== undefined && !(Array.isArray(options.shellArgs) && options.shellArgs.every((a) => typeof a === 'string'))) {
    throw new ProcwardError('INVALID_ARGUMENT', 'shellArgs must be an array of strings');
  }
  if (options.stateDir !== undefined && (typeof options.stateDir !== 'string' || options.stateDir === '')) {
    throw new ProcwardError('INVALID_ARGUMENT', `stateDir must be a non-empty path (omit it for an in-memory registry), got ${JSON.stringify(options.stateDir)}`);
  }
}
