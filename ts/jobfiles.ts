/**
 * The files of a session, in `<stateDir>/sessions/<id>/` (directory 0700, files 0600):
 *
 * - `session.json`: the session record as it was just before the spawn, so a job started
 *   by a host that crashed before its checkpoint write is still found (see `recovery.ts`);
 * - `output.log` (and `output.log.1`, `log-state.json`): merged stdout and stderr of a
 *   durable job, copied there by its supervisor and rotated by parts (see `durablelog.ts`);
 * - `supervisor.json`: `{ pid, startTime, bootId }` of the durable job's supervisor,
 *   written by the supervisor itself when it starts;
 * - `exit.json`: written by the supervisor when the job ends (one write ending in a
 *   newline; a reader takes a shorter file for "not yet"):
 *   `{"code":7,"signal":null,"exitedAt":<ms since the epoch>}` or `{"code":null,"signal":9,…}`;
 * - `stdin`: a durable job's input FIFO, when it was started with `stdin: true`;
 * - `kill-requested`: written before procward signals the job, so any host that then sees
 *   the job gone records it as `killed`, not `exited`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { native } from './native.js';
import { identitySchema, type RecordedIdentity } from './session.js';

export interface JobFiles {
  dir: string;
  metaPath: string;
  logPath: string;
  exitPath: string;
  supervisorPath: string;
  killMarkPath: string;
  stdinPath: string;
}

/** Names a session's files without touching the disk. */
export function sessionFiles(stateDir: string, sessionId: string): JobFiles {
  const dir = join(stateDir, 'sessions', sessionId);
  return {
    dir,
    metaPath: join(dir, 'session.json'),
    logPath: join(dir, 'output.log'),
    exitPath: join(dir, 'exit.json'),
    supervisorPath: join(dir, 'supervisor.json'),
    killMarkPath: join(dir, 'kill-requested'),
    stdinPath: join(dir, 'stdin'),
  };
}

/** Creates the session directory (0700) and names its files. */
export function jobFiles(stateDir: string, sessionId: string): JobFiles {
  const files = sessionFiles(stateDir, sessionId);
  mkdirSync(files.dir, { recursive: true, mode: 0o700 });
  return files;
}

/** Ids of the session directories present in the state directory. */
export function sessionDirs(stateDir: string): string[] {
  try {
    return readdirSync(join(stateDir, 'sessions'));
  } catch {
    return [];
  }
}

/** Removes a session's directory (after pruning, or a failed spawn). */
export function removeSessionDir(stateDir: string, sessionId: string): void {
  rmSync(sessionFiles(stateDir, sessionId).dir, { recursive: true, force: true });
}

/** Writes a small private file synchronously (0600). */
export function writePrivate(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o600 });
}

/** The supervisor's identity, or `null` when it has not written it (yet). */
export function readSupervisorIdentity(path: string): RecordedIdentity | null {
  try {
    const parsed = identitySchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Whether a kill was requested for the session (see the module docs). */
export function killRequested(files: JobFiles | null): boolean {
  return files !== null && existsSync(files.killMarkPath);
}

/** A recorded end: exit code or terminating signal name. */
export interface RecordedExit {
  exitCode: number | null;
  signal: string | null;
  /** When the job ended (ms since the epoch), when the exit file says so. */
  exitedAt?: number;
}

/**
 * Reads the exit file: `null` when it does not exist (yet); `invalid` (with the reason)
 * when it exists but does not hold an exit code 0-255 or a signal 1-64.
 */
export async function readExitFile(path: string): Promise<RecordedExit | { invalid: string } | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return null;
  }
  // The supervisor writes it in one go ending with a newline: shorter is not written yet.
  if (!text.endsWith('\n')) return null;
  try {
    const data = JSON.parse(text) as { code?: unknown; signal?: unknown; exitedAt?: unknown };
    const { code, signal } = data;
    const at = Number.isSafeInteger(data.exitedAt) && (data.exitedAt as number) > 0 ? { exitedAt: data.exitedAt as number } : {};
    if (Number.isInteger(code) && (code as number) >= 0 && (code as number) <= 255 && signal == null) return { exitCode: code as number, signal: null, ...at };
    if (Number.isInteger(signal) && (signal as number) >= 1 && (signal as number) <= 64 && code == null) {
      return { exitCode: null, signal: native.signalName(signal as number), ...at };
    }
  } catch {}
  return { invalid: `${path} does not hold an exit status: ${JSON.stringify(text.slice(0, 80))}` };
}
