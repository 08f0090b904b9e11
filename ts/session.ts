/**
 * The session record: what procward knows about one background job. This shape is what
 * the checkpoint persists (see `checkpoint.ts`), so every field is plain JSON.
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

export const identitySchema = z.object({
  pid: z.number().int().positive(),
  startTime: z.string().regex(/^\d+$/),
  bootId: z.string().min(1),
});

export const sessionRecordSchema = z.object({
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
