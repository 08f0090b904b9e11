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
import { MAX_LABEL_CHARS } from './spawnoptions.js';

/** `running` until the job's end is known, then `exited`. */
export type SessionStatus = 'running' | 'exited';

/**
 * Why a session ended: `exited` (on its own), `killed` (by procward), `lost` (its process
 * vanished while no host watched it and no exit status was recorded), `failed_start`.
 */
export type CompletionReason = 'exited' | 'killed' | 'lost' | 'failed_start';

/** Schema version of the entries this version writes. 2: `environment` is a name, `schemaVersion` recorded. */
export const SESSION_SCHEMA_VERSION = 2;

export const identitySchema = z.object({
  pid: z.number().int().positive(),
  startTime: z.string().regex(/^\d+$/),
  bootId: z.string().min(1),
});

export const sessionRecordSchema = z.strictObject({
  /** Schema version of the entry's writer (absent: 1). */
  schemaVersion: z.number().int().positive().optional(),
  id: z.string().regex(/^proc_[0-9a-f]{12}$/),
  /** The command as the user gave it, redacted. */
  command: z.string(),
  cwd: z.string(),
  /** PID of the direct child (durable jobs: the supervisor); also the process group id. */
  pid: z.number().int().positive().nullable(),
  identity: identitySchema.nullable(),
  taskId: z.string().max(MAX_LABEL_CHARS).optional(),
  ownerTaskId: z.string().max(MAX_LABEL_CHARS).optional(),
  sessionKey: z.string().max(MAX_LABEL_CHARS).optional(),
  /** Milliseconds since the epoch. */
  startedAt: z.number(),
  exitedAt: z.number().nullable(),
  status: z.enum(['running', 'exited']),
  exitCode: z.number().int().nullable(),
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
  updatedAt: z.number(),
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
  /** Queue a completion event when the session ends. */
  notifyOnComplete: z.boolean().optional(),
  /** The last 2000 characters of output at the end (plain, redacted), for the completion event. */
  completionTail: z.string().optional(),
  /** The completion event was delivered (drained, or consumed by wait, readLog or kill). */
  notificationDelivered: z.boolean().optional(),
  /** Regular expressions matched against whole output lines. */
  watchPatterns: z.array(z.string()).optional(),
  /** Watch events not yet drained. */
  watchEvents: z.array(z.object({ pattern: z.string(), line: z.string(), at: z.number() })).optional(),
  /** Watch events raised so far (for the lifetime cap). */
  watchFired: z.number().int().optional(),
});

export type SessionRecord = z.infer<typeof sessionRecordSchema>;
export type RecordedIdentity = z.infer<typeof identitySchema>;

/** Whether this version fully understands `raw`: it validates and its writer's schema is not newer. */
export function understood(raw: unknown): SessionRecord | null {
  const parsed = sessionRecordSchema.safeParse(raw);
  return parsed.success && (parsed.data.schemaVersion ?? 1) <= SESSION_SCHEMA_VERSION ? parsed.data : null;
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
