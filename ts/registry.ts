/**
 * The process registry: sessions for background jobs, their output, their end, and (with a
 * state directory) a checkpoint that lets the next host recover them.
 *
 * Data flows one way: native spawn → reader events → session → registry → checkpoint.
 */
import { rmSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import { Checkpoint } from './checkpoint.js';
import { fromNative, ProcwardError } from './errors.js';
import { identity as readIdentity, killTree, verdict, type Identity, type KillReport } from './helpers.js';
import { newSessionId, resolveSessionId } from './ids.js';
import { jobFiles, readExitFile, readLog, readLogTail, type RecordedExit } from './jobfiles.js';
import { native, supervisorPath, type JobEvent } from './native.js';
import { DEFAULT_TAIL_CHARS, OutputTail, pageLines, preview } from './output.js';
import { redact } from './redact.js';
import { expiredIds, type RetentionOptions } from './retention.js';
import type { CompletionReason, SessionRecord, SessionStatus } from './session.js';

/** Options of {@link ProcessRegistry.open}. */
export interface RegistryOptions extends RetentionOptions {
  /** Directory for the checkpoint and durable job files (created 0700). Without it nothing is persisted. */
  stateDir?: string;
  /** Shell for commands. Default `/bin/bash` when it exists (it execs the last command, so signal deaths stay visible), else `/bin/sh`. */
  shell?: string;
  /** Shell arguments before the command. Default `['-c']`. */
  shellArgs?: string[];
  /** In-memory output tail per session, in characters. Default 200 000. */
  maxOutputChars?: number;
  /** Default grace period of `kill`, in milliseconds. Default 2000. */
  graceMs?: number;
  /** Run jobs durably (log file + supervisor) unless a spawn says otherwise. Default: true when `stateDir` is set. */
  durable?: boolean;
  /** Redact secrets in persisted commands and in previews. Default true. */
  redact?: boolean;
}

/** Options of {@link ProcessRegistry.spawn}. */
export interface SpawnOptions {
  /** Working directory. Default: the host's. */
  cwd?: string;
  /** Variables added to (or overriding) the host's environment. */
  env?: Record<string, string>;
  /** The task that started the job. */
  taskId?: string;
  /** The task that owns the job, when different from `taskId`. */
  ownerTaskId?: string;
  /** Conversation/session key the job belongs to. */
  sessionKey?: string;
  /** Log file + supervisor, so the job outlives the host with its output and exit status. Needs `stateDir`. */
  durable?: boolean;
}

/** A session as `list`, `spawn` and `poll` describe it. Times in milliseconds. */
export interface SessionSummary {
  id: string;
  command: string;
  cwd: string;
  pid: number | null;
  status: SessionStatus;
  exitCode: number | null;
  signal: string | null;
  reason: CompletionReason | null;
  startedAt: number;
  exitedAt: number | null;
  /** Milliseconds the job ran (until now while running). */
  uptimeMs: number;
  taskId?: string;
  sessionKey?: string;
  durable: boolean;
  /** Recovered from the checkpoint: not a child of this host. */
  detached: boolean;
  /** Listed because it shares the session key, though another task started it. */
  sessionScoped?: boolean;
}

/** What {@link ProcessRegistry.poll} returns. */
export interface PollResult extends SessionSummary {
  /** The last 2000 characters of output, ANSI-stripped and redacted. */
  outputPreview: string;
}

/** What {@link ProcessRegistry.wait} returns. */
export interface WaitResult extends PollResult {
  /** True when the timeout passed before the job ended. */
  timedOut: boolean;
  processRunning: boolean;
}

/** What {@link ProcessRegistry.readLog} returns. */
export interface LogResult {
  id: string;
  status: SessionStatus;
  /** The page's lines joined with `\n`. */
  text: string;
  lines: string[];
  totalLines: number;
  offset: number;
  showing: string;
  /** Characters dropped by the in-memory cap before this read (0 for durable jobs: the log is complete). */
  droppedChars: number;
}

/** What {@link ProcessRegistry.kill} returns. */
export interface KillResult extends KillReport {
  id: string;
  /** `killed`, or `already_exited` when the session had ended before the kill. */
  outcome: 'killed' | 'already_exited';
  exitCode: number | null;
  signal: string | null;
}

interface Live {
  record: SessionRecord;
  tail: OutputTail;
  /** Recovered from a checkpoint: not our child, refreshed by identity. */
  detached: boolean;
  killing: boolean;
  /** Stops the background finishing of a kill that timed out. */
  finisher?: AbortController;
  waiters: Set<() => void>;
}

interface Outcome extends RecordedExit {
  reason: CompletionReason;
  source: string;
}

const DETACHED_TICK_MS = 25;
const EMPTY_REPORT = { signalled: [], alreadyGone: [], refusedReused: [], survivors: [], survivorIdentities: [], escalated: false };

/** A background process registry. Create with {@link ProcessRegistry.open}. */
export class ProcessRegistry {
  private readonly sessions = new Map<string, Live>();
  private readonly checkpoint: Checkpoint | undefined;
  private readonly writer: Identity;
  private saving: Promise<void> | null = null;
  private dirty = false;
  private closed = false;
  /** Problems found while recovering (corrupt files, skipped entries). */
  readonly diagnostics: string[] = [];

  private constructor(private readonly options: RegistryOptions) {
    this.checkpoint = options.stateDir ? new Checkpoint(resolvePath(options.stateDir)) : undefined;
    const self = readIdentity(process.pid);
    this.writer = self ?? { pid: process.pid, startTime: '0', bootId: 'unknown' };
  }

  /** Opens a registry; with a `stateDir`, recovers the sessions its checkpoint lists first. */
  static async open(options: RegistryOptions = {}): Promise<ProcessRegistry> {
    const registry = new ProcessRegistry(options);
    await registry.recover();
    return registry;
  }

  private async recover(): Promise<void> {
    if (!this.checkpoint) return;
    const { sessions, diagnostics } = await this.checkpoint.load();
    this.diagnostics.push(...diagnostics);
    for (const record of sessions) {
      const live: Live = { record, tail: new OutputTail(this.tailChars), detached: true, killing: false, waiters: new Set() };
      this.sessions.set(record.id, live);
      await this.refresh(live);
    }
    if (sessions.length > 0 || diagnostics.length > 0) await this.persist();
  }

  private get tailChars(): number {
    return this.options.maxOutputChars ?? DEFAULT_TAIL_CHARS;
  }

  private clean(text: string): string {
    return this.options.redact === false ? text : redact(text);
  }

  /**
   * Starts `command` with `<shell> -c` in a new session; resolves once the session is
   * recorded (in the checkpoint too, when there is one).
   *
   * Errors: `INVALID_ARGUMENT` (empty command, durable without `stateDir`), `ENOENT` (shell or
   * cwd missing), `EMFILE` (out of file descriptors), `REGISTRY_CLOSED`.
   */
  async spawn(command: string, opts: SpawnOptions = {}): Promise<SessionSummary> {
    this.assertOpen();
    if (typeof command !== 'string' || command.trim() === '') {
      throw new ProcwardError('INVALID_ARGUMENT', 'command must be a non-empty string');
    }
    const durable = opts.durable ?? this.options.durable ?? this.checkpoint !== undefined;
    if (durable && !this.checkpoint) {
      throw new ProcwardError('INVALID_ARGUMENT', 'durable jobs need a registry opened with a stateDir');
    }
    const id = newSessionId();
    const cwd = resolvePath(opts.cwd ?? process.cwd());
    const files = durable && this.checkpoint ? jobFiles(this.checkpoint.dir, id) : null;
    const now = Date.now();
    const live: Live = {
      record: {
        id,
        command: this.clean(command),
        cwd,
        pid: null,
        identity: null,
        ...(opts.taskId !== undefined && { taskId: opts.taskId }),
        ...(opts.ownerTaskId !== undefined && { ownerTaskId: opts.ownerTaskId }),
        ...(opts.sessionKey !== undefined && { sessionKey: opts.sessionKey }),
        startedAt: now,
        exitedAt: null,
        status: 'running',
        exitCode: null,
        signal: null,
        reason: null,
        terminationSource: null,
        durable,
        logPath: files?.logPath ?? null,
        exitPath: files?.exitPath ?? null,
        writer: this.writer,
        updatedAt: now,
      },
      tail: new OutputTail(this.tailChars),
      detached: false,
      killing: false,
      waiters: new Set(),
    };
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...process.env, ...opts.env })) if (v !== undefined) env[k] = v;
    let job;
    try {
      job = native.spawn(
        {
          command,
          cwd,
          env,
          ...(this.options.shell !== undefined && { shell: this.options.shell }),
          ...(this.options.shellArgs !== undefined && { shellArgs: this.options.shellArgs }),
          ...(files && { logPath: files.logPath, exitPath: files.exitPath, supervisor: supervisorPath() }),
        },
        (ev: JobEvent) => this.onEvent(live, ev),
      );
    } catch (err) {
      throw fromNative(err);
    }
    live.record.pid = job.pid;
    live.record.identity = job.identity;
    this.sessions.set(id, live);
    await this.persist();
    return this.summary(live);
  }

  private onEvent(live: Live, ev: JobEvent): void {
    if (ev.kind === 'output') {
      live.tail.append(ev.text ?? '');
      return;
    }
    const known = ev.exitCode != null || ev.signal != null;
    this.finish(live, {
      exitCode: ev.exitCode ?? null,
      signal: ev.signal ?? null,
      reason: live.killing ? 'killed' : known ? 'exited' : 'lost',
      source: live.killing ? 'kill' : 'process',
    });
  }

  /** Publishes a session's end. Exactly one finisher wins; later calls change nothing. */
  private finish(live: Live, outcome: Outcome): boolean {
    const r = live.record;
    if (r.status === 'exited') return false;
    Object.assign(r, {
      status: 'exited',
      exitedAt: Date.now(),
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      reason: outcome.reason,
      terminationSource: outcome.source,
      updatedAt: Date.now(),
    });
    for (const w of live.waiters) w();
    live.waiters.clear();
    this.persist().catch((err) => this.diagnostics.push(`checkpoint write failed: ${String(err)}`));
    return true;
  }

  /**
   * Brings a detached session up to date: it has ended as soon as its process is gone, a
   * zombie, or its PID was reused. A durable job's exit file gives the exact end; without
   * one the end is `lost`. `unknown` keeps it running (retried on the next access).
   */
  private async refresh(live: Live): Promise<void> {
    const r = live.record;
    if (!live.detached || r.status === 'exited') return;
    const v = r.identity ? verdict(r.identity) : 'gone';
    if (v === 'current' || v === 'unknown') return;
    const recorded = r.exitPath ? await readExitFile(r.exitPath) : null;
    if (recorded) {
      this.finish(live, { ...recorded, reason: live.killing ? 'killed' : 'exited', source: live.killing ? 'kill' : 'process' });
    } else {
      this.finish(live, { exitCode: null, signal: null, reason: live.killing ? 'killed' : 'lost', source: live.killing ? 'kill' : 'recovery' });
    }
  }

  private get(id: string): Live {
    return this.sessions.get(resolveSessionId(this.sessions.keys(), id)) as Live;
  }

  private assertOpen(): void {
    if (this.closed) throw new ProcwardError('REGISTRY_CLOSED', 'the registry is closed');
  }

  private summary(live: Live, scoped = false): SessionSummary {
    const r = live.record;
    return {
      id: r.id,
      command: r.command,
      cwd: r.cwd,
      pid: r.pid,
      status: r.status,
      exitCode: r.exitCode,
      signal: r.signal,
      reason: r.reason,
      startedAt: r.startedAt,
      exitedAt: r.exitedAt,
      uptimeMs: (r.exitedAt ?? Date.now()) - r.startedAt,
      ...(r.taskId !== undefined && { taskId: r.taskId }),
      ...(r.sessionKey !== undefined && { sessionKey: r.sessionKey }),
      durable: r.durable,
      detached: live.detached,
      ...(scoped && { sessionScoped: true }),
    };
  }

  private async output(live: Live): Promise<string> {
    if (live.record.durable && live.record.logPath && (live.detached || live.tail.totalChars === 0)) {
      return readLogTail(live.record.logPath, 16 * 1024);
    }
    return live.tail.text();
  }

  private async pollResult(live: Live): Promise<PollResult> {
    return { ...this.summary(live), outputPreview: this.clean(preview(await this.output(live))) };
  }

  /** Status, PID, uptime, output preview and (once ended) exit code, signal and reason. */
  async poll(id: string): Promise<PollResult> {
    const live = this.get(id);
    await this.refresh(live);
    return this.pollResult(live);
  }

  /**
   * Resolves as soon as the session ends (event-driven; detached sessions are re-checked
   * every 25 ms), or when `timeoutMs` passes with `timedOut: true` and the partial output.
   *
   * Errors: `INVALID_ARGUMENT` for a non-positive or non-finite timeout; the abort reason
   * when `signal` aborts; `UNKNOWN_SESSION`.
   */
  async wait(id: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<WaitResult> {
    const { timeoutMs, signal } = opts;
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      throw new ProcwardError('INVALID_ARGUMENT', `timeoutMs must be a positive number, got ${timeoutMs}`);
    }
    signal?.throwIfAborted();
    const live = this.get(id);
    await this.refresh(live);
    if (live.record.status === 'running') {
      const timedOut = await new Promise<boolean>((resolve, reject) => {
        // These timers are ref'd on purpose: awaiting a job keeps the host alive, while the
        // native reader's callback (weak) never does.
        const timer = setTimeout(() => settle(true), Math.min(timeoutMs ?? 2 ** 31 - 1, 2 ** 31 - 1));
        const ticker = live.detached ? setInterval(() => void this.refresh(live), DETACHED_TICK_MS) : undefined;
        const onAbort = () => {
          cleanup();
          reject(signal?.reason);
        };
        const waiter = () => settle(false);
        const cleanup = () => {
          clearTimeout(timer);
          if (ticker) clearInterval(ticker);
          live.waiters.delete(waiter);
          signal?.removeEventListener('abort', onAbort);
        };
        function settle(t: boolean) {
          cleanup();
          resolve(t);
        }
        live.waiters.add(waiter);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      const result = await this.pollResult(live);
      return { ...result, timedOut, processRunning: live.record.status === 'running' };
    }
    return { ...(await this.pollResult(live)), timedOut: false, processRunning: false };
  }

  /**
   * Line-paged output: by default the last 200 lines; `offset` 0 is the first line. Durable
   * jobs are read from their full log file, others from the in-memory tail.
   */
  async readLog(id: string, opts: { offset?: number; limit?: number } = {}): Promise<LogResult> {
    const live = this.get(id);
    await this.refresh(live);
    const fromFile = live.record.durable && live.record.logPath;
    const text = fromFile ? await readLog(live.record.logPath as string) : live.tail.text();
    let page;
    try {
      page = pageLines(this.clean(text), opts);
    } catch (err) {
      throw new ProcwardError('INVALID_ARGUMENT', (err as Error).message);
    }
    return {
      id: live.record.id,
      status: live.record.status,
      text: page.lines.join('\n'),
      ...page,
      droppedChars: fromFile ? 0 : live.tail.droppedChars,
    };
  }

  /**
   * Tree kill (DESIGN section 3) of the session's process group and descendants, with the
   * recorded identity: never signals a reused PID. `already_exited` for ended sessions.
   *
   * Errors: `KILL_SURVIVORS` (details: the report) when processes outlived SIGKILL and the
   * settle window; `IDENTITY_UNKNOWN` when the process table cannot be read.
   */
  async kill(id: string, opts: { graceMs?: number } = {}): Promise<KillResult> {
    const live = this.get(id);
    await this.refresh(live);
    const r = live.record;
    const graceMs = opts.graceMs ?? this.options.graceMs ?? 2000;
    const hasEnded = () => r.status === 'exited';
    const wasRunning = !hasEnded();
    if (!r.identity) return { id: r.id, outcome: 'already_exited', ...EMPTY_REPORT, exitCode: r.exitCode, signal: r.signal };
    live.finisher?.abort();
    if (wasRunning) live.killing = true;
    // On an ended session this still cleans up what is left of its process group.
    const report = await killTree(r.identity, { graceMs });
    const result = (outcome: KillResult['outcome']): KillResult => ({ id: r.id, outcome, ...report, exitCode: r.exitCode, signal: r.signal });
    if (report.survivors.length > 0) {
      this.finishInBackground(live, report.survivorIdentities, graceMs);
      throw new ProcwardError(
        'KILL_SURVIVORS',
        `${report.survivors.length} process(es) survived the kill of ${r.id}: ${report.survivors.join(', ')}; procward keeps trying in the background`,
        { report, finishingInBackground: true },
      );
    }
    if (!wasRunning) return result('already_exited');
    if (!report.signalled.includes(r.pid as number)) {
      // The leader had ended (or its PID was reused) before the kill reached it.
      live.killing = false;
      if (live.detached) await this.refresh(live);
      else await this.settle(live, 2000);
      if (hasEnded()) return result('already_exited');
    }
    if (!live.detached) await this.settle(live, 2000);
    const recorded = r.exitPath ? await readExitFile(r.exitPath) : null;
    this.finish(live, {
      exitCode: recorded?.exitCode ?? null,
      signal: recorded ? recorded.signal : report.escalated ? 'SIGKILL' : 'SIGTERM',
      reason: 'killed',
      source: 'kill',
    });
    return result('killed');
  }

  /**
   * A kill that timed out keeps going: every 500 ms (first after the grace period) each
   * survivor is re-checked by identity and SIGKILLed with its descendants, for up to 60 s.
   * A new kill of the session or `close()` stops it.
   */
  private finishInBackground(live: Live, survivors: Identity[], graceMs: number): void {
    const controller = new AbortController();
    live.finisher = controller;
    const deadline = Date.now() + 60_000;
    let left = survivors;
    const tick = async () => {
      if (controller.signal.aborted || this.closed) return;
      const next: Identity[] = [];
      for (const id of left) {
        const rep = await killTree(id, { signal: 'SIGKILL', graceMs: 0, settleMs: 200 }).catch(() => null);
        next.push(...(rep ? rep.survivorIdentities : [id]));
      }
      left = next;
      if (controller.signal.aborted) return;
      if (left.length === 0) {
        if (live.record.identity && verdict(live.record.identity) !== 'current') {
          this.finish(live, { exitCode: null, signal: 'SIGKILL', reason: 'killed', source: 'kill' });
        }
        return;
      }
      if (Date.now() < deadline) setTimeout(tick, 500).unref();
      else this.diagnostics.push(`kill of ${live.record.id}: ${left.map((i) => i.pid).join(', ')} still alive after 60 s`);
    };
    setTimeout(tick, Math.max(graceMs, 250)).unref();
  }

  /** Waits up to `ms` for the reader to publish the end of an attached session. */
  private settle(live: Live, ms: number): Promise<void> {
    if (live.record.status === 'exited') return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        live.waiters.delete(done);
        resolve();
      }
      live.waiters.add(done);
    });
  }

  /**
   * Summaries, oldest first. With `taskId`, the task's sessions; with `sessionKey` too,
   * sessions sharing the key but started by another task are included and flagged
   * `sessionScoped`.
   */
  async list(filter: { taskId?: string; sessionKey?: string } = {}): Promise<SessionSummary[]> {
    const out: SessionSummary[] = [];
    for (const live of this.sessions.values()) {
      const r = live.record;
      const taskMatch = filter.taskId === undefined || r.taskId === filter.taskId || r.ownerTaskId === filter.taskId;
      const keyMatch = filter.sessionKey !== undefined && r.sessionKey === filter.sessionKey;
      if (filter.taskId !== undefined && !taskMatch && !keyMatch) continue;
      if (filter.taskId === undefined && filter.sessionKey !== undefined && !keyMatch) continue;
      await this.refresh(live);
      out.push(this.summary(live, filter.taskId !== undefined && !taskMatch));
    }
    return out.sort((a, b) => a.startedAt - b.startedAt);
  }

  /** Drops finished sessions past their retention (and their job files). */
  private prune(): void {
    for (const id of expiredIds([...this.sessions.values()].map((l) => l.record), this.options)) {
      const dir = this.sessions.get(id)?.record.logPath;
      this.sessions.delete(id);
      if (dir) rmSync(dirname(dir), { recursive: true, force: true });
    }
  }

  /** Writes the checkpoint (group commit: concurrent callers share one write). */
  private persist(): Promise<void> {
    // After close() another host may own the state directory: write nothing more.
    if (this.closed) return Promise.resolve();
    if (!this.checkpoint) {
      this.prune();
      return Promise.resolve();
    }
    this.dirty = true;
    if (!this.saving) {
      this.saving = (async () => {
        try {
          while (this.dirty) {
            this.dirty = false;
            this.prune();
            await this.checkpoint?.save(
              [...this.sessions.values()].map((l) => ({ ...l.record })),
              this.options,
            );
          }
        } finally {
          this.saving = null;
        }
      })();
    }
    return this.saving;
  }

  /**
   * Flushes the checkpoint and stops accepting work; nothing is written after it. Running
   * jobs are not killed: durable ones live on and the next host recovers them; pipe-mode
   * jobs lose their reader when this process exits.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    for (const live of this.sessions.values()) live.finisher?.abort();
    await this.persist();
    this.closed = true;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
