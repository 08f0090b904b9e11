/**
 * The process registry: the index of sessions, the policy over them (scoping, retention,
 * output budget, redaction, watch patterns), their persistence (a checkpoint that lets the
 * next host recover them) and their notifications. What a session does is its kind's
 * business (see `session/kind.ts`): the registry asks, and never branches on the kind.
 *
 * Data flows one way: native spawn → reader events → session → registry → checkpoint.
 */
import { EventEmitter } from 'node:events';
import { ProcwardError } from './errors.js';
import { native } from './native.js';
import { jobSignal, signalJob, signalTree } from './processes.js';
import { checkOptions, checkRegistryOptions, checkSpawn } from './options.js';
import { rebalance } from './output/budget.js';
import { logResult } from './output/paging.js';
import { DEFAULT_TAIL_CHARS, DEFAULT_TOTAL_OUTPUT_CHARS } from './output/tail.js';
import { redactScreenRows } from './output/screenview.js';
import { preview, redactedView } from './output/views.js';
import { DiskBudget, evictedLogResult } from './persist/diskbudget.js';
import { SessionStore } from './persist/store.js';
import {
  COMPLETION_TAIL_CHARS,
  type CompletionEvent,
  owns,
  pendingCompletion,
  type ProcwardEvent,
  takeOwned,
  type WatchEvent,
} from './policy/notifications.js';
import { withheldVariables } from './policy/environment.js';
import { redact } from './policy/redact.js';
import { SpawnGate, type SpawnRequest } from './policy/spawnpolicy.js';
import { Watching } from './policy/watching.js';
import * as scoping from './policy/scoping.js';
import type { BulkKillOutcome } from './policy/scoping.js';
import { ConfiguredEnvironments } from './remote/configured.js';
import { resolveSessionId } from './session/ids.js';
import type { Live, Outcome, SessionHost } from './session/kind.js';
import { type StartableSession, sessionFor, sessionToStart } from './session/kinds.js';
import { Leftovers } from './session/leftovers.js';
import { refreshMany } from './session/refreshmany.js';
import { newLive, stoppedFlags, summary, untilEnd } from './session/live.js';
import { newSession } from './session/newsession.js';
import type { SessionRecord } from './session/record.js';
import { assertGraceMs, Deadlines } from './session/termination.js';
import type {
  ActiveForSessionOptions,
  DrainOptions,
  KillAllOptions,
  KillOptions,
  KillResult,
  ListFilter,
  LogDiskUsage,
  LogResult,
  PollOptions,
  PollResult,
  ReadLogOptions,
  RegistryOptions,
  SessionSummary,
  SignalResult,
  SpawnOptions,
  SpawnResult,
  StartOptions,
  TerminalScreen,
  TerminalSize,
  WaitOptions,
  WaitResult,
  WriteOptions,
} from './types.js';

export type { KillResult, LogDiskUsage, LogResult, PollResult, RegistryOptions, SessionSummary, SpawnOptions, WaitResult } from './types.js';

const DETACHED_TICK_MS = 25;
/**
 * Signals a durable job's supervisor ignores (a handler that does nothing) or that harm it
 * not: `signal` sends these to the process group the supervisor leads, which holds the job.
 */
const SUPERVISOR_IGNORES: ReadonlySet<string> = new Set(['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGCONT', 'SIGWINCH']);

/** What the spawn policy's hook sees of a spawn (see `policy/spawnpolicy.ts`). */
function spawnRequest(command: string, o: StartOptions, record: SessionRecord): SpawnRequest {
  return {
    command,
    cwd: record.cwd,
    env: { ...o.env },
    allowEnv: [...(o.allowEnv ?? [])],
    envSource: o.envSource ?? 'caller',
    ...(o.taskId !== undefined && { taskId: o.taskId }),
    ...(o.ownerTaskId !== undefined && { ownerTaskId: o.ownerTaskId }),
    ...(o.sessionKey !== undefined && { sessionKey: o.sessionKey }),
    durable: record.durable,
    pty: o.pty !== undefined,
    stdin: o.stdin === true,
    ...(typeof o.environment === 'string' && { environment: o.environment }),
  };
}
/** What refresh returns when there is nothing to do. */
const SETTLED: Promise<void> = Promise.resolve();

/** Events a registry emits: `completion` and `watch` (see `policy/notifications.ts`). */
export interface RegistryEvents {
  completion: [CompletionEvent];
  watch: [WatchEvent];
}

/** A background process registry. Create with {@link ProcessRegistry.open}. */
export class ProcessRegistry extends EventEmitter<RegistryEvents> {
  private readonly sessions = new Map<string, Live>();
  private readonly store: SessionStore;
  /** The disk budget of the state directory's durable logs (`maxTotalLogBytes`). */
  private readonly logs: DiskBudget;
  private readonly environments: ConfiguredEnvironments;
  private readonly watching: Watching;
  /** What ended sessions left running (see `session/leftovers.ts`). */
  private readonly leftovers = new Leftovers(this.sessions);
  /** The host's spawn policy (`spawnPolicy`, see `policy/spawnpolicy.ts`). */
  private readonly spawnGate: SpawnGate;
  /** Kill-after deadlines this host enforces (`SpawnOptions.timeoutMs`; a durable job's only once its supervisor did not). */
  private readonly deadlines: Deadlines;
  /** What the sessions' kinds may ask of this registry. */
  private readonly host: SessionHost;
  private closed = false;
  /** Problems found while recovering (corrupt files, skipped entries). */
  readonly diagnostics: string[] = [];

  private constructor(private readonly options: RegistryOptions) {
    super();
    checkRegistryOptions(options);
    this.watching = new Watching(options, this.diagnostics, (text) => this.clean(text));
    this.environments = new ConfiguredEnvironments(options.environments);
    this.spawnGate = new SpawnGate(options.spawnPolicy, () => this.runningRecords());
    this.store = new SessionStore(options, this.sessions, this.diagnostics);
    this.logs = new DiskBudget(this.store.dir, options, this.sessions, this.diagnostics);
    this.deadlines = new Deadlines({
      session: (id) => this.sessions.get(id),
      refresh: (live) => this.refresh(live),
      graceMs: () => options.graceMs ?? 2000,
      killed: (live) => {
        this.leftovers.check([live]);
        this.store.persist().catch(this.store.reportWriteError);
      },
      diagnostics: this.diagnostics,
    });
    this.host = {
      options,
      stateDir: this.store.dir,
      diagnostics: this.diagnostics,
      environments: this.environments,
      tailChars: this.tailChars,
      register: (live) => {
        this.sessions.set(live.record.id, live);
        this.rebalance(live);
        this.logs.started(live);
      },
      refresh: (live) => this.refresh(live),
      finish: (live, outcome) => this.finish(live, outcome),
      watch: (live, text) => this.watch(live, text),
      watcherFor: (record) => this.watching.watcherFor(record),
      consume: (live) => this.consume(live),
      clean: (text, startsInKeyBlock) => this.clean(text, startsInKeyBlock),
      persist: () => this.store.persist(),
      persistSoon: () => this.store.persistSoon(),
      recordsOnDisk: () => this.store.recordsOnDisk(),
      isForeign: (record) => this.store.isForeign(record),
    };
  }

  /** Opens a registry; with a `stateDir`, recovers the sessions its checkpoint lists first. */
  static async open(options: RegistryOptions = {}): Promise<ProcessRegistry> {
    const registry = new ProcessRegistry(options);
    await registry.recover();
    if (options.containment !== false) native.sweepCgroups();
    return registry;
  }

  /** Recovers the sessions the state directory lists: each one detached, of the kind its record says. */
  private async recover(): Promise<void> {
    const { records, readOnly, changed } = await this.store.recover();
    // Entries this version does not understand are listed, never refreshed, acted on or written.
    for (const record of readOnly) this.sessions.set(record.id, this.recovered(record, true));
    for (const record of records) {
      const live = this.recovered(record, this.store.isForeign(record));
      this.sessions.set(record.id, live);
      await this.refresh(live);
      // A deadline holds across hosts: one already past fires at once (a foreign session's
      // is its owner's to enforce until it is adopted here; see Deadlines).
      this.deadlines.arm(live);
    }
    this.leftovers.check(this.sessions.values());
    // A state directory that cannot be written (a full disk) must not keep a host from
    // listing and killing what is there: the failed write is a diagnostic.
    if (changed) await this.store.persist().catch(this.store.reportWriteError);
    this.logs.opened();
  }

  private recovered(record: SessionRecord, foreign: boolean): Live {
    return newLive(record, this.tailChars, true, foreign, (live) => sessionFor(live, this.host));
  }

  private readOnlyFlag(live: Live): { readOnly?: true } {
    return this.store.readOnly.has(live.record.id) ? { readOnly: true } : {};
  }

  /** A session this host may act on (kill, input, wait). Errors: those of `get`, and `SESSION_READ_ONLY`. */
  private actOn(id: string): Live {
    const live = this.get(id);
    if (this.store.readOnly.has(live.record.id)) {
      throw new ProcwardError('SESSION_READ_ONLY', `${live.record.id} was written by a newer procward or does not validate here: it is listed read-only and nothing is done to it`);
    }
    return live;
  }

  /** Keeps the in-memory output of all sessions within `maxTotalOutputChars` (see `output/budget.ts`). */
  private rebalance(changed: Live): void {
    rebalance(this.sessions, this.options.maxTotalOutputChars ?? DEFAULT_TOTAL_OUTPUT_CHARS, this.tailChars, changed);
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

  /** Feeds output to the session's watcher (`null`: the output ended); persists and emits what matched. */
  private watch(live: Live, text: string | null): void {
    if (!live.watcher || !live.kind.owned) return;
    const events = this.watching.feed(live.record, live.watcher, text);
    if (!events) return;
    for (const e of events) this.emit('watch', e);
    this.store.persist().catch(this.store.reportWriteError);
  }

  /**
   * Starts `command` with `<shell> -c` in a new session; resolves once the session is
   * recorded (in the checkpoint too, when there is one).
   *
   * Errors: `INVALID_ARGUMENT` (empty command, a host command over 131 071 bytes (execve's
   * limit on one argument; sandbox commands have none), durable without `stateDir`, watch
   * patterns refused: see `SpawnOptions.watchPatterns`), `ENOENT` (shell or
   * cwd missing), `EMFILE` (out of file descriptors), `REGISTRY_CLOSED`, `SPAWN_REFUSED`
   * (the host's `spawnPolicy`, or a model-supplied `env` setting a loader or runtime
   * variable: details `rule` and `reason`; nothing was started or written).
   *
   * The result names the host variables withheld from the job as secrets (`withheldEnv`).
   */
  async spawn(command: string, opts: SpawnOptions = {}): Promise<SpawnResult> {
    this.assertOpen();
    const checked = checkSpawn(opts);
    const { spec, record } = newSession(command, checked, {
      options: this.options,
      hasStateDir: this.store.dir !== null,
      newerCheckpoint: this.store.newerPath,
      environments: this.environments,
      writer: this.store.writer,
    });
    const admitted = await this.spawnGate.admit(spawnRequest(command, checked, record), checked.environment !== undefined);
    const runSpec = admitted.cwd !== undefined ? { ...spec, cwd: admitted.cwd } : spec;
    try {
      // The approval hook may have taken a while: the registry may have closed meanwhile.
      this.assertOpen();
      const live = newLive(record, this.tailChars, false, false, (l) => sessionToStart(l, this.host, runSpec));
      live.watcher = this.watching.watcherFor(live.record);
      await (live.kind as StartableSession).start(runSpec);
      this.deadlines.arm(live);
      const withheldEnv = checked.environment === undefined ? withheldVariables(process.env, checked.env, checked.allowEnv) : [];
      return { ...summary(live), withheldEnv };
    } finally {
      admitted.release();
    }
  }

  /** The records of running sessions, for the spawn policy's caps. */
  private *runningRecords(): Iterable<SessionRecord> {
    for (const live of this.sessions.values()) if (live.record.status === 'running') yield live.record;
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
      writer: this.store.writer,
    });
    if (outcome.timedOut) r.timedOut = true;
    this.deadlines.clear(r.id);
    live.kind.recordEnd();
    this.watch(live, null);
    if (r.notifyOnComplete && r.completionTail === undefined) r.completionTail = preview(live.tail.text(), COMPLETION_TAIL_CHARS, (t, k) => this.clean(t, k), live.tail.startsInKeyBlock);
    delete live.watcher;
    this.rebalance(live);
    live.kind.ended();
    this.leftovers.soon(live);
    this.logs.ended(live);
    for (const w of live.waiters) w();
    live.waiters.clear();
    const completion = pendingCompletion(r);
    if (completion && live.kind.owned) this.emit('completion', completion);
    // An end kept on disk (a durable job's exit file) lets its checkpoint write wait for the
    // next one (or a short timer); other ends are written at once.
    if (live.kind.onDisk && !completion) this.store.persistSoon();
    else this.store.persist().catch(this.store.reportWriteError);
    return true;
  }

  /**
   * Brings a session up to date through its kind; read-only entries are never touched, and
   * an ended session this host owns has nothing to bring (its kind's refresh does nothing):
   * both get {@link SETTLED}, which list() does not await (10 000 awaits were most of a list).
   */
  private refresh(live: Live): Promise<void> {
    // A closed registry follows nothing: no poller is attached after close().
    if (this.closed || this.store.readOnly.has(live.record.id) || (live.record.status === 'exited' && !live.foreign)) return SETTLED;
    return live.kind.refresh();
  }

  private get(id: string): Live {
    this.assertOpen();
    if (typeof id === 'number') id = String(id);
    if (typeof id !== 'string') throw new ProcwardError('INVALID_ARGUMENT', `session id must be a string, got ${id === null ? 'null' : typeof id}`);
    // A whole id is found without a scan of every session (a prefix of 12 hex is the id itself).
    return (this.sessions.get(id) ?? this.sessions.get(resolveSessionId(this.sessions.keys(), id))) as Live;
  }

  private assertOpen(): void {
    if (this.closed) throw new ProcwardError('REGISTRY_CLOSED', 'the registry is closed');
  }

  /** The summary as of now, then the output preview (reading a log may take a while). */
  private async pollResult(live: Live): Promise<PollResult> {
    const now = { ...summary(live, false, stoppedFlags([live])[0]), ...this.readOnlyFlag(live), ...this.logs.flag(live), ...this.leftovers.flag(live) };
    const out = await live.kind.output();
    return { ...now, outputPreview: preview(out.text, 2000, (t, k) => this.clean(t, k), out.startsInKeyBlock) };
  }

  /** Marks the session's completion event delivered (wait, end-reaching readLog, kill, acknowledged poll). */
  private consume(live: Live): void {
    const r = live.record;
    if (!pendingCompletion(r) || !live.kind.owned) return;
    r.notificationDelivered = true;
    r.updatedAt = Date.now();
    this.store.persist().catch(this.store.reportWriteError);
  }

  /** Status, PID, uptime, output preview and (once ended) exit code, signal and reason. */
  async poll(id: string, opts: PollOptions = {}): Promise<PollResult> {
    checkOptions('poll', opts);
    const live = this.get(id);
    await this.refresh(live);
    if (opts.acknowledge) this.consume(live);
    this.leftovers.check([live]);
    return this.pollResult(live);
  }

  /**
   * Resolves as soon as the session ends (event-driven; detached sessions are re-checked
   * every 25 ms), or when `timeoutMs` passes with `timedOut: true` and the partial output.
   *
   * Errors: `INVALID_ARGUMENT` for a non-positive or non-finite timeout; the abort reason
   * when `signal` aborts; `UNKNOWN_SESSION`.
   */
  async wait(id: string, opts: WaitOptions = {}): Promise<WaitResult> {
    const { timeoutMs, signal } = checkOptions('wait', opts);
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      throw new ProcwardError('INVALID_ARGUMENT', `timeoutMs must be a positive number, got ${timeoutMs}`);
    }
    signal?.throwIfAborted();
    const live = this.actOn(id);
    await this.refresh(live);
    // An abort while the refresh ran has fired already: untilEnd's listener would never hear it.
    signal?.throwIfAborted();
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
   * jobs are read from their full log file, others from the in-memory tail. `maxBytes`
   * (default 1 MiB, at least 256) caps the page's text in UTF-8 bytes: lines that do not fit
   * are left out (the page's `offset` and `showing` say which it holds), and a line longer
   * than the cap alone is cut with a marker that says how many bytes were cut.
   * `INVALID_ARGUMENT` for a bad offset, limit, view or maxBytes.
   */
  async readLog(id: string, opts: ReadLogOptions = {}): Promise<LogResult> {
    checkOptions('readLog', opts);
    const live = this.get(id);
    await this.refresh(live);
    if (opts.view !== undefined && opts.view !== 'plain' && opts.view !== 'raw') {
      throw new ProcwardError('INVALID_ARGUMENT', `view must be 'plain' or 'raw', got ${JSON.stringify(opts.view)}`);
    }
    const evicted = this.logs.eviction(live);
    if (evicted) return evictedLogResult(live.record.id, live.record.status, evicted);
    let got: Awaited<ReturnType<Live['kind']['readLog']>>;
    try {
      got = await live.kind.readLog(opts, (text, view, inKey) => redactedView(text, view, this.options.redact === false ? null : (t) => this.clean(t, inKey)));
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
  async kill(id: string, opts: KillOptions = {}): Promise<KillResult> {
    this.assertOpen();
    checkOptions('kill', opts);
    const graceMs = opts?.graceMs ?? this.options.graceMs ?? 2000;
    // Every argument is checked before any side effect: a rejected kill leaves no marker.
    assertGraceMs(graceMs);
    const live = this.actOn(id);
    await this.refresh(live);
    try {
      return await live.kind.kill(graceMs);
    } finally {
      // What the kill left of an ended job: nothing, unless a survivor is still dying.
      this.leftovers.check([live]);
    }
  }

  /**
   * Sends one signal to the session's job, with no escalation and no wait: to its process
   * group (`kill(-pid)`), as a terminal sends Ctrl-C to its foreground job, so a dev server's
   * children get it too; descendants that left the group (`setsid`) do not. The job may
   * handle it and run on, or end: its end is then published as any exit is (reason
   * `exited`, with the signal). Checked as a kill is: the recorded identity must be
   * `current` right before the signal (a reused PID is never signalled) and the kill guard
   * applies (never PID <= 1, the host, its group, session or ancestors).
   *
   * A durable job shares its process group with its supervisor, which ignores SIGHUP,
   * SIGINT and SIGTERM (and SIGCONT and SIGWINCH harm nothing): those go to the group; any
   * other signal goes to the job's own process tree, once its identity is known: the job's
   * process and its descendants one by one, snapshotted with their identities before the
   * first signal, never the supervisor (`processGroup: false`, `signalled` lists the PIDs
   * that got it). So `a | b` stops or ends whole, as an in-memory job's group does.
   *
   * `name`: one of `JOB_SIGNALS` (`SIGHUP`, `SIGINT`, `SIGQUIT`, `SIGTERM`, `SIGKILL`,
   * `SIGUSR1`, `SIGUSR2`, `SIGALRM`, `SIGCONT`, `SIGSTOP`, `SIGTSTP`, `SIGWINCH`),
   * case-insensitive, `SIG` optional.
   *
   * Errors: `INVALID_ARGUMENT` for another name (details: `allowed`); `SESSION_EXITED` when
   * the session has ended (nothing is signalled); `KILL_REFUSED` (details: the report) when
   * the guard refused; `IDENTITY_UNKNOWN` when the process cannot be read now; `ENOTSUP` on
   * Windows, and for a durable job whose own process is not known yet with a signal its
   * supervisor does not ignore; `UNKNOWN_SESSION`, `SESSION_READ_ONLY`.
   *
   * A sandbox session is signalled on the far side: the job's own process, then its
   * descendants, each checked by its start time there right before its signal, never the
   * wrapper that shares the job's group (`processGroup: false`, `pid` and `signalled` are
   * the far side's; see `remote/farsignal.ts`). There `ENOTSUP` also means the job's process
   * is not recorded yet or the far side has no /proc, and `ENVIRONMENT_UNAVAILABLE` that it
   * cannot be reached or this host has not configured its environment. A BusyBox far side's
   * job ignores SIGINT and SIGQUIT (see the README).
   */
  async signal(id: string, name: string): Promise<SignalResult> {
    this.assertOpen();
    const signal = jobSignal(name);
    const live = this.actOn(id);
    await this.refresh(live);
    const r = live.record;
    const ended = () => new ProcwardError('SESSION_EXITED', `session ${r.id} has ended; ${signal} was not sent`);
    if (r.status !== 'running') throw ended();
    // A kind that signals its job itself (a sandbox session: on the far side).
    const own = live.kind.signal(signal);
    if (own) return own;
    const viaGroup = !r.durable || SUPERVISOR_IGNORES.has(signal);
    const target = viaGroup ? r.identity : r.jobIdentity;
    if (!target) {
      throw new ProcwardError(
        'ENOTSUP',
        r.durable
          ? `session ${r.id} is a durable job whose own process is not known yet: ${signal} would reach its supervisor; send one of ${[...SUPERVISOR_IGNORES].join(', ')} or kill it`
          : `session ${r.id} runs in another environment (or has no process yet): it cannot be signalled from this host; kill it instead`,
      );
    }
    // Not via the group: the job's own tree, one by one, never the supervisor that leads the group.
    const report = viaGroup ? signalJob(target, signal) : signalTree(target, signal);
    if (report.signalled.includes(target.pid)) return { id: r.id, signal, pid: target.pid, processGroup: viaGroup, ...(!viaGroup && { signalled: report.signalled }) };
    if (report.refused.length > 0) throw new ProcwardError('KILL_REFUSED', `${signal} to session ${r.id} was refused: ${report.refused.map((x) => x.reason).join(', ')}`, { report });
    if (report.survivors.length > 0) throw new ProcwardError('IDENTITY_UNKNOWN', `process ${target.pid} of session ${r.id} cannot be read now; ${signal} was not sent`, { report });
    // Gone or reused since the refresh: the job ended.
    await this.refresh(live);
    throw ended();
  }

  /**
   * Writes raw text to the session's stdin (pipe, PTY, or a durable job's FIFO), after the
   * writes and the close asked for before it, never blocking the event loop: resolves once
   * every byte reached the job's input, waiting for a job that reads however long it takes.
   * Errors, each with `written` (bytes of this write that got through, also in `details`):
   * `WRITE_TIMEOUT` when the job took none of its input for `timeoutMs` (default 30 000: it
   * is not reading; the writes queued behind it fail too, with `written: 0`),
   * `SESSION_EXITED` (it exited or closed its stdin), `STDIN_CLOSED` (after `closeStdin`);
   * `NO_STDIN`, `INVALID_ARGUMENT`.
   */
  async write(id: string, data: string, opts: WriteOptions = {}): Promise<{ id: string; bytes: number }> {
    checkOptions('write', opts);
    return this.actOn(id).kind.write(data, opts);
  }

  /**
   * Writes `text` followed by Enter: CR LF to a PTY session on Windows (a ConPTY console
   * reads Enter as CR), LF everywhere else (pipes and durable jobs' named pipes on Windows,
   * every input on Unix). Waits and fails as {@link write} does.
   */
  async submit(id: string, text: string, opts: WriteOptions = {}): Promise<{ id: string; bytes: number }> {
    checkOptions('submit', opts);
    if (typeof text !== 'string') throw new ProcwardError('INVALID_ARGUMENT', 'text must be a string');
    const live = this.actOn(id);
    const enter = process.platform === 'win32' && live.job?.inputKind === 'pty' ? '\r\n' : '\n';
    return live.kind.write(`${text}${enter}`, opts);
  }

  /**
   * Ends the session's input, after the writes that wait: closes the pipe, sends EOF (Ctrl-D)
   * to a PTY, or has a durable job's supervisor close its end of the FIFO (the job reads EOF
   * once no writer is left).
   */
  async closeStdin(id: string): Promise<{ id: string; closed: true }> {
    return this.actOn(id).kind.closeStdin();
  }

  /** Resizes a PTY session's terminal (columns and rows). */
  async resize(id: string, size: Required<TerminalSize>): Promise<{ id: string; cols: number; rows: number }> {
    checkOptions('resize', size, true);
    for (const key of ['cols', 'rows'] as const) {
      const v = size?.[key];
      if (!Number.isInteger(v) || v < 1 || v > 65535) throw new ProcwardError('INVALID_ARGUMENT', `${key} must be an integer from 1 to 65535, got ${String(v)}`);
    }
    const live = this.actOn(id);
    live.kind.resize(size);
    return { id: live.record.id, cols: size.cols, rows: size.rows };
  }

  /**
   * What a PTY session's terminal shows now: each row's text, the cursor (0-based cells) and
   * the size, as the terminal emulator the session's output runs through keeps it (it also
   * answers the program's terminal queries). Lines are redacted as all output is, a line
   * wrapped over rows as one (`wrapped` marks them). Drawing is bounded by work per call:
   * under a flood the screen is as drawn so far and `pendingBytes` says what waits. An ended
   * session keeps its last screen. Errors: `INVALID_ARGUMENT` for a session without a PTY,
   * or one another host started (only that host has its screen); those of `get`.
   */
  async screen(id: string): Promise<TerminalScreen> {
    const live = this.get(id);
    await this.refresh(live);
    const s = live.kind.screen();
    const rows = { lines: s.lines, wrapped: s.wrapped };
    const { lines, wrapped } = this.options.redact === false ? rows : redactScreenRows(rows, (t) => this.clean(t));
    const { row, col, visible } = s.cursor;
    return { id: live.record.id, status: live.record.status, lines, wrapped, cursor: { row, col, visible }, cols: s.cols, rows: s.rows, alternateScreen: s.alternateScreen, pendingBytes: s.pendingBytes };
  }

  /**
   * Summaries, oldest first. With `taskId`, the task's sessions; with `sessionKey` too,
   * sessions sharing the key but started by another task are included and flagged
   * `sessionScoped`.
   */
  async list(filter: ListFilter = {}): Promise<SessionSummary[]> {
    this.assertOpen();
    checkOptions('list', filter);
    const listed: { live: Live; scoped: boolean }[] = [];
    for (const live of this.sessions.values()) {
      const r = live.record;
      const taskMatch = filter.taskId === undefined || r.taskId === filter.taskId || r.ownerTaskId === filter.taskId;
      const keyMatch = filter.sessionKey !== undefined && r.sessionKey === filter.sessionKey;
      if (filter.taskId !== undefined && !taskMatch && !keyMatch) continue;
      if (filter.taskId === undefined && filter.sessionKey !== undefined && !keyMatch) continue;
      listed.push({ live, scoped: filter.taskId !== undefined && !taskMatch });
    }
    // At most 8 at a time: a far side that does not answer holds its own refresh, not the others'.
    await refreshMany(listed, ({ live }) => this.refresh(live), SETTLED);
    this.assertOpen();
    // The running jobs' stop states in one native call.
    const stopped = stoppedFlags(listed.map((l) => l.live));
    const out = listed.map(({ live, scoped }, i) => ({ ...summary(live, scoped, stopped[i]), ...this.readOnlyFlag(live), ...this.logs.flag(live), ...this.leftovers.flag(live) }));
    return out.sort((a, b) => a.startedAt - b.startedAt);
  }

  /**
   * Flushes the checkpoint and stops accepting work; nothing is written after it. Never
   * rejects: a failed final write is added to `diagnostics`. Running
   * jobs are not killed: durable ones live on and the next host recovers them; pipe-mode
   * jobs lose their reader when this process exits, and those of an in-memory registry end
   * with this process (see `SpawnOptions.outliveHost`).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.leftovers.stop();
    this.deadlines.stop();
    for (const live of this.sessions.values()) live.kind.close();
    // Empty cgroups of ended jobs go now; one that still holds a process stays.
    if (this.options.containment !== false) native.sweepCgroups();
    await this.logs.close();
    await this.store.close();
    this.closed = true;
  }

  /**
   * Returns and removes the pending events the caller owns: with `ownsEvent`, those it
   * returns true for (a predicate that throws owns nothing: the event stays queued);
   * otherwise those with the given `sessionKey` (all events when it is omitted). Events of
   * other owners stay queued.
   */
  async drainNotifications(opts: DrainOptions = {}): Promise<ProcwardEvent[]> {
    this.assertOpen();
    checkOptions('drainNotifications', opts);
    const out: ProcwardEvent[] = [];
    const lives = [...this.sessions.values()];
    await refreshMany(lives, (live) => this.refresh(live), SETTLED);
    const mine = lives.filter((l) => l.kind.owned);
    // Completions are claimed in the checkpoint first: another host may have delivered them.
    const candidates = mine.map((l) => pendingCompletion(l.record)).filter((c): c is CompletionEvent => c !== null && owns(c, opts));
    const claimed = await this.store.claimCompletions(candidates.map((c) => c.sessionId));
    for (const live of mine) out.push(...takeOwned(live.record, opts, (c) => claimed.has(c.sessionId)));
    if (out.length > 0) await this.store.persist();
    return out.sort((a, b) => a.at - b.at);
  }

  /**
   * Kills every active session of `taskId` except `excludeIds`: running ones, and ended ones
   * whose leftovers still run (their kill ends those: `already_exited` with them in
   * `signalled`). One outcome per session, never throws for one failure.
   */
  async killAll(opts: KillAllOptions): Promise<BulkKillOutcome[]> {
    const checked = checkOptions('killAll', opts, true);
    this.leftovers.checkScope(checked?.taskId);
    return scoping.killAll(this, checked);
  }

  /** Ids of the task's active sessions (running, or ended with live leftovers): a baseline for {@link killStartedSince}. */
  snapshotRunningIds(taskId: string): Promise<string[]> {
    this.leftovers.checkScope(taskId);
    return scoping.snapshotRunningIds(this, taskId);
  }

  /** Kills the task's active sessions (as {@link killAll} counts them) that are not in `baseline`. */
  async killStartedSince(taskId: string, baseline: string[], opts: KillOptions = {}): Promise<BulkKillOutcome[]> {
    this.leftovers.checkScope(taskId);
    return scoping.killStartedSince(this, taskId, baseline, checkOptions('killStartedSince', opts).graceMs);
  }

  /** Whether the task has a running session, or an ended one whose leftovers still run (detached sessions are re-checked first). */
  hasActiveProcesses(taskId: string): Promise<boolean> {
    this.leftovers.checkScope(taskId);
    return scoping.hasActiveProcesses(this, taskId);
  }

  /** Whether a session with this key runs (or left processes running) and started within `maxActiveAgeMs` (milliseconds). */
  async hasActiveForSession(sessionKey: string, opts: ActiveForSessionOptions = {}): Promise<boolean> {
    const checked = checkOptions('hasActiveForSession', opts);
    this.leftovers.checkScope(undefined, sessionKey);
    return scoping.hasActiveForSession(this, sessionKey, checked);
  }

  /**
   * Forgets one ended session now, as retention would later: its record, its log and exit
   * file (its session directory in the state directory). Returns its full id.
   * Errors: `UNKNOWN_SESSION`, `AMBIGUOUS_SESSION_ID`, `SESSION_READ_ONLY`,
   * `SESSION_RUNNING` (it has not ended: kill it first), `SESSION_OWNED` (another live host
   * owns it; that host prunes it).
   */
  async forget(id: string): Promise<{ id: string }> {
    const live = this.actOn(id);
    await this.refresh(live);
    const r = live.record;
    if (r.status !== 'exited') throw new ProcwardError('SESSION_RUNNING', `${r.id} is still running: only an ended session can be forgotten (kill it first)`);
    if (!this.store.forgetEnded(r)) throw new ProcwardError('SESSION_OWNED', `${r.id} belongs to another live host; that host keeps or prunes it`);
    await this.store.persist();
    return { id: r.id };
  }

  /**
   * Disk taken by the state directory's durable logs against `maxTotalLogBytes`: measures the
   * running logs and enforces the budget first (evicting the oldest delivered logs).
   */
  async logDiskUsage(): Promise<LogDiskUsage> {
    this.assertOpen();
    return this.logs.usage();
  }

  /** Counters for diagnostics and tests: sessions held, checkpoint writes done. */
  stats(): { sessions: number; checkpointWrites: number } {
    return { sessions: this.sessions.size, checkpointWrites: this.store.writes };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
