/**
 * What most kinds of job do alike: output from the in-memory tail, input through the native
 * job this host started, an end taken from an observed exit status, and cleanup of the
 * job's cgroup. Kinds override what differs.
 */
import { fromNative, ProcwardError } from '../errors.js';
import { native } from '../native.js';
import { pageTail } from '../output/paging.js';
import { visibleTail } from '../output/tail.js';
import { type JobFiles, killRequested, type RecordedExit, sessionFiles } from '../persist/jobfiles.js';
import type { SignalResult, WriteOptions } from '../types.js';
import type { JobSession, LeftoverQuery, Live, LogOptions, LogPage, NativeScreen, OutputText, RedactView, SessionHost, StopProbe, KindKillResult } from './kind.js';
import { writeInput } from './input.js';
import { inputOf } from './live.js';
import { killClaimed } from './termination.js';

export abstract class BaseSession implements JobSession {
  constructor(
    protected readonly live: Live,
    protected readonly host: SessionHost,
  ) {}

  get owned(): boolean {
    return !this.live.foreign;
  }

  get onDisk(): boolean {
    return false;
  }

  abstract refresh(): Promise<void>;
  abstract kill(graceMs: number): Promise<KindKillResult>;

  /** The registry signals the recorded identity (this machine's process). */
  signal(_name: string): Promise<SignalResult> | null {
    return null;
  }

  async output(): Promise<OutputText> {
    return visibleTail(this.live.tail);
  }

  async readLog(opts: LogOptions, redactView: RedactView): Promise<LogPage> {
    return pageTail(this.live.tail, opts, redactView);
  }

  waitTick(): (() => void) | undefined {
    return this.live.detached ? () => void this.host.refresh(this.live) : undefined;
  }

  write(data: string, opts?: WriteOptions): Promise<{ id: string; bytes: number }> {
    return writeInput(this.live, data, opts);
  }

  async closeStdin(): Promise<{ id: string; closed: true }> {
    const job = inputOf(this.live);
    try {
      job.closeStdin();
    } catch (err) {
      throw fromNative(err);
    }
    return { id: this.live.record.id, closed: true };
  }

  resize(size: { cols: number; rows: number }): void {
    const job = inputOf(this.live);
    try {
      job.resize(size);
    } catch (err) {
      throw fromNative(err);
    }
  }

  screen(): NativeScreen {
    // Only a PTY job this host started has an emulator: a pipe, durable or sandbox job has
    // no terminal, and another host's job is drawn (if at all) by that host.
    const screen = this.live.job?.screen();
    if (!screen) throw new ProcwardError('INVALID_ARGUMENT', `${this.live.record.id} has no terminal this host draws: only PTY sessions started by this host have a screen (start one with { pty: true })`);
    return screen;
  }

  /** No process of this machine to look at (a sandbox's runs elsewhere). */
  stopProbe(): StopProbe | null {
    return null;
  }

  /** No process of this machine to look at (a sandbox's runs elsewhere). */
  leftoverQuery(): LeftoverQuery | null {
    return null;
  }

  recordEnd(): void {}

  ended(): void {
    const r = this.live.record;
    // Close the input side now: descriptors must not wait for the garbage collector. The
    // native job stays: it holds the output tail.
    this.live.job?.release();
    if (r.cgroup) native.removeCgroup(r.cgroup, r.id);
  }

  close(): void {
    this.live.finisher?.abort();
  }

  pruned(): void {
    const r = this.live.record;
    if (r.cgroup) native.removeCgroup(r.cgroup, r.id);
  }

  /** The session's files (named, not created), or null in an in-memory registry. */
  protected files(): JobFiles | null {
    return this.host.stateDir !== null ? sessionFiles(this.host.stateDir, this.live.record.id) : null;
  }

  /**
   * Publishes an observed end: `killed` when a kill reached the leader (ours, or one on
   * record in the session directory), else `exited` (`lost` when the status is unknown).
   */
  endFromExit(end: RecordedExit): void {
    const live = this.live;
    const files = this.files();
    // A kill another host claimed (it reached the leader) counts even if its marker is gone.
    // A durable job's supervisor killed it at its deadline (see `SpawnOptions.timeoutMs`).
    const timedOut = end.timedOut === true;
    const killed = timedOut || live.killed || killRequested(files) || (files !== null && killClaimed(files.dir));
    const known = end.exitCode !== null || end.signal !== null;
    // `signal` only when a signal ended the process (then `exitCode` is null): a killed job
    // that exited by itself after the kill's SIGTERM (a trap) keeps its own exit code and no
    // signal (the kill's result says what it sent). An end nobody recorded, after our kill
    // reached the leader: our last signal is all that is known to have ended it.
    const signal = known ? end.signal : killed ? (live.killSignal ?? 'SIGTERM') : null;
    this.host.finish(live, { ...end, signal, reason: killed ? 'killed' : known ? 'exited' : 'lost', source: timedOut ? 'timeout' : killed ? 'kill' : known ? 'process' : 'recovery' });
  }
}

/**
 * A session that answers as another kind of job (`inner`) except where a subclass says
 * otherwise: an entry another live host owns (`foreign.ts`), an entry no host can follow
 * (`kinds.ts`).
 */
export abstract class WrappingSession implements JobSession {
  constructor(
    protected readonly live: Live,
    protected readonly host: SessionHost,
    /** The kind of job the entry describes. */
    protected readonly inner: JobSession,
  ) {}

  get owned(): boolean {
    return this.inner.owned;
  }

  get onDisk(): boolean {
    return this.inner.onDisk;
  }

  refresh(): Promise<void> {
    return this.inner.refresh();
  }

  output(): Promise<OutputText> {
    return this.inner.output();
  }

  readLog(opts: LogOptions, redactView: RedactView): Promise<LogPage> {
    return this.inner.readLog(opts, redactView);
  }

  waitTick(): (() => void) | undefined {
    return this.inner.waitTick();
  }

  kill(graceMs: number): Promise<KindKillResult> {
    return this.inner.kill(graceMs);
  }

  signal(name: string): Promise<SignalResult> | null {
    return this.inner.signal(name);
  }

  write(data: string, opts?: WriteOptions): Promise<{ id: string; bytes: number }> {
    return this.inner.write(data, opts);
  }

  closeStdin(): Promise<{ id: string; closed: true }> {
    return this.inner.closeStdin();
  }

  resize(size: { cols: number; rows: number }): void {
    this.inner.resize(size);
  }

  screen(): NativeScreen {
    return this.inner.screen();
  }

  stopProbe(): StopProbe | null {
    return this.inner.stopProbe();
  }

  leftoverQuery(): LeftoverQuery | null {
    return this.inner.leftoverQuery();
  }

  recordEnd(): void {
    this.inner.recordEnd();
  }

  ended(): void {
    this.inner.ended();
  }

  close(): void {
    this.inner.close();
  }

  pruned(): void {
    this.inner.pruned();
  }
}
