/**
 * The input of a durable job started with `stdin: true`: a FIFO, `sessions/<id>/stdin`
 * (0600), whose read end is the job's stdin and whose write end the job's supervisor keeps
 * open, so the job sees no EOF between writers. Any host may write to it (the input
 * outlives the host that started it, and each CLI invocation is a new host). Closing
 * writes `stdin-closed` beside it, which every later write honours, and sends SIGUSR1 to
 * the supervisor, which closes its write end: the job reads EOF once no writer is left.
 * The supervisor also closes it when the job ends, so a background reader gets EOF too.
 *
 * Writes behave as a pipe's do (see `input.ts`): each starts after the writes and the close
 * asked for before it, waits for a job that reads, and fails with `WRITE_TIMEOUT` once the
 * job took none of its bytes for the write's timeout, with `written` on every failure.
 *
 * Windows has neither FIFOs nor SIGUSR1: the supervisor serves a named pipe,
 * `\\.\pipe\procward-<session id>-stdin` (one instance, local clients, this user only;
 * see the supervisor's `stdinpipe.rs`), and copies each connection's bytes into the job's
 * stdin, one writer after another. A write is one connection; `written` counts the bytes
 * the pipe took. Closing writes the same `stdin-closed` marker, then connects once without
 * writing: the supervisor looks for the marker after every connection (and before its
 * first), closes the job's stdin and the pipe. A pipe that is already gone at that moment
 * means the close was seen (or the job ended) already.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, writeSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { ProcwardError } from '../errors.js';
import { verdict } from '../processes.js';
import { readSupervisorIdentity, writePrivate } from '../persist/jobfiles.js';
import { writeFailed } from './input.js';
import type { Live } from './kind.js';

/** How long a write waits for a supervisor that has not opened the FIFO yet. */
const OPEN_WAIT_MS = 2_000;
/** Longest pause between two tries of a write the FIFO has no room for (milliseconds). */
const MAX_RETRY_MS = 50;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const closedMark = (fifo: string) => join(dirname(fifo), 'stdin-closed');

async function openFifo(live: Live): Promise<number> {
  const r = live.record;
  const path = r.stdinPath as string;
  for (const end = Date.now() + OPEN_WAIT_MS; ; ) {
    try {
      const fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
      if (!fstatSync(fd).isFIFO()) {
        closeSync(fd);
        throw new ProcwardError('NO_STDIN', `${path} is not the FIFO procward made; not writing to it`);
      }
      return fd;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // ENXIO: no reader. Right after the spawn the supervisor may not have opened it yet.
      if (code === 'ENXIO' && r.status === 'running' && Date.now() < end && Date.now() - r.startedAt < OPEN_WAIT_MS) {
        await sleep(10);
        continue;
      }
      if (code === 'ENXIO' || code === 'ENOENT') throw writeFailed('SESSION_EXITED', `${r.id} no longer reads its stdin`, 0);
      throw err;
    }
  }
}

/** Per session: its last input step, and how many of its writes have failed so far. */
const queues = new WeakMap<Live, { last: Promise<unknown>; failures: number }>();

/**
 * Runs `step` once every input step asked for before it on this session has ended, so
 * writes and the close keep the order they were asked in. A write (`isWrite`) queued while
 * an earlier write was waiting fails with `written: 0` when that one failed: nothing of it
 * is sent, so the job gets a prefix of what was written.
 */
export function inOrder<T>(live: Live, isWrite: boolean, step: () => Promise<T>): Promise<T> {
  const q = queues.get(live) ?? { last: Promise.resolve(), failures: 0 };
  queues.set(live, q);
  const failuresBefore = q.failures;
  const run = q.last.then(async () => {
    if (isWrite && q.failures > failuresBefore) throw writeFailed('WRITE_TIMEOUT', `${live.record.id}: not written, an earlier write to its stdin failed`, 0, { dropped: true });
    try {
      return await step();
    } catch (err) {
      if (isWrite) q.failures++;
      throw err;
    }
  });
  q.last = run.catch(() => {});
  return run;
}

/**
 * Writes all of `data`, never blocking the event loop: a job that reads slowly is waited
 * for, one that takes none of it for `timeoutMs` fails the write. Errors (each with
 * `written`, see `input.ts`): `STDIN_CLOSED` (after `closeFifo`), `SESSION_EXITED` (nobody
 * reads the FIFO any more), `WRITE_TIMEOUT` (the job is not reading).
 */
export async function writeFifo(live: Live, data: string, timeoutMs: number): Promise<{ id: string; bytes: number }> {
  const r = live.record;
  if (existsSync(closedMark(r.stdinPath as string))) throw writeFailed('STDIN_CLOSED', `${r.id}: its stdin was closed`, 0);
  const bytes = Buffer.from(data, 'utf8');
  if (process.platform === 'win32') return writePipe(live, bytes, timeoutMs);
  const fd = await openFifo(live);
  let written = 0;
  const of = () => `${written} of ${bytes.length} bytes written`;
  try {
    let progressAt = Date.now();
    let pause = 1;
    while (written < bytes.length) {
      try {
        written += writeSync(fd, bytes, written);
        progressAt = Date.now();
        pause = 1;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') throw writeFailed('SESSION_EXITED', `${r.id} no longer reads its stdin: it exited or closed it (${of()})`, written);
        if (code !== 'EAGAIN') throw writeFailed('EIO', `${r.id}: writing its stdin FIFO: ${(err as Error).message} (${of()})`, written);
        if (Date.now() - progressAt >= timeoutMs) {
          throw writeFailed('WRITE_TIMEOUT', `${r.id} took none of its input for ${timeoutMs} ms: it is not reading its stdin (${of()})`, written);
        }
        await sleep(pause);
        pause = Math.min(pause * 2, MAX_RETRY_MS);
      }
    }
  } finally {
    closeSync(fd);
  }
  return { id: r.id, bytes: bytes.length };
}

/**
 * Closes the job's input for good (see the module docs). SIGUSR1 goes only to the
 * supervisor that recorded itself in the session's own `supervisor.json` with the identity
 * the record names, while it is `current`, and never to PID 1 or this host (a record is
 * untrusted input: SIGUSR1 would start Node's inspector in a host).
 */
export async function closeFifo(live: Live): Promise<{ id: string; closed: true }> {
  const r = live.record;
  const fifo = r.stdinPath as string;
  writePrivate(closedMark(fifo), `${Date.now()}\n`);
  if (process.platform === 'win32') return closePipe(live);
  const own = readSupervisorIdentity(join(dirname(fifo), 'supervisor.json'));
  const id = r.identity;
  const same = id !== null && own !== null && own.pid === id.pid && own.startTime === id.startTime && own.bootId === id.bootId;
  if (same && id.pid > 1 && id.pid !== process.pid && id.pid !== process.ppid && verdict(id) === 'current') process.kill(id.pid, 'SIGUSR1');
  return { id: r.id, closed: true };
}

/** Windows: the named pipe the supervisor serves as the job's stdin (its session directory's name is the session id). */
export function stdinPipeName(stdinPath: string): string {
  return `\\\\.\\pipe\\procward-${basename(dirname(stdinPath))}-stdin`;
}

/** Bytes handed to the pipe at a time: each one's completion is progress. */
const PIPE_CHUNK = 64 * 1024;

/**
 * A connection to the pipe, for writing only: the server never writes, so the read side ends
 * at once, which must not end the write side (`allowHalfOpen`). Errors after the connect
 * reach the writes' callbacks; the listener kept here only stops them from being thrown.
 */
function connectOnce(name: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ path: name, allowHalfOpen: true });
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.on('error', () => {});
      resolve(socket);
    });
  });
}

/** Connects to the job's stdin pipe, waiting for a supervisor that has not created it yet (as `openFifo`). */
async function connectPipe(live: Live): Promise<Socket> {
  const r = live.record;
  const name = stdinPipeName(r.stdinPath as string);
  for (const end = Date.now() + OPEN_WAIT_MS; ; ) {
    try {
      // A pipe busy with another writer is waited for by libuv (WaitNamedPipe).
      return await connectOnce(name);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && r.status === 'running' && Date.now() < end && Date.now() - r.startedAt < OPEN_WAIT_MS) {
        await sleep(10);
        continue;
      }
      if (code === 'ENOENT') throw writeFailed('SESSION_EXITED', `${r.id} no longer reads its stdin`, 0);
      throw writeFailed('EIO', `${r.id}: connecting to its stdin pipe: ${(err as Error).message}`, 0);
    }
  }
}

/** One chunk into the pipe: resolves once the pipe took it, rejects on an error or after `timeoutMs`. */
function writeChunk(socket: Socket, chunk: Buffer, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })), timeoutMs);
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(err);
    };
    socket.once('error', fail);
    socket.write(chunk, (err) => {
      clearTimeout(timer);
      socket.off('error', fail);
      if (err) reject(err);
      else resolve();
    });
  });
}

/** Windows: `writeFifo` through the named pipe (see the module docs). */
async function writePipe(live: Live, bytes: Buffer, timeoutMs: number): Promise<{ id: string; bytes: number }> {
  const r = live.record;
  const socket = await connectPipe(live);
  let written = 0;
  const of = () => `${written} of ${bytes.length} bytes written`;
  try {
    while (written < bytes.length) {
      const chunk = bytes.subarray(written, written + PIPE_CHUNK);
      try {
        await writeChunk(socket, chunk, timeoutMs);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ETIMEDOUT') throw writeFailed('WRITE_TIMEOUT', `${r.id} took none of its input for ${timeoutMs} ms: it is not reading its stdin (${of()})`, written);
        if (code === 'EPIPE' || code === 'ECONNRESET' || code === 'EOF') throw writeFailed('SESSION_EXITED', `${r.id} no longer reads its stdin: it exited or closed it (${of()})`, written);
        throw writeFailed('EIO', `${r.id}: writing its stdin pipe: ${(err as Error).message} (${of()})`, written);
      }
      written += chunk.length;
    }
  } finally {
    // The end of the connection is the end of this write for the supervisor.
    socket.destroySoon();
  }
  return { id: r.id, bytes: bytes.length };
}

/** Windows: wakes the supervisor so that it sees the `stdin-closed` marker (see the module docs). */
async function closePipe(live: Live): Promise<{ id: string; closed: true }> {
  const r = live.record;
  try {
    const socket = await connectOnce(stdinPipeName(r.stdinPath as string));
    await new Promise<void>((resolve) => socket.end(resolve));
    socket.destroy();
  } catch {
    // No pipe: the supervisor closed it already (it saw the marker, or the job ended).
  }
  return { id: r.id, closed: true };
}
