/**
 * A durable job: started under `procward-supervise`, which copies its output to a log in
 * the session directory and records its exit status in `exit.json`, so the job outlives
 * its host. Any host follows it through those files: its output, its end, its stdin FIFO.
 * It has two identities, the job's and its supervisor's; the job's drives verdicts and
 * kills (see DESIGN section 3).
 */
import { existsSync } from 'node:fs';
import { ProcwardError } from '../errors.js';
import { supervisorPath } from '../native.js';
import { readLogFrom, readLogTail } from '../output/durablelog.js';
import { pageLogFile } from '../output/paging.js';
import { exitFileTimedOut, filesBelowSessions, type JobFiles, jobFiles, readExitFile, readSupervisorFile, type RecordedExit, sessionFiles } from '../persist/jobfiles.js';
import { type Identity, type KillReport, type Verdict, verdict } from '../processes.js';
import { isJobOf, namedJob } from './jobidentity.js';
import { leadsWithKeyMaterial } from '../policy/redact.js';
import { HostSession, unrecorded } from './host.js';
import type { WriteOptions } from '../types.js';
import type { LogOptions, LogPage, OutputText, RedactView, StartSpec, StopProbe } from './kind.js';
import { writeFailed, writeTimeoutMs } from './input.js';
import { closeFifo, inOrder, writeFifo } from './stdinfifo.js';

/** How long a recovered durable job may take to record its supervisor before it counts as lost. */
const SUPERVISOR_START_MS = 3_000;
/** Default of `logMaxBytes`: 64 MiB per durable session (two parts of 32 MiB). */
const LOG_MAX_BYTES = 64 * 1024 * 1024;
/** Longest record the supervisor takes on its stdin (a pipe's 64 KiB, with room; see the core's `spawn`). */
const SUPERVISOR_RECORD_BYTES = 60_000;
/** How long `spawn` waits for the supervisor to name the job it started (it does so right after the fork). */
const JOB_NAMED_MS = 5_000;

export class DurableSession extends HostSession {
  /**
   * Starts the job, then waits (at most {@link JOB_NAMED_MS}) for its supervisor to name
   * the job's own process, so that the summary `spawn` returns carries the job's `pid`.
   */
  async start(spec: StartSpec): Promise<void> {
    await super.start(spec);
    const r = this.live.record;
    const started = Date.now();
    for (let wait = 1; !this.learnJob() && r.status === 'running' && Date.now() - started < JOB_NAMED_MS; ) {
      // A supervisor that is gone names nothing any more.
      if (r.identity && verdict(r.identity) !== 'current') break;
      await new Promise((resolve) => setTimeout(resolve, wait));
      // It names the job within milliseconds of its start: every millisecond at first (a
      // look is one read of a small file), then backing off.
      if (Date.now() - started > 20) wait = Math.min(wait * 2, 25);
    }
    // A supervisor that ended without naming a job may have started none.
    if (!this.learnJob() && (r.status !== 'running' || (r.identity && verdict(r.identity) !== 'current'))) this.failIfUnrecorded();
  }

  /**
   * After a supervisor that ended without naming a job: when it also left no `session.json`,
   * it could not record the session (a full disk) and started nothing, as it promises. The
   * spawn then fails (see `unrecorded`), and the session is dropped: no record of a job that
   * never ran is left for a later host to report `lost`.
   */
  private failIfUnrecorded(): void {
    const { live, host } = this;
    const stateDir = host.stateDir as string;
    if (existsSync(sessionFiles(stateDir, live.record.id).metaPath)) return;
    host.discard(live);
    throw unrecorded(live.record.id, stateDir);
  }

  /**
   * Takes the job's identity from `supervisor.json` once it is there, names the recorded
   * supervisor and passes {@link isJobOf}; true once the record has one. A recorded one
   * that fails the check (an edited checkpoint) is dropped with a diagnostic.
   */
  /** The `jobIdentity` (`pid:startTime`) that passed {@link isJobOf} here, or was learnt here. */
  private checkedJob: string | undefined;

  private learnJob(): boolean {
    const { live, host } = this;
    const r = live.record;
    if (!r.identity || host.stateDir === null) return false;
    if (r.jobIdentity) {
      // Checked once, when this host first meets it: later, a job that ended may have left
      // its PID to another process, which says nothing of the record.
      const key = `${r.jobIdentity.pid}:${r.jobIdentity.startTime}`;
      if (this.checkedJob === key) return true;
      this.checkedJob = key;
      if (isJobOf(r.jobIdentity, r.identity)) return true;
      host.diagnostics.push(`${r.id}: its record names PID ${r.jobIdentity.pid} as the job of supervisor ${r.identity.pid}, which it is not; ignored`);
      delete r.jobIdentity;
    }
    const job = namedJob(sessionFiles(host.stateDir, r.id).supervisorPath, r.identity);
    if (!job) return false;
    r.jobIdentity = job;
    this.checkedJob = `${job.pid}:${job.startTime}`;
    r.updatedAt = Math.max(Date.now(), r.updatedAt + 1);
    if (!live.foreign) host.persistSoon();
    return true;
  }

  /** The record the supervisor writes to `session.json`, until the spawn hands it over. */
  private recordForSupervisor: string | undefined;

  get onDisk(): boolean {
    return true;
  }

  /**
   * Only `sessions/` is checked (and created once) here: the supervisor creates the
   * session's own directory, unless this host writes the record itself (see below).
   */
  protected sessionDir(stateDir: string): JobFiles {
    return filesBelowSessions(stateDir, this.live.record.id);
  }

  /**
   * The supervisor writes `session.json` (and creates its directory) before it starts the
   * job, from the record this host hands it on its stdin, with its own identity added: no
   * job runs without its record on disk, as before, a record found there always names the
   * supervisor to follow, and the event loop does not wait for the disk to create a directory
   * and a file (0.3-1 ms each on a metadata-bound disk). A job with a stdin FIFO (created in
   * the directory before the spawn) or a record too long for the pipe is recorded here. On
   * Windows the stdin is a named pipe the supervisor creates, not a file in the directory.
   */
  protected recordBeforeSpawn(files: JobFiles, spec: StartSpec): void {
    // Without `pid` and `identity`: the supervisor adds its own (see procward-supervise).
    const text = JSON.stringify({ ...this.live.record, pid: undefined, identity: undefined });
    const fifoFirst = spec.stdin && process.platform !== 'win32';
    if (!fifoFirst && Buffer.byteLength(text) <= SUPERVISOR_RECORD_BYTES) {
      this.recordForSupervisor = text;
      return;
    }
    jobFiles(this.host.stateDir as string, this.live.record.id);
    super.recordBeforeSpawn(files, spec);
  }

  protected prepare(files: JobFiles | null, spec: StartSpec): void {
    if (!files) return;
    Object.assign(this.live.record, { logPath: files.logPath, exitPath: files.exitPath, ...(spec.stdin && { stdinPath: files.stdinPath }) });
  }

  protected jobOptions(files: JobFiles | null, spec: StartSpec): object {
    if (!files) return {};
    const sessionRecord = this.recordForSupervisor;
    this.recordForSupervisor = undefined;
    const r = this.live.record;
    return {
      ...(sessionRecord !== undefined && { sessionRecord }),
      // The supervisor enforces the deadline, so it holds without a host (and the host
      // enforces it when the supervisor did not: see Deadlines).
      ...(r.timeoutMs !== undefined && { timeoutMs: r.timeoutMs, timeoutGraceMs: this.host.options.graceMs ?? 2000 }),
      logPath: files.logPath,
      exitPath: files.exitPath,
      supervisor: supervisorPath(),
      logPartBytes: Math.floor((this.host.options.logMaxBytes ?? LOG_MAX_BYTES) / 2),
      // A durable job's stdin is a FIFO (a named pipe on Windows) any host can write (see stdinfifo.ts).
      ...(spec.stdin && { stdinFifo: files.stdinPath }),
    };
  }

  async output(): Promise<OutputText> {
    const { live } = this;
    const logPath = live.record.logPath;
    // The log is read for a detached job, or when the tail let go of what it read (the
    // output budget): a tail that never read a byte had an empty log when the job's end
    // was published (the reactor reads the log up to then), which saves a job with no
    // output a log read on every poll and wait.
    const dropped = live.tail.heldChars === 0 && live.tail.totalChars > 0;
    if (!logPath || !(live.detached || dropped)) return super.output();
    // Where the log's last 16 KiB start is not known without reading the log: key material
    // at their head is taken for the inside of a block.
    // A log file replaced by a symlink or a FIFO is not read: the preview is empty, and
    // the reason is a diagnostic (readLog says it as an error).
    const text = await this.fromLog(() => readLogTail(logPath, 16 * 1024), '');
    return { text, startsInKeyBlock: leadsWithKeyMaterial(text) };
  }

  /**
   * Reads the session's log for a preview, its tail or its watchers. The job can reach its
   * own session directory (its supervisor's open files name it): a log it replaced by a
   * symlink, a FIFO, a directory or a hard link is damage to this session only, so it
   * becomes a diagnostic of this session and `fallback`, never an error of `list`, `poll`,
   * `wait`, `kill` or `open` (`readLog` of this session still says it as an error).
   */
  private async fromLog<T>(read: () => Promise<T>, fallback: T): Promise<T> {
    try {
      return await read();
    } catch (err) {
      const untrusted = err instanceof ProcwardError && err.code === 'STATE_DIR_UNTRUSTED';
      const fsError = !(err instanceof ProcwardError) && typeof (err as NodeJS.ErrnoException).code === 'string';
      if (!untrusted && !fsError) throw err;
      const said = `${this.live.record.id}: output not shown: ${(err as Error).message}`;
      if (!this.host.diagnostics.includes(said)) this.host.diagnostics.push(said);
      return fallback;
    }
  }

  /** Reads the full log file, not only the memory tail. */
  async readLog(opts: LogOptions, redactView: RedactView): Promise<LogPage> {
    const logPath = this.live.record.logPath;
    return logPath ? pageLogFile(logPath, opts, redactView) : super.readLog(opts, redactView);
  }

  /**
   * A durable job's input is its FIFO, which any host may write, after the writes and the
   * close asked for before it (see stdinfifo.ts); without one, the native job's answer (no stdin).
   */
  async write(data: string, opts?: WriteOptions): Promise<{ id: string; bytes: number }> {
    if (!this.live.record.stdinPath) return super.write(data, opts);
    if (typeof data !== 'string') throw new ProcwardError('INVALID_ARGUMENT', 'data must be a string');
    const timeoutMs = writeTimeoutMs(opts);
    return inOrder(this.live, true, async () => {
      await this.runningForInput();
      return writeFifo(this.live, data, timeoutMs);
    });
  }

  /** Has the supervisor close its end of the FIFO once the writes before it are done: the job reads EOF once no writer is left. */
  async closeStdin(): Promise<{ id: string; closed: true }> {
    if (!this.live.record.stdinPath) return super.closeStdin();
    return inOrder(this.live, false, async () => {
      await this.runningForInput();
      return closeFifo(this.live);
    });
  }

  private async runningForInput(): Promise<void> {
    await this.host.refresh(this.live);
    if (this.live.record.status === 'exited') throw writeFailed('SESSION_EXITED', `${this.live.record.id} has exited; its stdin is closed`, 0);
  }

  /**
   * Recovered from its session directory before its supervisor recorded who it is: it may
   * still be starting (its host died mid-spawn). Adopt it once it has written
   * supervisor.json; call it lost only when that never happens.
   */
  protected async adopt(): Promise<boolean> {
    const { live, host } = this;
    const r = live.record;
    if (host.stateDir === null) return true;
    if (r.identity) {
      // Recovered: the job named in the record is checked, or learnt from supervisor.json.
      if (r.status === 'running') this.learnJob();
      return true;
    }
    const sup = readSupervisorFile(sessionFiles(host.stateDir, r.id).supervisorPath)?.supervisor;
    if (sup) {
      Object.assign(r, { pid: sup.pid, identity: sup, updatedAt: Date.now() });
      this.learnJob();
      host.persistSoon();
      return true;
    }
    return !(Date.now() - r.startedAt < SUPERVISOR_START_MS && !(r.exitPath && (await readExitFile(r.exitPath))));
  }

  /** The exit file is the job's end even while its supervisor stays on for a grandchild that still holds the job's output pipe. */
  protected async exitRecord(): Promise<RecordedExit | { invalid: string } | null> {
    const exitPath = this.live.record.exitPath;
    return exitPath ? readExitFile(exitPath) : null;
  }

  /** Feeds a detached durable job's new log output to its watch patterns (re-armed after recovery). */
  protected async followLog(): Promise<void> {
    const { live, host } = this;
    const r = live.record;
    if (!r.logPath || live.foreign || !r.watchPatterns?.length) return;
    live.watcher ??= host.watcherFor(r);
    if (!live.watcher) return;
    const logPath = r.logPath;
    // A recovered session resumes where its earlier hosts stopped matching (see policy/watching.ts).
    live.watchOffset ??= live.watcher.resume();
    const from = live.watchOffset;
    const { text, next } = await this.fromLog(() => readLogFrom(logPath, from), { text: '', next: from });
    live.watchOffset = next;
    if (text) host.watch(live, text);
  }

  protected async loadTail(): Promise<void> {
    const { live } = this;
    const logPath = live.record.logPath;
    if (logPath && live.tail.totalChars === 0) live.tail.append(await this.fromLog(() => readLogTail(logPath, 16 * 1024), ''));
  }

  /**
   * A durable job's leader is its supervisor, which outlives SIGTERM and the job: the exit
   * file says whether the job had ended on its own before the first signal.
   */
  protected async endedBefore(signalAt: number): Promise<boolean> {
    const exitPath = this.live.record.exitPath;
    if (!exitPath) return false;
    const end = await readExitFile(exitPath);
    return end !== null && !('invalid' in end) && end.exitedAt !== undefined && end.exitedAt < signalAt;
  }

  /** The job's own process once known (a signal to it reaches the job); else the supervisor's child. */
  stopProbe(): StopProbe | null {
    const r = this.live.record;
    if (r.status === 'running' && r.jobIdentity) return { identity: r.jobIdentity, supervised: false };
    return super.stopProbe();
  }

  /**
   * A durable job runs while its own process does, or while its supervisor does (which
   * writes its end once it has seen it): a supervisor killed alone leaves the job running,
   * orphaned, and it is followed by its own identity until it is gone.
   */
  protected liveVerdict(): Verdict {
    const r = this.live.record;
    const supervisor = super.liveVerdict();
    if (supervisor === 'current' || !r.jobIdentity) return supervisor;
    const job = verdict(r.jobIdentity);
    return job === 'current' || job === 'unknown' ? job : supervisor;
  }

  /** Re-checks an orphaned job (see `endFromExit`) until it ends: a `wait` begun before it was orphaned has no tick of its own. */
  private orphanTimer: NodeJS.Timeout | undefined;

  private followOrphan(delay = 25): void {
    this.orphanTimer = setTimeout(() => {
      const again = (next: number) => this.live.record.status === 'running' && this.orphanTimer !== undefined && this.followOrphan(next);
      this.host.refresh(this.live).then(
        () => again(Math.min(delay * 2, 1000)),
        () => again(1000),
      );
    }, delay);
    this.orphanTimer.unref();
  }

  close(): void {
    clearTimeout(this.orphanTimer);
    this.orphanTimer = undefined;
    super.close();
  }

  /** A job whose own process runs has not ended, whatever became of its supervisor (the native job). */
  protected endedBeforeKill(): boolean {
    const job = this.live.record.jobIdentity;
    if (job && verdict(job) === 'current') return false;
    return super.endedBeforeKill();
  }

  /**
   * The supervisor leads the job's session, so the kill starts there; once it is gone while
   * the job runs, from the job's own process (its group, led by the dead supervisor, is
   * no session leader's and is not signalled as a whole: its members are, by the walk).
   */
  protected killRoot(identity: Identity): { root: Identity; sessionLeader: boolean } {
    const job = this.live.record.jobIdentity;
    if (job && verdict(identity) !== 'current' && verdict(job) === 'current') return { root: job, sessionLeader: false };
    return super.killRoot(identity);
  }

  /**
   * The end the reactor saw, with what only the exit file says (the supervisor killed the
   * job at its deadline). An unknown end (the supervisor died without recording one) while
   * the job's own process runs on is no end: the job is followed by its identity from now on.
   */
  endFromExit(end: RecordedExit): void {
    const { live } = this;
    // A supervisor killed right after its fork (by its own job: `kill -9 $PPID`) ends
    // before `start` has read the job's name: read it now, or the job runs on unfollowed
    // and its deadline unenforced.
    if (!live.record.jobIdentity && live.record.status === 'running') this.learnJob();
    const job = live.record.jobIdentity;
    if (end.exitCode === null && end.signal === null && !end.timedOut && job && !live.killed && verdict(job) === 'current') {
      live.detached = true;
      this.followOrphan();
      return;
    }
    const exitPath = this.live.record.exitPath;
    if (end.timedOut === undefined && this.live.record.timeoutMs !== undefined && exitPath && exitFileTimedOut(exitPath)) end = { ...end, timedOut: true };
    super.endFromExit(end);
  }

  /**
   * The supervisor is no process of the job: it outlives SIGTERM to record the job's end
   * and leaves once the output pipe is closed, so it is never reported as a survivor of the
   * job's kill (it is judged on its own: a host sees it gone or keeps following it).
   */
  protected judgeReport(report: KillReport): KillReport {
    const sup = this.live.record.identity;
    if (!sup || !report.survivors.includes(sup.pid)) return report;
    const notSupervisor = (pid: number) => pid !== sup.pid;
    return {
      ...report,
      survivors: report.survivors.filter(notSupervisor),
      survivorIdentities: report.survivorIdentities.filter((i) => notSupervisor(i.pid)),
    };
  }
}
