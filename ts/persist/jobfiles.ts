/**
 * The files of a session, in `<stateDir>/sessions/<id>/` (directory 0700, files 0600):
 *
 * - `session.json`: the session record as it was just before the spawn, so a job started
 *   by a host that crashed before its checkpoint write is still found (see `persist/recovery.ts`);
 * - `output.log` (and `output.log.1`, `log-state.json`): merged stdout and stderr of a
 *   durable job, copied there by its supervisor and rotated by parts (see `output/durablelog.ts`);
 * - `supervisor.json`: `{ pid, startTime, bootId }` of the durable job's supervisor,
 *   written by the supervisor itself once the job runs, with the job's own identity under
 *   `job` (same shape; absent from supervisors of earlier versions);
 * - `exit.json`: written by the supervisor when the job ends (one write ending in a
 *   newline; a reader takes a shorter file for "not yet"):
 *   `{"code":7,"signal":null,"exitedAt":<ms since the epoch>}` or `{"code":null,"signal":9,…}`,
 *   with `"timedOut":true` when the supervisor killed the job at its deadline;
 * - `stdin`: a durable job's input FIFO, when it was started with `stdin: true`;
 * - `kill-requested`: written before procward signals the job, so any host that then sees
 *   the job gone records it as `killed`, not `exited`.
 *
 * Everything here is untrusted input. Paths come from the session id, never from a record.
 * Files are read without following a symlink (`O_NOFOLLOW`) and written by a temporary file
 * and a rename (never through a link); `sessions` and `sessions/<id>` must be real
 * directories before anything is created, written or removed below them. Node has no
 * `openat`, so a component could still be swapped between the check and the use; the state
 * directory is owner-only (see `ensureStateDir`), so only this user could do that.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { ProcwardError } from '../errors.js';
import { native } from '../native.js';
import { identitySchema, MAX_TIME_MS, type RecordedIdentity } from '../session/record.js';

export interface JobFiles {
  dir: string;
  metaPath: string;
  logPath: string;
  exitPath: string;
  supervisorPath: string;
  killMarkPath: string;
  stdinPath: string;
}

/**
 * Names a session's files without touching the disk. Every path comes from the session id
 * (never from a record), so a record cannot point procward at a file outside its directory.
 */
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

/**
 * Whether `path` is a directory itself, not a symlink to one. Node has no `openat`, so the
 * components below the state directory (`sessions`, `sessions/<id>`) are checked one by
 * one; the state directory is owner-only (see `ensureStateDir`), so nobody else can swap a
 * component between the check and its use.
 */
function isRealDir(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Creates `path` (0700) unless it exists; throws `STATE_DIR_UNTRUSTED` when it is a symlink or not a directory. */
function realDir(path: string): void {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  if (!isRealDir(path)) throw new ProcwardError('STATE_DIR_UNTRUSTED', `${path} is a symlink or not a directory; refusing to use it`, { path });
}

/** Creates the session directory (0700, and `sessions/` when missing) and names its files. */
export function jobFiles(stateDir: string, sessionId: string): JobFiles {
  const files = sessionFiles(stateDir, sessionId);
  realDir(dirname(files.dir));
  realDir(files.dir);
  return files;
}

/**
 * Creates `sessions/` (0700) when missing and names a session's files, leaving its own
 * directory to whoever writes its first file (a durable job's supervisor, see
 * `session/durable.ts`). Throws `STATE_DIR_UNTRUSTED` when `sessions` is a symlink or not
 * a directory.
 */
export function filesBelowSessions(stateDir: string, sessionId: string): JobFiles {
  const files = sessionFiles(stateDir, sessionId);
  realDir(dirname(files.dir));
  return files;
}

/** Ids of the session directories present in the state directory (none when `sessions` is a symlink). */
export function sessionDirs(stateDir: string): string[] {
  const sessions = join(stateDir, 'sessions');
  if (!isRealDir(sessions)) return [];
  try {
    return readdirSync(sessions);
  } catch {
    return [];
  }
}

/**
 * Removes a session's directory (after pruning, or a failed spawn). Only a real directory
 * below a real `sessions` directory is removed; a symlink in either place is left alone
 * (`rm` then never follows a link below them).
 */
export function removeSessionDir(stateDir: string, sessionId: string): void {
  const { dir } = sessionFiles(stateDir, sessionId);
  if (!isRealDir(dirname(dir)) || !isRealDir(dir)) return;
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Writes a small private file (0600) synchronously, without following a link: the text goes
 * to a new temporary file in the same directory (`O_EXCL | O_NOFOLLOW`), which then replaces
 * `path` by a rename. A symlink or hard link at `path` is replaced, never written through.
 * The file's directory and its parent (`sessions/<id>` and `sessions`) must be real
 * directories: `STATE_DIR_UNTRUSTED` otherwise.
 */
export function writePrivate(path: string, text: string): void {
  const dir = dirname(path);
  for (const d of [dir, dirname(dir)]) {
    if (!isRealDir(d)) throw new ProcwardError('STATE_DIR_UNTRUSTED', `${d} is a symlink or not a directory; refusing to write ${path}`, { path: d });
  }
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeFileSync(fd, text);
  } catch (err) {
    closeSync(fd);
    unlinkSync(temp);
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(temp, path);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

/**
 * {@link writePrivate} on the thread pool: the same checks, temporary file and rename, so
 * that many records (the ends of a bulk kill) are written side by side, not one after
 * another on the event loop (replacing a file costs 1-5 ms on a busy ext4 disk: the rename
 * over an existing file makes it allocate the new file's blocks).
 */
export async function writePrivateAsync(path: string, text: string): Promise<void> {
  const dir = dirname(path);
  for (const d of [dir, dirname(dir)]) {
    if (!isRealDir(d)) throw new ProcwardError('STATE_DIR_UNTRUSTED', `${d} is a symlink or not a directory; refusing to write ${path}`, { path: d });
  }
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      await handle.writeFile(text);
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** Most bytes {@link readPrivate} reads: records, exit and state files are a few KiB. */
export const MAX_PRIVATE_FILE_BYTES = 1024 * 1024;

/**
 * Why a file opened below the state directory is not read, or `null` when it may be: it
 * must be a regular file (not a FIFO, device, socket or directory) with one link. A hard
 * link planted at a session file's name would show another file of this user's.
 */
export function notPrivateFile(st: { isFile(): boolean; nlink: number | bigint }): string | null {
  if (!st.isFile()) return 'is not a regular file';
  if (Number(st.nlink) !== 1) return `has ${st.nlink} hard links (a session file has one)`;
  return null;
}

/**
 * Reads a small file below the state directory without following a symlink at its name;
 * `null` when it cannot be read, is not a regular file with one link (see
 * {@link notPrivateFile}) or holds more than {@link MAX_PRIVATE_FILE_BYTES}.
 */
export function readPrivate(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    // A FIFO or a device in place of a record is not read (O_NONBLOCK kept the open from hanging).
    const st = fstatSync(fd);
    if (notPrivateFile(st) !== null || st.size > MAX_PRIVATE_FILE_BYTES) return null;
    const buf = Buffer.alloc(st.size);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('utf8');
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Replaces the paths a record names with the ones its session id gives (see
 * {@link sessionFiles}): a durable job's `logPath` and `exitPath`, and its `stdinPath`; a
 * record that named other paths gets a diagnostic. A sandbox session's far-side directory
 * is derived from its environment, so a recorded `sandboxDir` is dropped.
 */
export function confinePaths<R extends { id: string; durable: boolean; logPath: string | null; exitPath: string | null; stdinPath?: string | undefined; sandboxDir?: string | undefined; pidScope?: string | undefined }>(
  stateDir: string,
  record: R,
  diagnostics: string[],
): R {
  const local = record.durable && record.pidScope !== 'sandbox';
  // Most entries (pipe-mode jobs) name no path: no path is made for them (seven joins an
  // entry were a fifth of `open` on a large state directory).
  if (!local && record.logPath === null && record.exitPath === null && record.stdinPath === undefined) {
    if (record.sandboxDir !== undefined) delete record.sandboxDir;
    return record;
  }
  const files = sessionFiles(stateDir, record.id);
  const derived = { logPath: local ? files.logPath : null, exitPath: local ? files.exitPath : null };
  for (const key of ['logPath', 'exitPath'] as const) {
    if (record[key] !== null && record[key] !== derived[key]) diagnostics.push(`${record.id}: recorded ${key} ${JSON.stringify(record[key])} is not its session's own file; ignored`);
    record[key] = derived[key];
  }
  if (record.stdinPath !== undefined) {
    if (record.stdinPath !== files.stdinPath) diagnostics.push(`${record.id}: recorded stdinPath ${JSON.stringify(record.stdinPath)} is not its session's own FIFO; ignored`);
    if (local) record.stdinPath = files.stdinPath;
    else delete record.stdinPath;
  }
  delete record.sandboxDir;
  return record;
}

/** The supervisor's identity, or `null` when it has not written it (yet). */
export function readSupervisorIdentity(path: string): RecordedIdentity | null {
  return readSupervisorFile(path)?.supervisor ?? null;
}

/**
 * `supervisor.json`: the supervisor's identity and, from supervisors that record it, the
 * job's (`job`; an invalid one is left out). `null` when it is not written (yet) or not
 * an identity. Untrusted: the job can write its own session directory, so the job's
 * identity must be checked against the live system before it is believed (see `durable.ts`).
 */
export function readSupervisorFile(path: string): { supervisor: RecordedIdentity; job?: RecordedIdentity } | null {
  try {
    const raw = JSON.parse(readPrivate(path) ?? '') as { job?: unknown };
    const parsed = identitySchema.safeParse(raw);
    if (!parsed.success) return null;
    const job = identitySchema.safeParse(raw.job);
    return { supervisor: parsed.data, ...(job.success && { job: job.data }) };
  } catch {
    return null;
  }
}

/** Whether a kill was requested for the session (see the module docs). */
export function killRequested(files: JobFiles | null): boolean {
  if (files === null) return false;
  try {
    // Its presence is the message: a link there counts, and is never followed.
    lstatSync(files.killMarkPath);
    return true;
  } catch {
    return false;
  }
}

/** A recorded end: exit code or terminating signal name. */
export interface RecordedExit {
  exitCode: number | null;
  signal: string | null;
  /** When the job ended (ms since the epoch), when the exit file says so. */
  exitedAt?: number;
  /** The supervisor killed the job at its deadline (`"timedOut":true` in the exit file). */
  timedOut?: boolean;
}

/**
 * Whether the exit file at `path` says the job was killed at its deadline: read at once,
 * for an end that arrived without it (the reactor's exit event). False when it is missing,
 * not whole or says otherwise.
 */
export function exitFileTimedOut(path: string): boolean {
  const text = readPrivate(path);
  if (text === null || !text.endsWith('\n')) return false;
  try {
    return (JSON.parse(text) as { timedOut?: unknown }).timedOut === true;
  } catch {
    return false;
  }
}


/**
 * Opens a file below the state directory for reading: not through a symlink at its name
 * (`O_NOFOLLOW`), without hanging on a FIFO planted there (`O_NONBLOCK`), and only a
 * regular file with one link (see {@link notPrivateFile}). `null` when it does not exist;
 * throws `STATE_DIR_UNTRUSTED` for a symlink, anything but a regular file, or a hard link.
 * `unlinked`: a regular file with no link left is returned too (a rotated log part a
 * rotation unlinked between the open and the check; the caller sees `nlink` 0).
 */
export async function openPrivate(path: string, unlinked = false): Promise<FileHandle | null> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw new ProcwardError('STATE_DIR_UNTRUSTED', `${path} is a symlink; procward does not follow it`);
    throw err;
  }
  let why: string | null;
  try {
    const st = await handle.stat();
    why = unlinked && st.isFile() && st.nlink === 0 ? null : notPrivateFile(st);
  } catch (err) {
    await handle.close();
    throw err;
  }
  if (why === null) return handle;
  await handle.close();
  throw new ProcwardError('STATE_DIR_UNTRUSTED', `${path} ${why}; procward does not read it`);
}

/**
 * Reads the exit file: `null` when it does not exist (yet); `invalid` (with the reason)
 * when it exists but does not hold an exit code 0-255 or a signal 1-64.
 */
export async function readExitFile(path: string): Promise<RecordedExit | { invalid: string } | null> {
  let text: string;
  try {
    const handle = await openPrivate(path);
    if (!handle) return null;
    try {
      // One short JSON line: no more than 4 KiB is read of whatever sits there.
      const buf = Buffer.alloc(4096);
      const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
      text = buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (err instanceof ProcwardError) return { invalid: err.message };
    return null;
  }
  // The supervisor writes it in one go ending with a newline: shorter is not written yet.
  if (!text.endsWith('\n')) return null;
  try {
    const data = JSON.parse(text) as { code?: unknown; signal?: unknown; exitedAt?: unknown; timedOut?: unknown };
    const { code, signal } = data;
    const at = {
      ...(Number.isSafeInteger(data.exitedAt) && (data.exitedAt as number) > 0 && (data.exitedAt as number) <= MAX_TIME_MS && { exitedAt: data.exitedAt as number }),
      ...(data.timedOut === true && { timedOut: true }),
    };
    if (Number.isInteger(code) && (code as number) >= 0 && (code as number) <= 255 && signal == null) return { exitCode: code as number, signal: null, ...at };
    if (Number.isInteger(signal) && (signal as number) >= 1 && (signal as number) <= 64 && code == null) {
      return { exitCode: null, signal: native.signalName(signal as number), ...at };
    }
  } catch {}
  return { invalid: `${path} does not hold an exit status: ${JSON.stringify(text.slice(0, 80))}` };
}
