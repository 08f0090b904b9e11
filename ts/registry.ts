/**
 * The process registry: the index of sessions, the policy over them (scoping, retention,
 * output budget, redaction, watch patterns), their persistence (a checkpoint that lets the
 * next host recover them) and their notifications. What a session does is its kind's
 * business (see `session/kind.ts`): the registry asks, and never branches on the kind.
 *
 * Data flows one way: native spawn → reader events → session → registry → checkpoint.
 */
import { EventEmitter } from 'node:events';
import { existsSync, statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { ProcwardError } from './errors.js';
import { native } from './native.js';
import { checkRegistryOptions } from './options.js';
import { rebalance } from './output/budget.js';
import { logResult } from './output/paging.js';
import { DEFAULT_TAIL_CHARS, DEFAULT_TOTAL_OUTPUT_CHARS } from './output/tail.js';
import { plainText, preview } from './output/views.js';
import { Checkpoint } from './persist/checkpoint.js';
import { GroupCommit } from './persist/groupcommit.js';
import { removeSessionDir } from './persist/jobfiles.js';
import { scanOrphanSessions } from './persist/recovery.js';
import { isForeign, newWriter, releaseWriter, type WriterIdentity } from './persist/writer.js';
import { childEnvironment, validateCommand } from './policy/environment.js';
import {
  checkPatterns,
  COMPLETION_TAIL_CHARS,
  type CompletionEvent,
  LineWatcher,
  owns,
  pendingCompletion,
  pendingWatchEvents,
  type ProcwardEvent,
  RateLimit,
  takeOwned,
  type WatchEvent,
  watcherForRecord,
} from './policy/notifications.js';
import { isKeyMaterialLine, KEY_MASK, redact, redactCommand } from './policy/redact.js';
import { DEFAULT_MAX_SESSIONS, expiredIds } from './policy/retention.js';
import * as scoping from './policy/scoping.js';
import type { BulkKillOutcome } from './policy/scoping.js';
import { ConfiguredEnvironments } from './remote/configured.js';
import { newSessionId, resolveSessionId } from './session/ids.js';
import type { Live, LogOptions, Outcome, SessionHost } from './session/kind.js';
import { type StartableSession, sessionFor, sessionToStart } from './session/kinds.js';
import { newLive, summary, untilEnd } from './session/live.js';
import { SESSION_SCHEMA_VERSION, type SessionRecord } from './session/record.js';
import { checkSpawnOptions } from './session/spawnoptions.js';
import { assertGraceMs } from './session/termination.js';
import type { KillResult, LogResult, PollResult, RegistryOptions, SessionSummary, SpawnOptions, WaitResult } from './types.js';

export type { KillResult, LogResult, PollResult, RegistryOptions, SessionSummary, SpawnOptions, WaitResult } from './types.js';

const DETACHED_TICK_MS = 25;

/** Events a registry emits: `completion` and `watch` (see `policy/notifications.ts`). */
export interface RegistryEvents {
  completion: [CompletionEvent];
  watch: [WatchEvent];
}

/** A background process registry. Create with {@link ProcessRegistry.open}. */
export class ProcessRegistry extends EventEmitter<RegistryEvents> {
  private readonly sessions = new Map<string, Live>();
  private readonly checkpoint: Checkpoint | undefined;
  private readonly writer: WriterIdentity;
  private readonly commits: GroupCommit;
  private readonly environments: ConfiguredEnvironments;
  /** What the sessions' kinds may ask of this registry. */
  private readonly host: SessionHost;
  private closed = false;
  /** Problems found while recovering (corrupt files, skipped entries). */
  readonly diagnostics: string[] = [];

  private readonly watchRate: RateLimit;

  private constructor(private readonly options: RegistryOptions) {
    super();
    checkRegistryOptions(options);
    this.watchRate = new RateLimit(options.watch?.maxPerMinute ?? 30);
    this.environments = new ConfiguredEnvironments(options.environments);
    this.checkpoint = options.stateDir !== undefined ? new Checkpoint(resolvePath(options.stateDir)) : undefined;
    this.writer = newWriter();
    this.commits = new GroupCommit(async () => {
      this.prune();
      const saved = await this.checkpoint?.save(
        [...this.sessions.values()].filter((l) => l.kind.owned && !this.readOnly.has(l.record.id)).map((l) => ({ ...l.record })),
        this.options,
        this.mayPrune(),
      );
      this.diagnostics.push(...(saved?.diagnostics ?? []));
    });
    this.host = {
      options,
      stateDir: this.checkpoint?.dir ?? null,
      diagnostics: this.diagnostics,
      environments: this.environments,
      tailChars: this.tailChars,
      register: (live) => {
        this.sessions.set(live.record.id, live);
        this.rebalance();
      },
      refresh: (live) => this.refresh(live),
      finish: (live, outcome) => this.finish(live, outcome),
      watch: (live, text) => this.watch(live, text),
      watcherFor: (record) => this.watcherFor(record),
      consume: (live) => this.consume(live),
      clean: (text, startsInKeyBlock) => this.clean(text, startsInKeyBlock),
      persist: () => this.persist(),
      persistSoon: () => this.persistSoon(),
      recordsOnDisk: () => this.checkpointView(),
      isForeign: (record) => this.isForeign(record),
    };
  }

  /** Opens a registry; with a `stateDir`, recovers the sessions its checkpoint lists first. */
  static async open(options: RegistryOptions = {}): Promise<ProcessRegistry> {
    const registry = new ProcessRegistry(options);
    await registry.recover();
    if (options.containment !== false) native.sweepCgroups();
    return registry;
  }

  private async recover(): Promise<void> {
    if (!this.checkpoint) return;
    // Entries older than their session.json (a damaged or previous checkpoint generation)
    // take their end from it in refresh().
    const { sessions, readOnly = [], diagnostics } = await this.checkpoint.load();
    const orphans = scanOrphanSessions(this.checkpoint.dir, new Set([...sessions, ...readOnly].map((r) => r.id)), (r) => this.isForeign(r));
    this.diagnostics.push(...diagnostics, ...orphans.diagnostics);
    // Entries this version does not understand are listed, never refreshed, acted on or written.
    const understood = new Set(sessions.map((r) => r.id));
    for (const record of [...readOnly, ...orphans.readOnly]) {
      // A second entry for a session this version understands changes nothing.
      if (understood.has(record.id)) continue;
      this.readOnly.add(record.id);
      this.sessions.set(record.id, this.recovered(record, true));
    }
    for (const record of [...sessions, ...orphans.records]) {
      const live = this.recovered(record, this.isForeign(record));
      this.sessions.set(record.id, live);
      await this.refresh(live);
    }
    // A state directory that cannot be written (a full disk) must not keep a host from
    // listing and killing what is there: the failed write is a diagnostic.
    if (sessions.length + orphans.records.length > 0 || diagnostics.length > 0) await this.persist().catch(this.reportWriteError);
  }

  /** A session read back from the state directory: detached, of the kind its record says. */
  private recovered(record: SessionRecord, foreign: boolean): Live {
    return newLive(record, this.tailChars, true, foreign, (live) => sessionFor(live, this.host));
  }

  private isForeign(record: SessionRecord): boolean {
    return isForeign(record, this.writer);
  }

  /**
   * Whether this host may prune a session: it owns it, or no live host does. One answer per
   * writer for the call's lifetime (a check reads the writer's process entry).
   */
  private mayPrune(): (record: SessionRecord) => boolean {
    const byWriter = new Map<string, boolean>();
    return (record) => {
      const live = this.sessions.get(record.id);
      if (live && !live.kind.owned) return false;
      const w = record.writer;
      const key = `${w.pid}:${w.startTime}:${w.bootId}:${w.instance ?? ''}`;
      const known = byWriter.get(key);
      if (known !== undefined) return !known;
      const foreign = this.isForeign(record);
      byWriter.set(key, foreign);
      return !foreign;
    };
  }

  /** Sessions kept read-only: entries of a newer schema, or that failed validation (see `session/record.ts`). */
  private readonly readOnly = new Set<string>();

  private readOnlyFlag(live: Live): { readOnly?: true } {
    return this.readOnly.has(live.record.id) ? { readOnly: true } : {};
  }

  /** A session this host may act on (kill, input, wait). Errors: those of `get`, and `SESSION_READ_ONLY`. */
  private actOn(id: string): Live {
    const live = this.get(id);
    if (this.readOnly.has(live.record.id)) {
      throw new ProcwardError('SESSION_READ_ONLY', `${live.record.id} was written by a newer procward or does not validate here: it is listed read-only and nothing is done to it`);
    }
    return live;
  }

  /** Keeps the in-memory output of all sessions within `maxTotalOutputChars` (see `output/budget.ts`). */
  private rebalance(): void {
    rebalance(this.sessions, this.options.maxTotalOutputChars ?? DEFAULT_TOTAL_OUTPUT_CHARS, this.tailChars);
  }

  private get tailChars(): number {
    return this.options.maxOutputChars ?? DEFAULT_TAIL_CHARS;
  }

  /**
   * Redacts text leaving the registry. `startsInKeyBlock`: the text begins inside a
   * private-key block whose BEGIN line came before it (see `redact`).
   */
  private clean(text: string, startsInKeyBlock = false): string {
    return this.options.redact === false ? text : redact(text, { startsInKeyBlock });
  }

  /**
   * Redacts a view of output. Plain: escape sequences are removed first, so a token wrapped
   * in colour codes is still recognised. Raw: redacted as written, and when a secret shows
   * only once the escapes are gone, the plain view is returned instead (never a leak).
   */
  private redactView(text: string, view: 'plain' | 'raw', startsInKeyBlock = false): string {
    const plain = this.clean(plainText(text), startsInKeyBlock);
    if (view === 'plain' || this.options.redact === false) return view === 'plain' ? plain : text;
    const raw = this.clean(text, startsInKeyBlock);
    return plainText(raw) === plain ? raw : plain;
  }

  /**
   * The session's watcher. Patterns read back from a record are untrusted (they did not
   * pass `spawn`): ones the core refuses (too many, too long, not linear-time) leave the
   * session unwatched, with one diagnostic.
   */
  private watcherFor(record: SessionRecord): LineWatcher | undefined {
    if (!record.watchPatterns?.length || record.status === 'exited') return undefined;
    const w = this.options.watch ?? {};
    const watcher = watcherForRecord(record.watchPatterns, { cooldownMs: w.cooldownMs ?? 2000, maxPerSession: w.maxPerSession ?? 20, maxPerMinute: w.maxPerMinute ?? 30 }, this.watchRate);
    if (watcher instanceof LineWatcher) return watcher;
    if (watcher.fresh) this.diagnostics.push(`${record.id}: watch patterns ignored: ${watcher.refused}`);
    return undefined;
  }

  /** Feeds output to the session's watcher (`null`: the output ended); queues, persists and emits what matched. */
  private watch(live: Live, text: string | null): void {
    if (!live.watcher || !live.kind.owned) return;
    const r = live.record;
    const hits = text === null ? live.watcher.flush(r.watchFired ?? 0) : live.watcher.feed(text, r.watchFired ?? 0);
    const skipped = live.watcher.takeSkipped();
    if (skipped > 0) this.diagnostics.push(`${r.id}: ${skipped} output lines not matched against watch patterns: the matching budget (100 ms per second) was spent`);
    if (hits.length === 0) return;
    // A hit is one line without its neighbours: a line of key material is masked on its own.
    const cleaned = hits.map((h) => ({ ...h, line: this.options.redact !== false && isKeyMaterialLine(h.line) ? KEY_MASK : this.clean(h.line) }));
    r.watchEvents = [...(r.watchEvents ?? []), ...cleaned].slice(-50);
    r.watchFired = (r.watchFired ?? 0) + hits.length;
    r.updatedAt = Date.now();
    for (const e of pendingWatchEvents({ ...r, watchEvents: cleaned })) this.emit('watch', e);
    this.persist().catch(this.reportWriteError);
  }

  /**
   * Starts `command` with `<shell> -c` in a new session; resolves once the session is
   * recorded (in the checkpoint too, when there is one).
   *
   * Errors: `INVALID_ARGUMENT` (empty command, durable without `stateDir`, watch patterns
   * refused: see `SpawnOptions.watchPatterns`), `ENOENT` (shell or
   * cwd missing), `EMFILE` (out of file descriptors), `REGISTRY_CLOSED`.
   */
  async spawn(command: string, opts: SpawnOptions = {}): Promise<SessionSummary> {
    this.assertOpen();
    validateCommand(command);
    checkSpawnOptions(opts);
    if (this.checkpoint?.newer) throw new ProcwardError('SESSION_READ_ONLY', `${this.checkpoint.path} was written by a newer procward: this host only reads it and starts nothing`);
    // A PTY closes with the host, so PTY sessions are never durable by default.
    const durable = opts.durable ?? (opts.pty ? false : (this.options.durable ?? this.checkpoint !== undefined));
    if (durable && !this.checkpoint) {
      throw new ProcwardError('INVALID_ARGUMENT', 'durable jobs need a registry opened with a stateDir');
    }
    if (durable && opts.pty) throw new ProcwardError('INVALID_ARGUMENT', 'a PTY session cannot be durable: the terminal closes with the host');
    for (const key of ['cols', 'rows'] as const) {
      const v = opts.pty?.[key];
      if (v !== undefined && !(Number.isInteger(v) && v >= 1 && v <= 65535)) throw new ProcwardError('INVALID_ARGUMENT', `pty.${key} must be an integer from 1 to 65535, got ${String(v)}`);
    }
    const env = childEnvironment(process.env, opts.env, opts.allowEnv);
    const watchPatterns = checkPatterns(opts.watchPatterns);
    // A sandbox's cwd is a path on the far side; only a host cwd is checked here.
    const sandbox = opts.environment !== undefined ? this.environments.forSpawn(opts.environment) : undefined;
    const cwd = opts.environment ? (opts.cwd ?? '~') : resolvePath(opts.cwd ?? process.cwd());
    if (!opts.environment && (!existsSync(cwd) || !statSync(cwd).isDirectory())) {
      throw new ProcwardError('ENOENT', `working directory ${cwd} does not exist or is not a directory`);
    }
    const spec = {
      command,
      env,
      durable,
      ...(sandbox && { sandbox }),
      ...(opts.cwd !== undefined && { cwd: opts.cwd }),
      ...(opts.env && { vars: opts.env }),
      ...(opts.stdin && { stdin: true }),
      ...(opts.pty && { pty: opts.pty }),
    };
    const now = Date.now();
    const live = newLive(
      {
        schemaVersion: SESSION_SCHEMA_VERSION,
        id: newSessionId(),
        command: this.options.redact === false ? command : redactCommand(command),
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
        logPath: null,
        exitPath: null,
        writer: this.writer,
        updatedAt: now,
        ...(opts.notifyOnComplete && { notifyOnComplete: true, notificationDelivered: false }),
        ...(watchPatterns.length > 0 && { watchPatterns, watchFired: 0 }),
      },
      this.tailChars,
      false,
      false,
      (l) => sessionToStart(l, this.host, spec),
    );
    live.watcher = this.watcherFor(live.record);
    await (live.kind as StartableSession).start(spec);
    return summary(live);
  }

  /** Publishes a session's end. Exactly one finisher wins; later calls change nothing. */
  private finish(live: Live, outcome: Outcome): boolean {
    const r = live.record;
    if (r.status === 'exited') return false;
    Object.assign(r, {
      status: 'exited',
      // A recovered durable job ended when its exit file says, not when we noticed.
      exitedAt: Math.max(r.startedAt, Math.min(outcome.exitedAt ?? Date.now(), Date.now())),
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      reason: outcome.reason,
      terminationSource: outcome.source,
      updatedAt: Date.now(),
      writer: this.writer,
    });
    live.kind.recordEnd();
    this.watch(live, null);
    if (r.notifyOnComplete && r.completionTail === undefined) r.completionTail = preview(live.tail.text(), COMPLETION_TAIL_CHARS, (t, k) => this.clean(t, k), live.tail.startsInKeyBlock);
    delete live.watcher;
    this.rebalance();
    live.kind.ended();
    for (const w of live.waiters) w();
    live.waiters.clear();
    const completion = pendingCompletion(r);
    if (completion && live.kind.owned) this.emit('completion', completion);
    // An end kept on disk (a durable job's exit file) lets its checkpoint write wait for the
    // next one (or a short timer); other ends are written at once.
    if (live.kind.onDisk && !completion) this.persistSoon();
    else this.persist().catch(this.reportWriteError);
    return true;
  }

  /** Brings a session up to date through its kind; read-only entries are never touched. */
  private async refresh(live: Live): Promise<void> {
    if (this.readOnly.has(live.record.id)) return;
    await live.kind.refresh();
  }

  /** The checkpoint as other hosts last wrote it, read at most once per 20 ms. */
  private foreignView: { at: number; byId: Promise<Map<string, SessionRecord>> } | null = null;

  /**
   * The checkpoint as other hosts last wrote it, read at most once per 20 ms: `list()` and
   * `drainNotifications()` refresh every foreign session, and each would otherwise re-read
   * and re-validate the whole file.
   */
  private checkpointView(): Promise<Map<string, SessionRecord>> {
    const now = Date.now();
    if (!this.foreignView || now - this.foreignView.at > 20) {
      const load = (this.checkpoint as Checkpoint).load().then(({ sessions }) => new Map(sessions.map((r) => [r.id, r])));
      this.foreignView = { at: now, byId: load };
    }
    return this.foreignView.byId;
  }

  private get(id: string): Live {
    this.assertOpen();
    if (typeof id === 'number') id = String(id);
    if (typeof id !== 'string') throw new ProcwardError('INVALID_ARGUMENT', `session id must be a string, got ${id === null ? 'null' : typeof id}`);
    return this.sessions.get(resolveSessionId(this.sessions.keys(), id)) as Live;
  }

  private assertOpen(): void {
    if (this.closed) throw new ProcwardError('REGISTRY_CLOSED', 'the registry is closed');
  }

  /** The summary as of now, then the output preview (reading a log may take a while). */
  private async pollResult(live: Live): Promise<PollResult> {
    const now = { ...summary(live), ...this.readOnlyFlag(live) };
    const out = await live.kind.output();
    return { ...now, outputPreview: preview(out.text, 2000, (t, k) => this.clean(t, k), out.startsInKeyBlock) };
  }

  /** Marks the session's completion event delivered (wait, end-reaching readLog, kill, acknowledged poll). */
  private consume(live: Live): void {
    const r = live.record;
    if (!pendingCompletion(r) || !live.kind.owned) return;
    r.notificationDelivered = true;
    r.updatedAt = Date.now();
    this.persist().catch(this.reportWriteError);
  }

  /** Status, PID, uptime, output preview and (once ended) exit code, signal and reason. */
  async poll(id: string, opts: { acknowledge?: boolean } = {}): Promise<PollResult> {
    const live = this.get(id);
    await this.refresh(live);
    if (opts.acknowledge) this.consume(live);
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
    const live = this.actOn(id);
    await this.refresh(live);
    if (live.record.status === 'running') {
      const tick = live.kind.waitTick();
      const timedOut = await untilEnd(live, {
        ...(timeoutMs !== undefined && { timeoutMs }),
        ...(signal && { signal }),
        ...(tick && { tick }),
        tickMs: DETACHED_TICK_MS,
      });
      const result = await this.pollResult(live);
      if (!timedOut) this.consume(live);
      return { ...result, timedOut, processRunning: live.record.status === 'running' };
    }
    this.consume(live);
    return { ...(await this.pollResult(live)), timedOut: false, processRunning: false };
  }

  /**
   * Line-paged output: by default the last 200 lines; `offset` 0 is the first line. Durable
   * jobs are read from their full log file, others from the in-memory tail.
   */
  async readLog(id: string, opts: LogOptions = {}): Promise<LogResult> {
    const live = this.get(id);
    await this.refresh(live);
    if (opts.view !== undefined && opts.view !== 'plain' && opts.view !== 'raw') {
      throw new ProcwardError('INVALID_ARGUMENT', `view must be 'plain' or 'raw', got ${JSON.stringify(opts.view)}`);
    }
    let got: Awaited<ReturnType<Live['kind']['readLog']>>;
    try {
      got = await live.kind.readLog(opts, (text, view, inKey) => this.redactView(text, view, inKey));
    } catch (err) {
      if (err instanceof RangeError) throw new ProcwardError('INVALID_ARGUMENT', err.message);
      throw err;
    }
    const { page } = got;
    if (live.record.status === 'exited' && page.offset + page.lines.length >= page.totalLines) this.consume(live);
    return logResult(live.record.id, live.record.status, got);
  }

  /**
   * Tree kill (snapshot, SIGTERM, grace period, SIGKILL) of the session's process group and descendants, with the
   * recorded identity: never signals a reused PID. `already_exited` for ended sessions.
   *
   * Whatever the record says, the kill guard never signals PID <= 1, the host, its group,
   * session or ancestors, a root that does not lead its own session, nor a cgroup procward
   * did not create for the session; refusals are listed in `refused`.
   *
   * Errors: `KILL_SURVIVORS` (details: the report) when processes outlived SIGKILL and the
   * settle window (which stretches up to 5 s while they are still dying); `KILL_REFUSED`
   * (details: the report) when the session is running and the guard refused its root, so
   * nothing was signalled (an ended session gives `already_exited` with the refusal listed);
   * `IDENTITY_UNKNOWN` when the process table cannot be read. A sandbox session is killed on
   * the far side: `ENVIRONMENT_UNAVAILABLE` when this host has not configured its environment.
   */
  async kill(id: string, opts: { graceMs?: number } = {}): Promise<KillResult> {
    this.assertOpen();
    const graceMs = opts?.graceMs ?? this.options.graceMs ?? 2000;
    // Every argument is checked before any side effect: a rejected kill leaves no marker.
    assertGraceMs(graceMs);
    const live = this.actOn(id);
    await this.refresh(live);
    return live.kind.kill(graceMs);
  }

  /**
   * Writes raw text to the session's stdin (pipe, PTY, or a durable job's FIFO), without
   * blocking. Errors: `SESSION_EXITED`, `NO_STDIN`, `STDIN_CLOSED` (after `closeStdin`),
   * `EAGAIN` (the job is not reading its input).
   */
  async write(id: string, data: string): Promise<{ id: string; bytes: number }> {
    return this.actOn(id).kind.write(data);
  }

  /** Writes `text` followed by Enter (LF; CR LF on a Windows console). */
  async submit(id: string, text: string): Promise<{ id: string; bytes: number }> {
    if (typeof text !== 'string') throw new ProcwardError('INVALID_ARGUMENT', 'text must be a string');
    return this.actOn(id).kind.write(`${text}${process.platform === 'win32' ? '\r\n' : '\n'}`);
  }

  /**
   * Ends the session's input: closes the pipe, sends EOF (Ctrl-D) to a PTY, or has a durable
   * job's supervisor close its end of the FIFO (the job reads EOF once no writer is left).
   */
  async closeStdin(id: string): Promise<{ id: string; closed: true }> {
    return this.actOn(id).kind.closeStdin();
  }

  /** Resizes a PTY session's terminal (columns and rows). */
  async resize(id: string, size: { cols: number; rows: number }): Promise<{ id: string; cols: number; rows: number }> {
    for (const key of ['cols', 'rows'] as const) {
      const v = size?.[key];
      if (!Number.isInteger(v) || v < 1 || v > 65535) throw new ProcwardError('INVALID_ARGUMENT', `${key} must be an integer from 1 to 65535, got ${String(v)}`);
    }
    const live = this.actOn(id);
    live.kind.resize(size);
    return { id: live.record.id, cols: size.cols, rows: size.rows };
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
      out.push({ ...summary(live, filter.taskId !== undefined && !taskMatch), ...this.readOnlyFlag(live) });
    }
    return out.sort((a, b) => a.startedAt - b.startedAt);
  }

  private prunedAt = 0;

  /** Drops finished sessions past their retention (and their job files), only those this host may prune (see `policy/retention.ts`). */
  private prune(): void {
    // Retention is checked at most every 250 ms (or TTL) unless the registry is over its
    // size cap: each check sorts every finished session.
    const now = Date.now();
    const every = Math.min(250, this.options.finishedTtlMs ?? 250);
    if (this.sessions.size <= (this.options.maxSessions ?? DEFAULT_MAX_SESSIONS) && now - this.prunedAt < every) return;
    this.prunedAt = now;
    // Sessions another live host owns are its to prune: it may keep them longer (their
    // session directories hold the logs its readLog serves).
    const prunable = [...this.sessions.values()].filter((l) => !this.readOnly.has(l.record.id)).map((l) => l.record);
    for (const id of expiredIds(prunable, this.options, now, this.mayPrune())) {
      this.sessions.get(id)?.kind.pruned();
      this.sessions.delete(id);
      if (this.checkpoint) removeSessionDir(this.checkpoint.dir, id);
    }
  }

  private reportWriteError = (err: unknown) => this.diagnostics.push(`checkpoint write failed: ${String(err)}`);

  /** Writes the checkpoint within 200 ms, sharing the write with anything else in that time. */
  private persistSoon(): void {
    if (!this.closed) this.commits.soon(200, this.reportWriteError);
  }

  /** Writes the checkpoint (group commit: concurrent callers share one write). */
  private persist(): Promise<void> {
    // After close() another host may own the state directory: write nothing more.
    if (this.closed) return Promise.resolve();
    if (!this.checkpoint) {
      this.prune();
      return Promise.resolve();
    }
    return this.commits.now();
  }

  /**
   * Flushes the checkpoint and stops accepting work; nothing is written after it. Never
   * rejects: a failed final write is added to `diagnostics`. Running
   * jobs are not killed: durable ones live on and the next host recovers them; pipe-mode
   * jobs lose their reader when this process exits.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    for (const live of this.sessions.values()) live.kind.close();
    // Empty cgroups of ended jobs go now; one that still holds a process stays.
    if (this.options.containment !== false) native.sweepCgroups();
    releaseWriter(this.writer);
    // Closed either way: a final write that fails (a full disk, a lock held too long)
    // becomes a diagnostic, never a half-closed registry.
    try {
      await this.persist();
    } catch (err) {
      this.reportWriteError(err);
    } finally {
      this.commits.stop();
      this.closed = true;
    }
  }

  /**
   * Returns and removes the pending events the caller owns: with `ownsEvent`, those it
   * returns true for (a predicate that throws owns nothing: the event stays queued);
   * otherwise those with the given `sessionKey` (all events when it is omitted). Events of
   * other owners stay queued.
   */
  async drainNotifications(opts: { sessionKey?: string; ownsEvent?: (event: ProcwardEvent) => boolean } = {}): Promise<ProcwardEvent[]> {
    this.assertOpen();
    const out: ProcwardEvent[] = [];
    const lives = [...this.sessions.values()];
    for (const live of lives) await this.refresh(live);
    const mine = lives.filter((l) => l.kind.owned);
    // Completions are claimed in the checkpoint first: another host may have delivered them.
    const candidates = mine.map((l) => pendingCompletion(l.record)).filter((c): c is CompletionEvent => c !== null && owns(c, opts));
    const claimed = this.checkpoint ? await this.checkpoint.claimCompletions(candidates.map((c) => c.sessionId)) : new Set(candidates.map((c) => c.sessionId));
    for (const live of mine) out.push(...takeOwned(live.record, opts, (c) => claimed.has(c.sessionId)));
    if (out.length > 0) await this.persist();
    return out.sort((a, b) => a.at - b.at);
  }

  /** Kills every running session of `taskId` except `excludeIds`; one outcome per session, never throws for one failure. */
  killAll(opts: { taskId: string; excludeIds?: string[]; graceMs?: number }): Promise<BulkKillOutcome[]> {
    return scoping.killAll(this, opts);
  }

  /** Ids of the task's running sessions: a baseline for {@link killStartedSince}. */
  snapshotRunningIds(taskId: string): Promise<string[]> {
    return scoping.snapshotRunningIds(this, taskId);
  }

  /** Kills the task's running sessions that are not in `baseline`. */
  killStartedSince(taskId: string, baseline: string[], opts: { graceMs?: number } = {}): Promise<BulkKillOutcome[]> {
    return scoping.killStartedSince(this, taskId, baseline, opts.graceMs);
  }

  /** Whether the task has a running session (detached sessions are re-checked first). */
  hasActiveProcesses(taskId: string): Promise<boolean> {
    return scoping.hasActiveProcesses(this, taskId);
  }

  /** Whether a session with this key runs and started within `maxActiveAgeMs` (milliseconds). */
  hasActiveForSession(sessionKey: string, opts: { maxActiveAgeMs?: number } = {}): Promise<boolean> {
    return scoping.hasActiveForSession(this, sessionKey, opts);
  }

  /** Counters for diagnostics and tests: sessions held, checkpoint writes done. */
  stats(): { sessions: number; checkpointWrites: number } {
    return { sessions: this.sessions.size, checkpointWrites: this.checkpoint?.writes ?? 0 };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
