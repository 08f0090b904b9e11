/**
 * The files of a session, in `<stateDir>/sessions/<id>/` (directory 0700, files 0600):
 *
 * - `session.json`: the session record as it was just before the spawn, so a job started
 *   by a host that crashed before its checkpoint write is still found (see `recovery.ts`);
 * - `output.log`: merged stdout and stderr of a durable job, appended by the job itself;
 * - `supervisor.json`: `{ pid, startTime, bootId }` of the durable job's supervisor,
 *   written by the supervisor itself when it starts;
 * - `exit.json`: written atomically by the supervisor when the job ends:
 *   `{"code":7,"signal":null}` or `{"code":null,"signal":9}`;
 * - `kill-requested`: written before procward signals the job, so any host that then sees
 *   the job gone records it as `killed`, not `exited`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type FileHandle, open, readFile } from 'node:fs/promises';
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
  try {
    const data = JSON.parse(text) as { code?: unknown; signal?: unknown };
    const { code, signal } = data;
    if (Number.isInteger(code) && (code as number) >= 0 && (code as number) <= 255 && signal == null) return { exitCode: code as number, signal: null };
    if (Number.isInteger(signal) && (signal as number) >= 1 && (signal as number) <= 64 && code == null) {
      return { exitCode: null, signal: native.signalName(signal as number) };
    }
  } catch {}
  return { invalid: `${path} does not hold an exit status: ${JSON.stringify(text.slice(0, 80))}` };
}

/** Reads the whole log as text (lossy UTF-8); empty when it does not exist. */
export async function readLog(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
}

/** Reads the last `bytes` bytes of the log as text, dropping a partial first character. */
export async function readLogTail(path: string, bytes: number): Promise<string> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw err;
  }
  try {
    const { size } = await handle.stat();
    const start = Math.max(0, size - bytes);
    const buf = Buffer.alloc(size - start);
    await handle.read(buf, 0, buf.length, start);
    let text = buf.toString('utf8');
    if (start > 0) text = text.replace(/^\uFFFD+/, '');
    return text;
  } finally {
    await handle.close();
  }
}

/**
 * Reads the log from byte `offset` to its current end, stopping before a UTF-8 sequence
 * that is not complete yet; `next` is where the following read starts. A log that shrank
 * below `offset` is read again from the start.
 */
export async function readLogFrom(path: string, offset: number): Promise<{ text: string; next: number }> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch {
    return { text: '', next: offset };
  }
  try {
    const { size } = await handle.stat();
    const start = size < offset ? 0 : offset;
    const buf = Buffer.alloc(Math.min(size - start, 4 * 1024 * 1024));
    const { bytesRead } = await handle.read(buf, 0, buf.length, start);
    let end = bytesRead;
    for (let i = end - 1; i >= Math.max(0, end - 4); i--) {
      const b = buf[i] as number;
      if ((b & 0xc0) === 0x80) continue;
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
      if (i + need > end) end = i;
      break;
    }
    return { text: buf.subarray(0, end).toString('utf8'), next: start + end };
  } finally {
    await handle.close();
  }
}

/** Logs larger than this are paged by streaming instead of being read whole. */
export const LARGE_LOG_BYTES = 16 * 1024 * 1024;

/**
 * Pages a large log without reading it into memory: counts its lines and keeps the page's
 * lines plus up to `context` lines before them (so a secret that starts before the page is
 * still recognised by redaction). `offset` undefined means the last `limit` lines.
 */
export async function streamLogPage(path: string, opts: { offset?: number; limit: number; context: number }): Promise<{ lines: string[]; before: number; totalLines: number; offset: number }> {
  const { createReadStream } = await import('node:fs');
  const { StringDecoder } = await import('node:string_decoder');
  const decoder = new StringDecoder('utf8');
  const keep = opts.limit + opts.context;
  let partial = '';
  let index = 0;
  const ring: { i: number; line: string }[] = [];
  const take = (line: string) => {
    const i = index++;
    if (opts.offset === undefined) {
      ring.push({ i, line });
      if (ring.length > keep) ring.shift();
    } else if (i >= opts.offset - opts.context && i < opts.offset + opts.limit) {
      ring.push({ i, line });
    }
  };
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const parts = (partial + decoder.write(chunk as Buffer)).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) take(line);
  }
  partial += decoder.end();
  if (partial) take(partial);
  const totalLines = index;
  const offset = opts.offset ?? Math.max(0, totalLines - opts.limit);
  const lines = ring.filter((e) => e.i >= offset - opts.context && e.i < offset + opts.limit);
  return { lines: lines.map((e) => e.line), before: lines.filter((e) => e.i < offset).length, totalLines, offset };
}
