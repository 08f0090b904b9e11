/**
 * Strict checks of `spawn`'s options, before anything starts. What a spawn records is read
 * back by every later host with the same strict schema (see `record.ts`): an option that
 * passed here but failed there would make a running job invisible after a restart.
 */
import { ProcwardError } from '../errors.js';

/** Longest task id, owner task id or session key, in characters (the session schema has the same bound). */
export const MAX_LABEL_CHARS = 256;

/** Longest kill-after deadline (`SpawnOptions.timeoutMs`): the longest delay a Node timer takes (about 24.8 days). */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

const fail = (message: string): never => {
  throw new ProcwardError('INVALID_ARGUMENT', message);
};

const kind = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v);

/**
 * Throws `INVALID_ARGUMENT` unless: `taskId`, `ownerTaskId`, `sessionKey` are strings of at
 * most {@link MAX_LABEL_CHARS} characters; `cwd` is a non-empty string without NUL; `env` is
 * a plain object of strings; `allowEnv` an array of strings; `durable`, `stdin`,
 * `notifyOnComplete`, `outliveHost` booleans; `pty` an object. Absent (`undefined`) options pass.
 */
export function checkSpawnOptions(opts: unknown): void {
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) fail(`spawn options must be an object, got ${kind(opts)}`);
  const o = opts as Record<string, unknown>;
  for (const key of ['taskId', 'ownerTaskId', 'sessionKey']) {
    const v = o[key];
    if (v === undefined) continue;
    if (typeof v !== 'string') fail(`${key} must be a string, got ${kind(v)}`);
    if ((v as string).length > MAX_LABEL_CHARS) fail(`${key} must be at most ${MAX_LABEL_CHARS} characters, got ${(v as string).length}`);
  }
  if (o.cwd !== undefined && (typeof o.cwd !== 'string' || o.cwd === '' || o.cwd.includes('\0'))) fail(`cwd must be a non-empty path without NUL bytes, got ${kind(o.cwd)}`);
  if (o.env !== undefined) {
    const env = o.env;
    if (env === null || typeof env !== 'object' || Array.isArray(env) || ![Object.prototype, null].includes(Object.getPrototypeOf(env))) fail(`env must be a plain object of strings, got ${kind(env)}`);
    for (const [name, value] of Object.entries(env as object)) if (typeof value !== 'string') fail(`env.${name} must be a string, got ${kind(value)}`);
  }
  if (o.allowEnv !== undefined && !(Array.isArray(o.allowEnv) && o.allowEnv.every((n) => typeof n === 'string'))) fail('allowEnv must be an array of variable names (strings)');
  for (const key of ['durable', 'stdin', 'notifyOnComplete', 'outliveHost']) {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') fail(`${key} must be a boolean, got ${kind(o[key])}`);
  }
  if (o.pty !== undefined && (o.pty === null || typeof o.pty !== 'object' || Array.isArray(o.pty))) fail(`pty must be an object ({ cols, rows }), got ${kind(o.pty)}`);
}
