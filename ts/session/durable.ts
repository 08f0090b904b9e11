/**
 * A durable job: started under `procward-supervise`, which copies its output to a log in
 * the session directory and records its exit status in `exit.json`, so the job outlives
 * its host. Any host follows it through those files: its output, its end, its stdin FIFO.
 * It has two identities, the job's and its supervisor's; the job's drives verdicts and
 * kills (see DESIGN section 3).
 */
import { ProcwardError } from '../errors.js';
import { supervisorPath } from '../native.js';
import { readLogFrom, readLogTail } from '../output/durablelog.js';
import { pageLogFile } from '../output/paging.js';
import { filesBelowSessions, type JobFiles, jobFiles, readExitFile, readSupervisorIdentity, type RecordedExit, sessionFiles } from '../persist/jobfiles.js';
import { leadsWithKeyMaterial } from '../policy/redact.js';
import { HostSession } from './host.js';
import type { WriteOptions } from '../types.js';
import type { LogOptions, LogPage, OutputText, RedactView, StartSpec } from './kind.js';
import { writeFailed, writeTimeoutMs } from './input.js';
import { closeFifo, inOrder, writeFifo } from './stdinfifo.js';

/** How long a recovered durable job may take to record its supervisor before it counts as lost. */
const SUPERVISOR_START_MS = 3_000;
/** Default of `logMaxBytes`: 64 MiB per durable session (two parts of 32 MiB). */
const LOG_MAX_BYTES = 64 * 1024 * 1024;
/** Longest record the supervisor takes on its stdin (a pipe's 64 KiB, with room; see the core's `spawn`). */
const SUPERVISOR_RECORD_BYTES = 60_000;

export class DurableSession extends HostSession {
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
    return {
      ...(sessionRecord !== undefined && { sessionRecord }),
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
    if (r.identity || host.stateDir === null) return true;
    const sup = readSupervisorIdentity(sessionFiles(host.stateDir, r.id).supervisorPath);
    if (sup) {
      Object.assign(r, { pid: sup.pid, identity: sup, updatedAt: Date.now() });
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
}
