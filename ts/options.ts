/**
 * The options objects of the public API, checked before anything is done: every call's
 * object against a strict zod schema (zod is the schema library of the tool's input too),
 * so a misspelt key is refused with a "did you mean" hint instead of being ignored
 * (`wait(id, { timeout: 100 })` would wait forever), and a value of the wrong type says what
 * it got (`timeoutMs: "100"` is a string). Ranges stay with each operation's own checks.
 *
 * One parse per call and no copy: the object given is what the operation reads. A call
 * without an options object is not parsed at all.
 */
import { z } from 'zod';
import { ProcwardError } from './errors.js';
import { checkStrict, type Shape } from './optioncheck.js';
import { checkSpawnPolicy } from './policy/spawnpolicy.js';
import { MAX_GRACE_MS } from './processes.js';
import type {
  ActiveForSessionOptions,
  DrainOptions,
  KillAllOptions,
  KillOptions,
  ListFilter,
  PollOptions,
  ReadLogOptions,
  RegistryOptions,
  SpawnOptions,
  StartOptions,
  TerminalSize,
  WaitOptions,
  WriteOptions,
} from './types.js';


const optional = {
  string: z.string().optional(),
  number: z.number().optional(),
  boolean: z.boolean().optional(),
  strings: z.array(z.string()).optional(),
};
const kindOf = <T>(label: string, test: (v: unknown) => boolean) => z.custom<T>(test, { message: label });
const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);
const environment = kindOf('an ExecutionEnvironment (an object)', isObject);

const registryShape: Shape<RegistryOptions> = {
  stateDir: optional.string,
  shell: optional.string,
  shellArgs: optional.strings,
  maxOutputChars: optional.number,
  maxTotalOutputChars: optional.number,
  graceMs: optional.number,
  durable: optional.boolean,
  logMaxBytes: optional.number,
  maxTotalLogBytes: optional.number,
  redact: optional.boolean,
  watch: z.strictObject({ cooldownMs: optional.number, maxPerSession: optional.number, maxPerMinute: optional.number }).optional(),
  sandbox: z.strictObject({ pollIntervalMs: optional.number, lostAfterMs: optional.number }).optional(),
  lostAfterMs: optional.number,
  containment: optional.boolean,
  environments: z.record(z.string(), environment).optional(),
  finishedTtlMs: optional.number,
  maxSessions: optional.number,
  spawnPolicy: kindOf('a spawn policy (an object)', isObject).optional(),
};

const terminalShape: Shape<TerminalSize> = { cols: optional.number, rows: optional.number };

const spawnShape: Shape<SpawnOptions> = {
  cwd: optional.string,
  env: z.record(z.string(), z.string()).optional(),
  taskId: optional.string,
  ownerTaskId: optional.string,
  sessionKey: optional.string,
  durable: optional.boolean,
  outliveHost: optional.boolean,
  allowEnv: optional.strings,
  envSource: z.enum(['caller', 'model']).optional(),
  notifyOnComplete: optional.boolean,
  timeoutMs: optional.number,
  watchPatterns: optional.strings,
  stdin: optional.boolean,
  pty: z.union([z.boolean(), z.strictObject(terminalShape)]).optional(),
  environment: z.union([z.string(), environment]).optional(),
};

const pollShape: Shape<PollOptions> = { acknowledge: optional.boolean };
const waitShape: Shape<WaitOptions> = { timeoutMs: optional.number, signal: kindOf<AbortSignal>('an AbortSignal', (v) => v instanceof AbortSignal).optional() };
const readLogShape: Shape<ReadLogOptions> = { offset: optional.number, limit: optional.number, view: z.enum(['plain', 'raw']).optional(), maxBytes: optional.number };
const killShape: Shape<KillOptions> = { graceMs: optional.number };
const killAllShape: Shape<KillAllOptions> = { taskId: z.string(), excludeIds: optional.strings, graceMs: optional.number };
const listShape: Shape<ListFilter> = { taskId: optional.string, sessionKey: optional.string };
const drainShape: Shape<DrainOptions> = { sessionKey: optional.string, ownsEvent: kindOf('a function', (v) => typeof v === 'function').optional() };
const activeShape: Shape<ActiveForSessionOptions> = { maxActiveAgeMs: optional.number };
const sizeShape: Shape<Required<TerminalSize>> = { cols: z.number(), rows: z.number() };
const writeShape: Shape<WriteOptions> = { timeoutMs: optional.number };

/** The schema of each call's options object, by the name errors give it. */
export const OPTION_SCHEMAS = {
  open: z.strictObject(registryShape),
  spawn: z.strictObject(spawnShape),
  poll: z.strictObject(pollShape),
  wait: z.strictObject(waitShape),
  readLog: z.strictObject(readLogShape),
  kill: z.strictObject(killShape),
  killAll: z.strictObject(killAllShape),
  killStartedSince: z.strictObject(killShape),
  list: z.strictObject(listShape),
  drainNotifications: z.strictObject(drainShape),
  hasActiveForSession: z.strictObject(activeShape),
  resize: z.strictObject(sizeShape),
  write: z.strictObject(writeShape),
  submit: z.strictObject(writeShape),
} as const;

export type OptionsOf = keyof typeof OPTION_SCHEMAS;

/**
 * Returns `options` as given when it fits `call`'s schema (see `checkStrict`): `undefined`
 * passes unless `required`; otherwise `INVALID_ARGUMENT` with a hint or the type it got.
 */
export function checkOptions<T>(call: OptionsOf, options: T, required = false): T {
  return checkStrict(`${call} options`, OPTION_SCHEMAS[call], options, required);
}

/** `spawn`'s options with `pty: true` read as a terminal of the default size and `pty: false` as none. */
export function checkSpawn(options: SpawnOptions | undefined): StartOptions {
  const o = checkOptions('spawn', options) ?? {};
  if (o.pty === undefined || typeof o.pty === 'object') return o as StartOptions;
  const { pty, ...rest } = o;
  return pty ? { ...rest, pty: {} } : rest;
}

/** Throws `INVALID_ARGUMENT` naming the first option that is unknown, of the wrong type or out of range. */
export function checkRegistryOptions(options: RegistryOptions): void {
  checkOptions('open', options);
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
    ['lostAfterMs', options.lostAfterMs],
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
  if (options.shell !== undefined && options.shell === '') throw new ProcwardError('INVALID_ARGUMENT', 'shell must be a non-empty path or command name');
  checkSpawnPolicy(options.spawnPolicy);
  if (options.stateDir !== undefined && options.stateDir === '') {
    throw new ProcwardError('INVALID_ARGUMENT', `stateDir must be a non-empty path (omit it for an in-memory registry), got ${JSON.stringify(options.stateDir)}`);
  }
}
