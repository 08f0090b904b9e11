/**
 * What a job is started with: validation of the command and the child's environment.
 */
import { ProcwardError } from './errors.js';

/** Throws `INVALID_ARGUMENT` unless `command` is a non-empty string without NUL bytes. */
export function validateCommand(command: unknown): asserts command is string {
  if (typeof command !== 'string' || command.trim() === '') {
    throw new ProcwardError('INVALID_ARGUMENT', 'command must be a non-empty string');
  }
  if (command.includes('\0')) throw new ProcwardError('INVALID_ARGUMENT', 'command contains a NUL byte');
}

/**
 * The child's environment: the host's, overridden by `extra`. Throws `INVALID_ARGUMENT` for
 * a name that is empty or contains `=` or NUL, or a value that is not a string or has NUL.
 */
export function childEnvironment(host: NodeJS.ProcessEnv, extra: Record<string, string> = {}): Record<string, string> {
  for (const [name, value] of Object.entries(extra)) {
    if (name === '' || name.includes('=') || name.includes('\0')) {
      throw new ProcwardError('INVALID_ARGUMENT', `environment variable name ${JSON.stringify(name)} is empty or contains '=' or NUL`);
    }
    if (typeof value !== 'string' || value.includes('\0')) {
      throw new ProcwardError('INVALID_ARGUMENT', `environment variable ${name} must be a string without NUL bytes`);
    }
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...host, ...extra })) if (v !== undefined) env[k] = v;
  return env;
}
