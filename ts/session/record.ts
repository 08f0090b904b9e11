/**
 * The session record: what procward knows about one background job. This shape is what
 * the checkpoint persists (see `persist/checkpoint.ts`), so every field is plain JSON.
 *
 * Hosts of different versions may share a state directory. Every entry records the schema
 * version of its writer (`schemaVersion`, {@link SESSION_SCHEMA_VERSION}; absent means 1).
 * An entry this version does not fully understand (a newer schema version, an unknown
 * field, status or reason, or any field that fails validation) is kept **read-only**: it is
 * listed through {@link readOnlyView}, never adopted, signalled or pruned, and its raw JSON
 * is written back untouched.
 */
import { z } from 'zod';
import { MARK_PATTERN } from './mark.js';
import { MAX_LABEL_CHARS, MAX_TIMEOUT_MS } from './spawnoptions.js';

/** `running` until the job's end is known, then `exited`. */
export type SessionStatus = 'running' | 'exited';

/**
 * Why a session ended: `exited` (on its own), `killed` (by procward), `lost` (its process
 * vanished while no host watched it and no exit status was recorded), `failed_start`.
 */
export type CompletionReason = 'exited' | 'killed' | 'lost' | 'failed_start';

/** Schema version of the entries this version writes. 2: `environment` is a name, `schemaVersion` recorded. */
export const SESSION_SCHEMA_VERSION = 2;

/**
 * Ranges every number read from a record must fall in (issue 26: one out-of-range number
 * made the native conversion throw, and took `open` down with it). A PID is a positive
 * `pid_t` (Linux caps it at 2^22, `/proc/sys/kernel/pid_max`); a start time is a `u64` of
 * clock ticks (`/proc/<pid>/stat` field 22; Windows: 100 ns units); times are milliseconds
 * since the epoch a `Date` can hold; an exit code is what an `int` (Unix) or a `DWORD`
 * (Windows) can hold; counts and offsets are safe integers.
 */
export const MAX_PID = 2 ** 31 - 1;
export const MAX_TIME_MS = 8.64e15;
const MIN_EXIT_CODE = -(2 ** 31);
const MAX_EXIT_CODE = 2 ** 32 - 1;
const MAX_U64 = 2n ** 64n - 1n;
/** A start time as recorded: decimal digits of a `u64`. */
const START_TIME = /^\d{1,20}$/;
const fitsU64 = (s: string): boolean => START_TIME.test(s) && BigInt(s) <= MAX_U64;
const time = () => z.number().min(0).max(MAX_TIME_MS);
const pidNumber = () => z.number().int().min(1).max(MAX_PID);

export const identitySchema = z.object({
  pid: pidNumber(),
  startTime: z.string().refine(fitsU64, 'a start time is the decimal digits of a 64-bit unsigned integer'),
  bootId: z.string().min(1),
});

export const sessionRecordSchema = z.strictObject({
  /** Schema version of the entry's writer (absent: 1). */
  schemaVersion: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  id: z.string().regex(/^proc_[0-9a-f]{12}$/),
  /** The command as the user gave it, redacted. */
  command: z.string(),
  cwd: z.string(),
  /** PID of the direct child (durable jobs: the supervisor); also the process group id. */
  pid: pidNumber().nullable(),
  identity: identitySchema.nullable(),
  /**
   * A durable job's own process (its shell, the supervisor's child), once known: what its
   * `pid` reports and signals reach. Checked before it is believed (see `durable.ts`); the
   * supervisor's identity (`identity`) stays the root of its tree kill.
   */
  jobIdentity: identitySchema.optional(),
  taskId: z.string().max(MAX_LABEL_CHARS).optional(),
  ownerTaskId: z.string().max(MAX_LABEL_CHARS).optional(),
  sessionKey: z.string().max(MAX_LABEL_CHARS).optional(),
  /** Milliseconds since the epoch. */
  startedAt: time(),
  exitedAt: time().nullable(),
  status: z.enum(['running', 'exited']),
  exitCode: z.number().int().min(MIN_EXIT_CODE).max(MAX_EXIT_CODE).nullable(),
  /** Terminating signal name, e.g. `SIGKILL`. */
  signal: z.string().nullable(),
  reason: z.enum(['exited', 'killed', 'lost', 'failed_start']).nullable(),
  /** Who ended it: `process` (itself), `kill` (procward), `recovery` (noticed after a host restart). */
  terminationSource: z.string().nullable(),
  /** Durable jobs write their output to `logPath` and their exit status to `exitPath`. */
  durable: z.boolean(),
  logPath: z.string().nullable(),
  exitPath: z.string().nullable(),
  /** A durable job started with stdin: the FIFO any host may write to (see `stdinfifo.ts`). */
  stdinPath: z.string().optional(),
  /** Identity of the host process that last wrote this entry, and which registry in it. */
  writer: identitySchema.extend({ instance: z.string().optional() }),
  /** Milliseconds since the epoch; the newer entry wins when hosts merge. */
  updatedAt: time(),
  /** `sandbox`: the PID lives in another environment and is never signalled on the host. */
  pidScope: z.enum(['host', 'sandbox']).optional(),
  /**
   * The name of the environment a sandbox session runs in (see `RegistryOptions.environments`);
   * absent when it was started with an unnamed environment object. Never connection details.
   */
  environment: z.string().min(1).max(MAX_LABEL_CHARS).optional(),
  /** Written by earlier versions; ignored (the far-side directory is derived from the id and the environment). */
  sandboxDir: z.string().optional(),
  /** The job's cgroup v2 directory (Linux, when the host may create cgroups). */
  cgroup: z.string().optional(),
  /**
   * The session's mark, `<session id>:<32 hex nonce>`: every process of the job carries it
   * as `PROCWARD_SESSION_ID` in its environment, and a kill signals only processes that
   * carry it or are in the job's cgroup (see the core's `membership`). Absent in records of
   * earlier versions, whose running jobs a kill refuses (`no_proof`) unless their cgroup
   * proves them.
   */
  mark: z.string().regex(MARK_PATTERN).optional(),
  /** Queue a completion event when the session ends. */
  notifyOnComplete: z.boolean().optional(),
  /** The last 2000 characters of output at the end (plain, redacted), for the completion event. */
  completionTail: z.string().optional(),
  /** The completion event was delivered (drained, or consumed by wait, readLog or kill). */
  notificationDelivered: z.boolean().optional(),
  /** Kill-after deadline in milliseconds from the start (see `SpawnOptions.timeoutMs`). */
  timeoutMs: z.number().int().min(1).max(MAX_TIMEOUT_MS).optional(),
  /** The deadline passed while the job ran, and it was killed for it. */
  timedOut: z.boolean().optional(),
  /** Regular expressions matched against whole output lines. */
  watchPatterns: z.array(z.string()).optional(),
  /** Watch events not yet drained; `offset`: byte offset of the line in the output (see `watchCursor`). */
  watchEvents: z.array(z.object({ pattern: z.string(), line: z.string(), at: time(), offset: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional() })).optional(),
  /** Watch events raised so far (for the lifetime cap). */
  watchFired: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
  /** Byte offset in the output (a durable log's, across rotations) up to which lines were matched against the watch patterns (see `policy/watching.ts`). */
  watchCursor: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
});

export type SessionRecord = z.infer<typeof sessionRecordSchema>;
export type RecordedIdentity = z.infer<typeof identitySchema>;

/**
 * Whether this version fully understands `raw`: it validates and its writer's schema is not
 * newer. The usual entry takes {@link wellFormed} (a tenth of the schema's cost, which was a
 * third of `open` on a large state directory); anything else, and every rejection, is the
 * schema's answer.
 */
export function understood(raw: unknown): SessionRecord | null {
  const record = wellFormed(raw) ?? sessionRecordSchema.safeParse(raw).data;
  return record !== undefined && (record.schemaVersion ?? 1) <= SESSION_SCHEMA_VERSION ? record : null;
}

// The fast path of `understood`: it must accept nothing the schema refuses and return what
// the schema's parse returns (new objects, keys in the schema's order, optional keys only
// when present). It is stricter where that is simpler (no `undefined` values, no unknown
// keys in nested objects, which the schema would strip): such entries take the schema.
// Keep it in step with `sessionRecordSchema`; `__test__/persist-wellformed.test.ts` checks
// the two against each other.
const ID = /^proc_[0-9a-f]{12}$/;
const isTime = (v: unknown): v is number => typeof v === 'number' && v >= 0 && v <= MAX_TIME_MS;
const isInt = (v: unknown): v is number => Number.isSafeInteger(v);
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isPositiveInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
const isPid = (v: unknown): v is number => isPositiveInt(v) && v <= MAX_PID;
const isExitCode = (v: unknown): v is number => isInt(v) && v >= MIN_EXIT_CODE && v <= MAX_EXIT_CODE;
const isLabel = (v: unknown): v is string => typeof v === 'string' && v.length <= MAX_LABEL_CHARS;
const isString = (v: unknown): v is string => typeof v === 'string';
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
/** Own enumerable keys of `o` (a JSON object has no others). */
function keyCount(o: object): number {
  let n = 0;
  for (const k in o) if (Object.hasOwn(o, k)) n++;
  return n;
}
/** A writer's or job's identity as the schema parses it; `undefined`: ask the schema. */
function identityOf(v: unknown, withInstance: boolean): (RecordedIdentity & { instance?: string }) | undefined {
  if (!isObject(v)) return undefined;
  const { pid, startTime, bootId, instance } = v;
  if (!isPid(pid) || !isString(startTime) || !fitsU64(startTime) || !isString(bootId) || bootId === '') return undefined;
  if (instance === undefined) return keyCount(v) === 3 ? { pid, startTime, bootId } : undefined;
  return withInstance && isString(instance) && keyCount(v) === 4 ? { pid, startTime, bootId, instance } : undefined;
}
function watchEventsOf(v: unknown): { pattern: string; line: string; at: number; offset?: number }[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: { pattern: string; line: string; at: number; offset?: number }[] = [];
  for (const e of v) {
    if (!isObject(e) || !isString(e.pattern) || !isString(e.line) || !isTime(e.at)) return undefined;
    const { offset } = e;
    if (offset === undefined) {
      if (keyCount(e) !== 3) return undefined;
      out.push({ pattern: e.pattern, line: e.line, at: e.at });
    } else {
      if (!isCount(offset) || keyCount(e) !== 4) return undefined;
      out.push({ pattern: e.pattern, line: e.line, at: e.at, offset });
    }
  }
  return out;
}

/** `raw` as the schema would parse it, when it has the usual well-formed shape; `undefined` otherwise (ask the schema). */
export function wellFormed(raw: unknown): SessionRecord | undefined {
  if (!isObject(raw)) return undefined;
  const { schemaVersion, id, command, cwd, pid, identity, jobIdentity, taskId, ownerTaskId, sessionKey, startedAt, exitedAt, status, exitCode, signal, reason, terminationSource, durable, logPath, exitPath, stdinPath, writer, updatedAt } = raw;
  const { pidScope, environment, sandboxDir, cgroup, mark, notifyOnComplete, completionTail, notificationDelivered, timeoutMs, timedOut, watchPatterns, watchEvents, watchFired, watchCursor } = raw;
  // The 17 fields every entry has.
  if (!isString(id) || !ID.test(id) || !isString(command) || !isString(cwd) || !(pid === null || isPid(pid))) return undefined;
  const ident = identity === null ? null : identityOf(identity, false);
  if (ident === undefined || !isTime(startedAt) || !(exitedAt === null || isTime(exitedAt)) || (status !== 'running' && status !== 'exited')) return undefined;
  if (!(exitCode === null || isExitCode(exitCode)) || !(signal === null || isString(signal)) || !(terminationSource === null || isString(terminationSource))) return undefined;
  if (reason !== null && reason !== 'exited' && reason !== 'killed' && reason !== 'lost' && reason !== 'failed_start') return undefined;
  if (typeof durable !== 'boolean' || !(logPath === null || isString(logPath)) || !(exitPath === null || isString(exitPath)) || !isTime(updatedAt)) return undefined;
  const who = identityOf(writer, true);
  if (who === undefined) return undefined;
  // The optional ones: absent, or valid.
  let n = 17;
  const present = (v: unknown, ok: boolean): boolean => {
    if (v === undefined) return true;
    n++;
    return ok;
  };
  if (!present(schemaVersion, isPositiveInt(schemaVersion)) || !present(taskId, isLabel(taskId)) || !present(ownerTaskId, isLabel(ownerTaskId)) || !present(sessionKey, isLabel(sessionKey))) return undefined;
  if (!present(stdinPath, isString(stdinPath)) || !present(pidScope, pidScope === 'host' || pidScope === 'sandbox') || !present(environment, isLabel(environment) && environment !== '')) return undefined;
  if (!present(sandboxDir, isString(sandboxDir)) || !present(cgroup, isString(cgroup)) || !present(notifyOnComplete, typeof notifyOnComplete === 'boolean')) return undefined;
  if (!present(mark, isString(mark) && MARK_PATTERN.test(mark))) return undefined;
  const job = jobIdentity === undefined ? undefined : identityOf(jobIdentity, false);
  if (!present(jobIdentity, job !== undefined) || !present(timeoutMs, isPositiveInt(timeoutMs) && timeoutMs <= MAX_TIMEOUT_MS) || !present(timedOut, typeof timedOut === 'boolean')) return undefined;
  if (!present(completionTail, isString(completionTail)) || !present(notificationDelivered, typeof notificationDelivered === 'boolean') || !present(watchFired, isCount(watchFired))) return undefined;
  if (!present(watchPatterns, Array.isArray(watchPatterns) && watchPatterns.every(isString))) return undefined;
  const events = watchEvents === undefined ? undefined : watchEventsOf(watchEvents);
  if (!present(watchEvents, events !== undefined) || !present(watchCursor, isCount(watchCursor))) return undefined;
  // Nothing else (the schema is strict), and no key that holds `undefined`.
  if (keyCount(raw) !== n) return undefined;
  // The schema's order: its parse builds a new object field by field.
  const out: Record<string, unknown> = {};
  if (schemaVersion !== undefined) out.schemaVersion = schemaVersion;
  Object.assign(out, { id, command, cwd, pid, identity: ident });
  if (job !== undefined) out.jobIdentity = job;
  if (taskId !== undefined) out.taskId = taskId;
  if (ownerTaskId !== undefined) out.ownerTaskId = ownerTaskId;
  if (sessionKey !== undefined) out.sessionKey = sessionKey;
  Object.assign(out, { startedAt, exitedAt, status, exitCode, signal, reason, terminationSource, durable, logPath, exitPath });
  if (stdinPath !== undefined) out.stdinPath = stdinPath;
  Object.assign(out, { writer: who, updatedAt });
  if (pidScope !== undefined) out.pidScope = pidScope;
  if (environment !== undefined) out.environment = environment;
  if (sandboxDir !== undefined) out.sandboxDir = sandboxDir;
  if (cgroup !== undefined) out.cgroup = cgroup;
  if (mark !== undefined) out.mark = mark;
  if (notifyOnComplete !== undefined) out.notifyOnComplete = notifyOnComplete;
  if (completionTail !== undefined) out.completionTail = completionTail;
  if (notificationDelivered !== undefined) out.notificationDelivered = notificationDelivered;
  if (timeoutMs !== undefined) out.timeoutMs = timeoutMs;
  if (timedOut !== undefined) out.timedOut = timedOut;
  if (watchPatterns !== undefined) out.watchPatterns = [...(watchPatterns as string[])];
  if (events !== undefined) out.watchEvents = events;
  if (watchFired !== undefined) out.watchFired = watchFired;
  if (watchCursor !== undefined) out.watchCursor = watchCursor;
  return out as SessionRecord;
}

/**
 * What can be shown of an entry this version does not understand: its id (required; without
 * a session id there is nothing to list), command, cwd, labels, times, status and end when
 * they have known shapes. It has no PID, identity or paths, so nothing can act on it.
 */
export function readOnlyView(raw: unknown): SessionRecord | null {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const o = raw as Record<string, unknown>;
  if (typeof o.id !== 'string' || !/^proc_[0-9a-f]{12}$/.test(o.id)) return null;
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const label = (v: unknown) => (typeof v === 'string' && v.length <= MAX_LABEL_CHARS ? v : undefined);
  const time = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const reason = ['exited', 'killed', 'lost', 'failed_start'].includes(o.reason as string) ? (o.reason as CompletionReason) : null;
  const labels = { taskId: label(o.taskId), ownerTaskId: label(o.ownerTaskId), sessionKey: label(o.sessionKey) };
  return {
    id: o.id,
    command: text(o.command) ?? '',
    cwd: text(o.cwd) ?? '',
    pid: null,
    identity: null,
    ...Object.fromEntries(Object.entries(labels).filter(([, v]) => v !== undefined)),
    startedAt: time(o.startedAt) ?? 0,
    exitedAt: time(o.exitedAt),
    // An unknown status may be a running job: shown as running, never acted on.
    status: o.status === 'exited' ? 'exited' : 'running',
    exitCode: Number.isInteger(o.exitCode) ? (o.exitCode as number) : null,
    signal: text(o.signal) ?? null,
    reason,
    terminationSource: text(o.terminationSource) ?? null,
    durable: false,
    logPath: null,
    exitPath: null,
    writer: { pid: 1, startTime: '0', bootId: 'unknown' },
    updatedAt: time(o.updatedAt) ?? 0,
  };
}
