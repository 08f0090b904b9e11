/**
 * The check of an options object against a strict zod schema, and the error it gives: an
 * unknown key with the closest known key as a hint ("did you mean `timeoutMs`?"), a value
 * of the wrong type named with what it got (`"100"` is a string). Shared by the registry's
 * options (`options.ts`), `killTree` (`processes.ts`) and the tool's input (`surfaces/tool/handler.ts`).
 */
import { z } from 'zod';
import { ProcwardError } from './errors.js';

/** A schema entry for every key of `T`: the compiler refuses a key of the type the schema lacks, or one it does not have. */
export type Shape<T> = { [K in keyof Required<T>]-?: z.ZodType };

/**
 * Returns `options` as given when it fits `schema`; `undefined` passes (the call's defaults
 * apply) unless `required`. `call` names the call in messages (`wait options: ...`). Throws
 * `INVALID_ARGUMENT` for the first problem: an unknown key (with the closest known key as a
 * hint, `details: { option, suggestion }`), a value of the wrong type (`details: { option,
 * expected, received }`), or options that are not an object. One parse, no copy.
 */
export function checkStrict<T>(call: string, schema: z.ZodType, options: T, required = false): T {
  if (options === undefined && !required) return options;
  const result = schema.safeParse(options);
  if (result.success) return options;
  // A misspelt key explains the required key it left missing: report it first.
  const { issues } = result.error;
  throw optionsError(call, schema, options, (issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0]) as z.core.$ZodIssue);
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

/**
 * Names other surfaces use for an option (the tool's `workdir` is `cwd`). A null prototype:
 * a key such as `constructor` must find nothing inherited.
 */
const ALIASES: Record<string, string> = Object.assign(Object.create(null) as Record<string, string>, { workdir: 'cwd', dir: 'cwd', directory: 'cwd', timeout: 'timeoutMs', grace: 'graceMs', columns: 'cols', width: 'cols', height: 'rows' });

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

function optionsError(call: string, schema: z.ZodType, root: unknown, issue: z.core.$ZodIssue): ProcwardError {
  const where = call;
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
