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

/** A schema entry for every key of `T`: the compiler refuses a key of the type the schema lacks, or one it does not have. */
type Shape<T> = { [K in keyof Required<T>]-?: z.ZodType };

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
  containment: optional.boolean,
  environments: z.record(z.string(), environment).optional(),
  finishedTtlMs: optional.number,
  maxSessions: optional.number,
};

const terminalShape: Shape<TerminalSize> = { cols: optional.number, rows: optional.number };

const spawnShape: Shape<SpawnOptions> = {
  cwd: optional.string,
  env: z.record(z.string(), z.string()).optional(),
  taskId: optional.string,
  ownerTaskId: optional.string,
  sessionKey: optional.string,
  durable: optional.boolean,
  allowEnv: optional.strings,
  notifyOnComplete: optional.boolean,
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
 * Returns `options` as given when it fits `call`'s schema; `undefined` passes (the call's
 * defaults apply) unless `required`. Throws `INVALID_ARGUMENT` for the first problem: an
 * unknown key (with the closest known key as a hint, `details: { option, suggestion }`), a
 * value of the wrong type (`details: { option, expected, received }`), or options that are
 * not an object.
 */
export function checkOptions<T>(call: OptionsOf, options: T, required = false): T {
  if (options === undefined && !required) return options;
  const schema = OPTION_SCHEMAS[call];
  const result = schema.safeParse(options);
  if (result.success) return options;
  // A misspelt key explains the required key it left missing: report it first.
  const { issues } = result.error;
  throw optionsError(call, schema, options, (issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0]) as z.core.$ZodIssue);
}

/** `spawn`'s options with `pty: true` read as a terminal of the default size and `pty: false` as none. */
export function checkSpawn(options: SpawnOptions | undefined): StartOptions {
  const o = checkOptions('spawn', options) ?? {};
  if (o.pty === undefined || typeof o.pty === 'object') return o as StartOptions;
  const { pty, ...rest } = o;
  return pty ? { ...rest, pty: {} } : rest;
}

/** Distance between two option names: edits (insert, delete, substitute, swap two neighbours), ignoring case, `_` and `-`. */
function nameDistance(a: string, b: string): number {
  const x = a.toLowerCase().replace(/[_-]/g, '');
  const y = b.toLowerCase().replace(/[_-]/g, '');
  const d: number[][] = Array.from({ length: x.length + 1 }, (_, i) => Array.from({ length: y.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++) {
      const row = d[i] as number[];
      const up = d[i - 1] as number[];
      row[j] = Math.min(up[j]! + 1, row[j - 1]! + 1, up[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) row[j] = Math.min(row[j]!, (d[i - 2] as number[])[j - 2]! + 1);
    }
  }
  return (d[x.length] as number[])[y.length]!;
}

/** Names other surfaces use for an option (the tool's `workdir` is `cwd`). */
const ALIASES: Record<string, string> = { workdir: 'cwd', dir: 'cwd', directory: 'cwd', timeout: 'timeoutMs', grace: 'graceMs', columns: 'cols', width: 'cols', height: 'rows' };

/**
 * The known name `key` most likely meant: an alias (`workdir` → `cwd`), the same name in
 * another case convention (`timeout_ms` → `timeoutMs`), or the closest name within a third
 * of its length in edits (at least one). Undefined when none is close.
 */
export function closestName(key: string, names: readonly string[]): string | undefined {
  const alias = ALIASES[key.toLowerCase().replace(/[_-]/g, '')];
  if (alias !== undefined) {
    const match = names.find((n) => nameDistance(n, alias) === 0);
    if (match !== undefined) return match;
  }
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of names) {
    const distance = nameDistance(key, name);
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(Math.max(key.length, best.length) / 3)) ? best : undefined;
}

/** ` (did you mean \`timeoutMs\`?)`, or an empty string when no known name is close. */
export function didYouMean(key: string, names: readonly string[]): string {
  const hint = closestName(key, names);
  return hint === undefined ? '' : ` (did you mean \`${hint}\`?)`;
}

/** What a value is, for an error message: `a string ("100")`, `the number 5`, `null`, `an array`. */
export function describeValue(v: unknown): string {
  if (v === null || v === undefined) return String(v);
  if (typeof v === 'string') return `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)})`;
  if (typeof v === 'number' || typeof v === 'boolean') return `the ${typeof v} ${String(v)}`;
  if (typeof v === 'bigint') return `a bigint (${v}n)`;
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') {
    const name = Object.getPrototypeOf(v)?.constructor?.name;
    return name && name !== 'Object' ? `a ${name}` : 'an object';
  }
  return `a ${typeof v}`;
}

const ARTICLE: Record<string, string> = { object: 'an object', array: 'an array', undefined: 'undefined', null: 'null' };
const expectedLabel = (expected: string): string => ARTICLE[expected] ?? `a ${expected}`;

/** The keys of the object schema at `path` (through optional wrappers), for the hint. */
function keysAt(schema: z.ZodType, path: PropertyKey[]): string[] {
  let s: z.ZodType | undefined = schema;
  for (const seg of [undefined, ...path]) {
    while (s instanceof z.ZodOptional) s = s.unwrap() as z.ZodType;
    if (seg === undefined) continue;
    if (s instanceof z.ZodUnion) s = s.options.find((o) => o instanceof z.ZodObject) as z.ZodType | undefined;
    s = s instanceof z.ZodObject ? (s.shape[seg as string] as z.ZodType | undefined) : undefined;
  }
  while (s instanceof z.ZodOptional) s = s.unwrap() as z.ZodType;
  if (s instanceof z.ZodUnion) s = s.options.find((o) => o instanceof z.ZodObject) as z.ZodType | undefined;
  return s instanceof z.ZodObject ? Object.keys(s.shape) : [];
}

function valueAt(root: unknown, path: PropertyKey[]): unknown {
  let v = root;
  for (const seg of path) v = v === null || v === undefined ? undefined : (v as Record<PropertyKey, unknown>)[seg];
  return v;
}

/** The issue a union's failure comes down to: the branch whose type matched, if one did. */
function unionCause(issue: z.core.$ZodIssueInvalidUnion): z.core.$ZodIssue | undefined {
  for (const branch of issue.errors) {
    const first = branch[0];
    if (first && !(first.code === 'invalid_type' && first.path.length === 0) && first.code !== 'custom') {
      return { ...first, path: [...issue.path, ...first.path] };
    }
  }
  return undefined;
}

function optionsError(call: OptionsOf, schema: z.ZodType, root: unknown, issue: z.core.$ZodIssue): ProcwardError {
  const where = `${call} options`;
  if (issue.code === 'invalid_union') {
    const cause = unionCause(issue);
    if (cause) return optionsError(call, schema, root, cause);
  }
  const option = issue.path.map(String).join('.');
  const received = describeValue(valueAt(root, issue.path));
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] as string;
    const names = keysAt(schema, issue.path);
    const suggestion = closestName(key, names);
    const full = option ? `${option}.${key}` : key;
    const hint = suggestion !== undefined ? ` (did you mean \`${suggestion}\`?)` : `; known options: ${names.join(', ')}`;
    return new ProcwardError('INVALID_ARGUMENT', `${where}: unknown option \`${full}\`${hint}`, { option: full, ...(suggestion !== undefined && { suggestion }) });
  }
  let expected: string;
  if (issue.code === 'invalid_type') expected = expectedLabel(issue.expected);
  else if (issue.code === 'invalid_union') expected = issue.errors.map((b) => (b[0]?.code === 'invalid_type' ? expectedLabel(b[0].expected) : (b[0]?.message ?? '?'))).join(' or ');
  else if (issue.code === 'invalid_value') expected = `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  else expected = issue.message;
  if (option === '') return new ProcwardError('INVALID_ARGUMENT', `${where} must be an object, got ${received}`, { expected: 'an object', received });
  return new ProcwardError('INVALID_ARGUMENT', `${where}: ${option} must be ${expected}, got ${received}`, { option, expected, received });
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
  if (options.stateDir !== undefined && options.stateDir === '') {
    throw new ProcwardError('INVALID_ARGUMENT', `stateDir must be a non-empty path (omit it for an in-memory registry), got ${JSON.stringify(options.stateDir)}`);
  }
}
