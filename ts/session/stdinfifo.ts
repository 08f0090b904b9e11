/**
 * The input of a durable job started with `stdin: true`: a FIFO, `sessions/<id>/stdin`
 * (0600), whose read end is the job's stdin and whose write end the job's supervisor keeps
 * open, so the job sees no EOF between writers. Any host may write to it (the input
 * outlives the host that started it, and each CLI invocation is a new host). Closing
 * writes `stdin-closed` beside it, which every later write honours, and sends SIGUSR1 to
 * the supervisor, which closes its write end: the job reads EOF once no writer is left.
 * The supervisor also closes it when the job ends, so a background reader gets EOF too.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ProcwardError } from '../errors.js';
import { verdict } from '../processes.js';
import { readSupervisorIdentity, writePrivate } from '../persist/jobfiles.js';
import type { Live } from './kind.js';

/** How long a write waits for a supervisor that has not opened the FIFO yet. */
const OPEN_WAIT_MS = 2_000;
/** How long a write waits for a job that reads, but slower than it is written to. */
const STALL_MS = 1_000;

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
      if (code === 'ENXIO' || code === 'ENOENT') throw new ProcwardError('SESSION_EXITED', `${r.id} no longer reads its stdin`);
      throw err;
    }
  }
}

/**
 * Writes all of `data`, never blocking the event loop: a job that reads slowly is waited
 * for, one that stops reading for a second fails the write. Errors: `STDIN_CLOSED` (after
 * `closeFifo`), `SESSION_EXITED` (nobody reads the FIFO any more), `EAGAIN` (the job is not
 * reading; `details.written` says how many bytes went in, so a retry can resume).
 */
export async function writeFifo(live: Live, data: string): Promise<{ id: string; bytes: number }> {
  const r = live.record;
  if (existsSync(closedMark(r.stdinPath as string))) throw new ProcwardError('STDIN_CLOSED', `${r.id}: its stdin was closed`);
  const bytes = Buffer.from(data, 'utf8');
  const fd = await openFifo(live);
  try {
    let written = 0;
    let progressAt = Date.now();
    while (written < bytes.length) {
      try {
        written += writeSync(fd, bytes, written);
        progressAt = Date.now();
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') throw new ProcwardError('SESSION_EXITED', `${r.id} no longer reads its stdin`);
        if (code !== 'EAGAIN') throw err;
        if (Date.now() - progressAt > STALL_MS) {
          throw new ProcwardError('EAGAIN', `${r.id} is not reading its stdin (${written} of ${bytes.length} bytes written)`, { written });
        }
        await sleep(5);
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
export function closeFifo(live: Live): { id: string; closed: true } {
  const r = live.record;
  const fifo = r.stdinPath as string;
  writePrivate(closedMark(fifo), `${Date.now()}\n`);
  const own = readSupervisorIdentity(join(dirname(fifo), 'supervisor.json'));
  const id = r.identity;
  const same = id !== null && own !== null && own.pid === id.pid && own.startTime === id.startTime && own.bootId === id.bootId;
  if (same && id.pid > 1 && id.pid !== process.pid && id.pid !== process.ppid && verdict(id) === 'current') process.kill(id.pid, 'SIGUSR1');
  return { id: r.id, closed: true };
}
