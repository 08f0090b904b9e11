/**
 * The poller of a sandbox session: it reads the far-side log from a byte offset (never the
 * whole file again), keeps UTF-8 sequences whole across reads, notices the end through the
 * exit file, and backs off while the environment is slow or unreachable; the session is
 * reported lost only after a deadline, or at once when the environment says the far side is
 * gone for good (a container stopped or removed).
 *
 * A log replaced on the far side (a new inode, fewer bytes than were read, or other bytes
 * just before the offset) is read again from its start, after a line saying so: it is never
 * read on from the old offset. After the end the poller keeps reading the log while any of
 * the job's processes still run there (a background grandchild may write after the job
 * ended), at a slower pace, and stops once none is left.
 *
 * A kill from any host leaves its claim on the far side (see `KILL_CLAIM` in `farshell.ts`),
 * and the poller believes the claim: a `killed` file ends the session `killed` (the wrapper
 * may have recorded the job's own status, 143 or a trap's code: that status is the end's,
 * else the signal the claim names); while a `kill` file's deadline is ahead no
 * end is reported (neither the exit file's nor a vanished wrapper's); after it, with no
 * `killed`, the exit file and the wrapper decide as usual.
 *
 * A host that did not follow the job from its start reads the log up to its end when asked
 * for output ({@link SandboxPoller.readToEnd}): one round trip, the last bytes only.
 */
import { StringDecoder } from 'node:string_decoder';
import type { ExecutionEnvironment } from './environments.js';
import { CHECK_BYTES, type PollChunk, pollOnce } from './farpoll.js';

/** Callbacks of a {@link SandboxPoller}. */
export interface PollerEvents {
  /** Output, in order; after `exit` only what the job's remaining processes wrote late. */
  output(text: string): void;
  /** The wrapper's PID, when the poller learned it from the pid file. */
  pid?(pid: number): void;
  /** The job ended: its exit code, or (exit code null) the name of the signal that ended it; both null when the exit file said neither. */
  exit(code: number | null, signal: string | null): void;
  /**
   * A kill (of any host) ended the job. `signal`: the last signal the kill sent (the name
   * its `killed` file gives); `exit`: what the exit file says, when the wrapper wrote one
   * (a trap's own code after the kill's SIGTERM), else null.
   */
  killed(signal: string, exit: { exitCode: number | null; signal: string | null } | null): void;
  /** Bytes of the log left out by {@link SandboxPoller.readToEnd} (its `keep`), before the output that follows. */
  skipped?(bytes: number): void;
  /** The environment stayed unreachable past the deadline, or is gone for good. */
  lost(reason: string): void;
}

/**
 * Polls in a row that may fail while following late output before the poller gives up on it,
 * and how long they must span: on a loaded far side (or host) polls can fail for a while.
 */
const LATE_TRIES = 3;
const LATE_GIVE_UP_MS = 30_000;

/** Follows one sandbox session (see the module docs). */
export class SandboxPoller {
  private offset = 0;
  private decoder = new StringDecoder('utf8');
  /** The last bytes read (up to CHECK_BYTES), compared with the far side's at each poll. */
  private lastBytes = Buffer.alloc(0);
  private inode: string | null = null;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private stopped = false;
  private failingSince: number | null = null;
  private lastAttempt = 0;
  private deadPolls = 0;
  /** Failed polls in a row while following late output, and when the first of them failed. */
  private lateFailures = 0;
  private lateFailingSince = 0;
  private knownPid: number | null = null;
  private delay: number;
  /** The end was reported; the poller now follows late output only. */
  private ended = false;
  private readonly startedAt = Date.now();
  private running: Promise<void> | null = null;
  /** Every read of the log runs alone (the follower's polls and `readToEnd`): both move the offset. */
  private lock: Promise<void> = Promise.resolve();

  constructor(
    private readonly env: ExecutionEnvironment,
    private readonly dir: string,
    private readonly events: PollerEvents,
    private readonly opts: { intervalMs?: number; maxIntervalMs?: number; lostAfterMs?: number } = {},
  ) {
    this.delay = opts.intervalMs ?? 200;
  }

  /** Bytes of the remote log read so far. */
  get bytesRead(): number {
    return this.offset;
  }

  /** Follows the session from now on (until {@link stop}); until then the poller only reads on demand ({@link readToEnd}). */
  start(): void {
    this.started = true;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  /** One poll now (also used by `wait` to notice the end without waiting for the timer); nothing unless following. */
  tick(): Promise<void> {
    if (!this.started) return Promise.resolve();
    // While the environment is failing, waiters do not get to shorten the backoff.
    if (this.failingSince !== null && Date.now() - this.lastAttempt < this.delay) return this.running ?? Promise.resolve();
    this.running ??= this.pollNow().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Runs `fn` once every read before it is done. */
  private exclusive(fn: () => Promise<void>): Promise<void> {
    const run = this.lock.then(fn);
    this.lock = run.catch(() => undefined);
    return run;
  }

  /**
   * Reads the log up to its end now, for a host asked for output it has not followed: new
   * bytes beyond the last `keep` are left out (reported through `skipped`), and a log found
   * replaced is read again from its start. Output only: the end is the follower's to report.
   * Never throws: a far side that cannot be reached leaves the output as it was.
   */
  readToEnd(keep: number): Promise<void> {
    return this.exclusive(async () => {
      for (let i = 0; i < 3; i++) {
        let chunk: PollChunk;
        try {
          chunk = await pollOnce(this.env, this.dir, this.offset, { keep });
        } catch {
          return;
        }
        if (this.take(chunk) === 'done') return;
      }
    });
  }

  private pollNow(): Promise<void> {
    return this.exclusive(() => this.follow());
  }

  /**
   * Takes a poll's bytes: the PID, a replaced log (read again from its start), bytes left out
   * and new output. `more` when the log holds bytes not read yet (or was replaced).
   */
  private take(chunk: PollChunk): 'more' | 'done' {
    if (chunk.pid !== null && chunk.pid !== this.knownPid) {
      this.knownPid = chunk.pid;
      this.events.pid?.(chunk.pid);
    }
    if (this.replaced(chunk)) {
      this.offset = 0;
      this.lastBytes = Buffer.alloc(0);
      this.inode = chunk.inode;
      const rest = this.decoder.end();
      this.decoder = new StringDecoder('utf8');
      this.events.output(`${rest}\n[procward: the log on the far side was replaced; reading it again from its start]\n`);
      return 'more';
    }
    this.inode = chunk.inode ?? this.inode;
    let data = chunk.data;
    if (chunk.start > this.offset) {
      // The bytes between were left out: what was held of a character is gone, and so are
      // the continuation bytes of one cut at the new start.
      let cut = 0;
      while (cut < Math.min(3, data.length) && ((data[cut] as number) & 0xc0) === 0x80) cut++;
      this.decoder.end();
      this.decoder = new StringDecoder('utf8');
      this.lastBytes = Buffer.alloc(0);
      this.events.skipped?.(chunk.start - this.offset + cut);
      this.offset = chunk.start + cut;
      data = data.subarray(cut);
    }
    if (data.length > 0) {
      this.offset += data.length;
      this.lastBytes = Buffer.concat([this.lastBytes, data.subarray(-CHECK_BYTES)]).subarray(-CHECK_BYTES);
      const text = this.decoder.write(data);
      if (text) this.events.output(text);
    }
    return this.offset < chunk.size ? 'more' : 'done';
  }

  private async follow(): Promise<void> {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    let chunk: PollChunk;
    this.lastAttempt = Date.now();
    try {
      chunk = await pollOnce(this.env, this.dir, this.offset, { late: this.ended });
    } catch (err) {
      await this.failed(err as Error);
      return;
    }
    if (this.stopped) return;
    this.failingSince = null;
    this.lateFailures = 0;
    if (!this.ended) this.delay = this.opts.intervalMs ?? 200;
    if (this.take(chunk) === 'more') {
      this.schedule(0);
      return;
    }
    if (this.ended) {
      // Following late output: done once none of the job's processes is left.
      if (chunk.lingering === 0) return this.finishLate();
      this.delay = Math.min(this.delay * 2, this.opts.maxIntervalMs ?? 5000);
      this.schedule(this.delay);
      return;
    }
    // A kill's claim first (see the module docs): `killed` decides; a kill still within its
    // deadline holds off any other end.
    // A kill writes `killed` once nothing of the job is left: while the wrapper runs, the file is the job's own.
    if (chunk.killedBy !== null && !chunk.wrapperAlive) {
      this.ended = true;
      this.events.killed(chunk.killedBy, chunk.exited ? (chunk.exit ?? null) : null);
      this.schedule(this.delay);
      return;
    }
    if (chunk.kill === 'pending') {
      this.deadPolls = 0;
      this.schedule(this.delay);
      return;
    }
    if (chunk.exited) {
      this.ended = true;
      // An exit file that says neither a code nor a signal: the end is known, its status not.
      this.events.exit(chunk.exit?.exitCode ?? null, chunk.exit?.signal ?? null);
      // One more look, which counts the processes the job left running.
      this.schedule(this.delay);
      return;
    }
    // No exit file and no wrapper (killed with its job, or its directory removed): after a
    // second look, the session ended without a status.
    if (!chunk.wrapperAlive && (chunk.pid !== null || Date.now() - this.startedAt > (this.opts.lostAfterMs ?? 60_000))) {
      if (++this.deadPolls >= 2) {
        this.stop();
        this.events.lost(chunk.pid === null ? 'the job never started on the far side' : 'the job ended on the far side without an exit status');
        return;
      }
    } else {
      this.deadPolls = 0;
    }
    this.schedule(this.delay);
  }

  /** A log replaced since the last read: a new inode, fewer bytes than read, or other bytes before the offset. */
  private replaced(chunk: PollChunk): boolean {
    if (chunk.size < this.offset) return true;
    if (this.inode !== null && chunk.inode !== null && chunk.inode !== this.inode) return true;
    if (chunk.before.length !== Math.min(this.offset, CHECK_BYTES)) return true;
    // After bytes were left out, fewer than CHECK_BYTES may be known: compare what is.
    const n = Math.min(this.lastBytes.length, chunk.before.length);
    return !chunk.before.subarray(chunk.before.length - n).equals(this.lastBytes.subarray(this.lastBytes.length - n));
  }

  private finishLate(): void {
    const rest = this.decoder.end();
    if (rest) this.events.output(rest);
    this.stop();
  }

  private async failed(err: Error): Promise<void> {
    const now = Date.now();
    if (this.ended) {
      // Late output is best effort: a far side that stays unreachable for LATE_TRIES polls
      // in a row over LATE_GIVE_UP_MS has nothing more to say; a failed poll (a loaded far
      // side) is tried again.
      if (this.lateFailures++ === 0) this.lateFailingSince = now;
      if (this.lateFailures >= LATE_TRIES && now - this.lateFailingSince >= LATE_GIVE_UP_MS) this.finishLate();
      else this.schedule(this.delay);
      return;
    }
    const gone = await this.env.goneReason?.().catch(() => null);
    if (this.stopped) return;
    if (gone) {
      this.stop();
      this.events.lost(gone);
      return;
    }
    this.failingSince ??= now;
    if (now - this.failingSince > (this.opts.lostAfterMs ?? 60_000)) {
      this.stop();
      this.events.lost(`environment unreachable for ${Math.round((now - this.failingSince) / 1000)} s: ${err.message}`);
      return;
    }
    this.delay = Math.min(this.delay * 2, this.opts.maxIntervalMs ?? 5000);
    this.schedule(this.delay);
  }
}
