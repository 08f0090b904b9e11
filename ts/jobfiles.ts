/**
 * The files of a durable job, in `<stateDir>/sessions/<id>/`: `output.log` (merged stdout
 * and stderr, appended by the job itself) and `exit.json` (written atomically by
 * `procward-supervise` when the job ends: `{"code":7,"signal":null}` or
 * `{"code":null,"signal":9}`).
 */
import { mkdirSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { native } from './native.js';

export interface JobFiles {
  dir: string;
  logPath: string;
  exitPath: string;
}

/** Creates the session directory (0700) and names its files. */
export function jobFiles(stateDir: string, sessionId: string): JobFiles {
  const dir = join(stateDir, 'sessions', sessionId);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return { dir, logPath: join(dir, 'output.log'), exitPath: join(dir, 'exit.json') };
}

/** A recorded end: exit code or terminating signal name. */
export interface RecordedExit {
  exitCode: number | null;
  signal: string | null;
}

/** Reads the exit file; `null` when it does not exist (yet) or is unreadable. */
export async function readExitFile(path: string): Promise<RecordedExit | null> {
  try {
    const data = JSON.parse(await readFile(path, 'utf8')) as { code?: unknown; signal?: unknown };
    if (typeof data.code === 'number') return { exitCode: data.code, signal: null };
    if (typeof data.signal === 'number') return { exitCode: null, signal: native.signalName(data.signal) };
    return null;
  } catch {
    return null;
  }
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
  let handle;
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
