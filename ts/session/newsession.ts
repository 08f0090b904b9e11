/**
 * What a new session is made of: `spawn`'s arguments checked (before anything starts or
 * is written), how it runs, and its first record.
 */
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { ProcwardError } from '../errors.js';
import type { WriterIdentity } from '../persist/writer.js';
import { childEnvironment, shellCommand, validateCommand } from '../policy/environment.js';
import { checkPatterns } from '../policy/notifications.js';
import { redactCommand } from '../policy/redact.js';
import type { ConfiguredEnvironments } from '../remote/configured.js';
import type { RegistryOptions, StartOptions } from '../types.js';
import { newSessionId } from './ids.js';
import type { StartSpec } from './kind.js';
import { SESSION_SCHEMA_VERSION, type SessionRecord } from './record.js';
import { checkSpawnOptions, MAX_TIMEOUT_MS } from './spawnoptions.js';

/** What the registry contributes to a new session. */
export interface SpawnContext {
  options: RegistryOptions;
  /** Whether the registry has a state directory (durable jobs need one). */
  hasStateDir: boolean;
  /** The checkpoint's path when a newer procward wrote it (this host then starts nothing). */
  newerCheckpoint: string | null;
  environments: ConfiguredEnvironments;
  writer: WriterIdentity;
}

/**
 * Longest command a host job takes, in bytes of UTF-8 (1 MiB), the core's limit on every
 * platform. Over 64 KiB the shell reads it through an inherited descriptor, not `-c` (see
 * the core's `script`); on Windows cmd.exe's 8191 characters come first.
 */
export const MAX_COMMAND_BYTES = 1024 * 1024;

export { MAX_TIMEOUT_MS } from './spawnoptions.js';

/**
 * Checks `spawn`'s arguments and returns how the job starts and its first record (status
 * `running`, no PID yet). Errors: `INVALID_ARGUMENT` (see `ProcessRegistry.spawn`),
 * `ENOENT` (a host cwd that is not a directory), `SESSION_READ_ONLY`.
 */
export function newSession(command: string, opts: StartOptions, ctx: SpawnContext): { spec: StartSpec; record: SessionRecord } {
  const { options } = ctx;
  validateCommand(command);
  checkSpawnOptions(opts);
  if (ctx.newerCheckpoint !== null) throw new ProcwardError('SESSION_READ_ONLY', `${ctx.newerCheckpoint} was written by a newer procward: this host only reads it and starts nothing`);
  // A PTY closes with the host, so PTY sessions are never durable by default.
  const durable = opts.durable ?? (opts.pty ? false : (options.durable ?? ctx.hasStateDir));
  if (durable && !ctx.hasStateDir) {
    throw new ProcwardError('INVALID_ARGUMENT', 'durable jobs need a registry opened with a stateDir');
  }
  if (durable && opts.pty) throw new ProcwardError('INVALID_ARGUMENT', 'a PTY session cannot be durable: the terminal closes with the host');
  for (const key of ['cols', 'rows'] as const) {
    const v = opts.pty?.[key];
    if (v !== undefined && !(Number.isInteger(v) && v >= 1 && v <= 65535)) throw new ProcwardError('INVALID_ARGUMENT', `pty.${key} must be an integer from 1 to 65535, got ${String(v)}`);
  }
  const { timeoutMs } = opts;
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs >= 1 && timeoutMs <= MAX_TIMEOUT_MS)) {
    throw new ProcwardError('INVALID_ARGUMENT', `timeoutMs must be an integer from 1 to ${MAX_TIMEOUT_MS} (milliseconds), got ${String(timeoutMs)}`);
  }
  const env = childEnvironment(process.env, opts.env, opts.allowEnv);
  const watchPatterns = checkPatterns(opts.watchPatterns);
  // A sandbox's cwd is a path on the far side; only a host cwd is checked here.
  const sandbox = opts.environment !== undefined ? ctx.environments.forSpawn(opts.environment) : undefined;
  // Checked before anything starts or is written (the core checks it again); a sandbox's
  // command travels in a script on the far shell's stdin instead.
  const commandBytes = Buffer.byteLength(shellCommand(command, options.shell));
  if (!opts.environment && commandBytes > MAX_COMMAND_BYTES) {
    throw new ProcwardError('INVALID_ARGUMENT', `the command is ${commandBytes} bytes long; procward takes at most ${MAX_COMMAND_BYTES} (1 MiB; pass longer scripts in a file)`);
  }
  const cwd = opts.environment ? (opts.cwd ?? '~') : opts.cwd !== undefined && isAbsolute(opts.cwd) ? resolvePath(opts.cwd) : resolvePath(hostCwd(), opts.cwd ?? '.');
  if (!opts.environment && (!existsSync(cwd) || !statSync(cwd).isDirectory())) {
    throw new ProcwardError('ENOENT', `working directory ${cwd} does not exist or is not a directory`);
  }
  const spec = {
    command,
    env,
    durable,
    ...(sandbox && { sandbox }),
    ...(opts.cwd !== undefined && { cwd: opts.cwd }),
    ...(opts.env && { vars: opts.env }),
    ...(opts.stdin && { stdin: true }),
    ...(opts.pty && { pty: opts.pty }),
    ...(opts.outliveHost && { outliveHost: true }),
  };
  const now = Date.now();
  const record: SessionRecord = {
    schemaVersion: SESSION_SCHEMA_VERSION,
    id: newSessionId(),
    command: options.redact === false ? command : redactCommand(command),
    cwd,
    pid: null,
    identity: null,
    ...(opts.taskId !== undefined && { taskId: opts.taskId }),
    ...(opts.ownerTaskId !== undefined && { ownerTaskId: opts.ownerTaskId }),
    ...(opts.sessionKey !== undefined && { sessionKey: opts.sessionKey }),
    startedAt: now,
    exitedAt: null,
    status: 'running',
    exitCode: null,
    signal: null,
    reason: null,
    terminationSource: null,
    durable,
    // Filled by the kind of job (a durable job's files).
    logPath: null,
    exitPath: null,
    writer: ctx.writer,
    updatedAt: now,
    ...(opts.notifyOnComplete && { notifyOnComplete: true, notificationDelivered: false }),
    ...(timeoutMs !== undefined && { timeoutMs }),
    ...(watchPatterns.length > 0 && { watchPatterns, watchFired: 0 }),
  };
  return { spec, record };
}

/**
 * The host's working directory (`process.cwd()`, libuv's `uv_cwd`), which a job without a
 * `cwd` starts in. Throws `ENOENT` saying so, and what to pass instead, when it no longer
 * exists (deleted or moved away under the host).
 */
function hostCwd(): string {
  try {
    return process.cwd();
  } catch {
    throw new ProcwardError(
      'ENOENT',
      "the host's own working directory no longer exists (it was deleted or moved), so a job without a working directory has none to start in: pass cwd (the tool's workdir, the CLI's --cwd) naming a directory that exists",
    );
  }
}
