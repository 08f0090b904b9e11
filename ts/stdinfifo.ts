/**
 * The input of a durable job started with `stdin: true`: a FIFO, `sessions/<id>/stdin`
 * (0600), whose read end is the job's stdin and whose write end the job's supervisor keeps
 * open, so the job sees no EOF between writers. Any host may write to it (the input
 * outlives the host that started the job, and each CLI invocation is a new host); SIGUSR1
 * to the supervisor closes its write end, so the job reads EOF once no writer is left.
 */
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { ProcwardError } from './errors.js';
import { verdict } from './helpers.js';
import type { Live } from './live.js';

/** How long a write waits for a supervisor that has not opened the FIFO yet. */
const OPEN_WAIT_MS = 2_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Writes all of `data` without blocking. Errors: `SESSION_EXITED` (nobody reads the FIFO
 * any more), `EAGAIN` (the FIFO is full: the job is not reading its input).
 */
export async function writeFifo(live: Live, data: string): Promise<{ id: string; bytes: number }> {
  const r = live.record;
  const path = r.stdinPath as string;
  const bytes = Buffer.from(data, 'utf8');
  let fd: number | undefined;
  for (const end = Date.now() + OPEN_WAIT_MS; fd === undefined; ) {
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // ENXIO: no reader. Right after the spawn the supervisor may not have opened it yet.
      if (code === 'ENXIO' && r.status === 'running' && Date.now() < end && Date.now() - r.startedAt < OPEN_WAIT_MS) {
        await sleep(10);
        continue;
      }
      if (code === 'ENXIO' || code === 'ENOENT') throw new ProcwardError('SESSION_EXITED', `${r.id} no longer reads its stdin (it exited)`);
      throw err;
    }
  }
  try {
    let written = 0;
    while (written < bytes.length) {
      try {
        written += writeSync(fd, bytes, written);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') throw new ProcwardError('SESSION_EXITED', `${r.id} no longer reads its stdin (it exited)`);
        if (code === 'EAGAIN') throw new ProcwardError('EAGAIN', `${r.id} is not reading its stdin (${written} of ${bytes.length} bytes written)`);
        throw err;
      }
    }
  } finally {
    closeSync(fd);
  }
  return { id: r.id, bytes: bytes.length };
}

/** Asks the supervisor to close its write end (SIGUSR1), only while it is this session's. */
export function closeFifo(live: Live): { id: string; closed: true } {
  const r = live.record;
  if (!r.identity || verdict(r.identity) !== 'current') throw new ProcwardError('SESSION_EXITED', `${r.id} has exited; its stdin is closed`);
  process.kill(r.identity.pid, 'SIGUSR1');
  return { id: r.id, closed: true };
}
