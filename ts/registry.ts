/**
 * The process registry: sessions for background jobs, their output, their end, and (with a
 * state directory) a checkpoint that lets the next host recover them.
 *
 * Data flows one way: native spawn → reader events → session → registry → checkpoint.
 */
import { existsSync, rmSync, statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { Checkpoint } from './persist/checkpoint.js';
import { EventEmitter } from 'node:events';
import { childEnvironment, shellCommand, validateCommand } from './policy/environment.js';
import { fromNative, ProcwardError } from './errors.js';
import { checkSpawnOptions } from './session/spawnoptions.js';
import { killTree, MAX_GRACE_MS, verdict, type KillReport } from './processes.js';
import { GroupCommit } from './persist/groupcommit.js';
import { isForeign, newWriter, releaseWriter, type WriterIdentity } from './persist/writer.js';
import { newSessionId, resolveSessionId } from './session/ids.js';
import { closeFifo, writeFifo } from './session/stdinfifo.js';
import { LARGE_LOG_BYTES, NO_DROPS, readLog, readLogFrom, readLogTail, streamLogPage, type LogDrops } from './output/durablelog.js';
import {
  jobFiles,
  killRequested,
  readExitFile,
  readSupervisorIdentity,
  removeSessionDir,
  sessionFiles,
  writePrivate,
  type JobFiles,
  type RecordedExit,
} from './persist/jobfiles.js';
import { native, supervisorPath, type JobEvent, type NativeJob } from './native.js';
import { inputOf, newLive, settle, summary, untilEnd, writeInput, type Live } from './session/live.js';
import { DEFAULT_TAIL_CHARS, DEFAULT_TOTAL_OUTPUT_CHARS, NativeTail, type TailView } from './output/tail.js';
import { type LinePage, pageLines, plainText, preview, showing } from './output/views.js';
import {
  checkPatterns,
  COMPLETION_TAIL_CHARS,
  LineWatcher,
  owns,
  pendingCompletion,
  pendingWatchEvents,
  RateLimit,
  takeOwned,
  watcherForRecord,
  type CompletionEvent,
  type ProcwardEvent,
  type WatchEvent,
} from './policy/notifications.js';
import { insideKeyBlockAt, isKeyMaterialLine, KEY_MASK, leadsWithKeyMaterial, redact, redactCommand } from './policy/redact.js';
import { readSessionFile, scanOrphanSessions } from './persist/recovery.js';
import { killRemote, launch, SandboxPoller, sandboxDir, shq } from './remote/sandbox.js';
import type { ExecutionEnvironment } from './remote/environments.js';
import { DEFAULT_MAX_SESSIONS, expiredIds } from './policy/retention.js';
import * as scoping from './policy/scoping.js';
import type { BulkKillOutcome } from './policy/scoping.js';
import { assertGraceMs, claimKill, createKillMarker, endedUnreaped, finishKillInBackground, killClaimed } from './session/termination.js';
import { type CompletionReason, SESSION_SCHEMA_VERSION, type SessionRecord } from './session/record.js';
import type { KillResult, LogResult, PollResult, RegistryOptions, SessionSummary, SpawnOptions, WaitResult } from './types.js';

export type { KillResult, LogResult, PollResult, RegistryOptions, SessionSummary, SpawnOptions, WaitResult } from './types.js';

interface Outcome extends RecordedExit {
  reason: CompletionReason;
  source: string;
}

const DETACHED_TICK_MS = 25;
/** How long a recovered durable job may take to record its supervisor before it counts as lost. */
const SUPERVISOR_START_MS = 3_000;

/** Default of `logMaxBytes`: 64 MiB per durable session (two parts of 32 MiB). */
const LOG_MAX_BYTES = 64 * 1024 * 1024;
const EMPTY_REPORT = { signalled: [], alreadyGone: [], refusedReused: [], survivors: [], survivorIdentities: [], escalated: false, refused: [] };

/** Events a registry emits: `completion` and `watch` (see `notifications.ts`). */
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
  private closed = false;
  /** Problems found while recovering (corrupt files, skipped entries). */
  readonly diagnostics: string[] = [];

  private readonly watchRate: RateLimit;

  private constructor(private readonly options: RegistryOptions) {
    super();
    const counts: [string, unknown][] = [
      ['maxOutputChars', options.maxOutputChars],
      ['maxTotalOutputChars', options.maxTotalOutputChars],
      ['finishedTtlMs', options.finishedTtlMs],
      ['maxSessions', options.maxSessions],
      ['watch.cooldownMs', options.watch?.cooldownMs],
      ['watch.maxPerSession', options.watch?.maxPerSession],
      ['watch.maxPerMinute', options.watch?.maxPerMinute],
      ['sandbox.pollIntervalMs', options.sandbox?.pollIntervalMs],
      ['sandbox.lostAfterMs', options.sandbox?.lostAfterMs],
      ['logMaxBytes', options.logMaxBytes],
    ];
    for (const [key, v] of counts) {
      if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 0)) throw new ProcwardError('INVALID_ARGUMENT', `${key} must be a non-negative integer, got ${String(v)}`);
    }
    if (options.graceMs !== undefined && !(Number.isInteger(options.graceMs) && options.graceMs >= 0 && options.graceMs <= MAX_GRACE_MS)) {
      throw new ProcwardError('INVALID_ARGUMENT', `graceMs must be an integer from 0 to ${MAX_GRACE_MS}, got ${String(options.graceMs)}`);
    }
    if (options.logMaxBytes !== undefined && options.logMaxBytes < 4096) throw new ProcwardError('INVALID_ARGUMENT', `logMaxBytes must be at least 4096, got ${options.logMaxBytes}`);
    if (options.shell !== undefined && (typeof options.shell !== 'string' || options.shell === '')) throw new ProcwardError('INVALID_ARGUMENT', 'shell must be a non-empty path or command name');
    if (options.shellArgs !== undefined && !(Array.isArray(options.shellArgs) && options.shellArgs.every((a) => typeof a === 'string'))) {
      throw new ProcwardError('INVALID_ARGUMENT', 'shellArgs must be an array of strings');
    }
    this.watchRate = new RateLimit(options.watch?.maxPerMinute ?? 30);
    if (options.stateDir !== undefined && (typeof options.stateDir !== 'string' || options.stateDir === '')) {
      throw new ProcwardError('INVALID_ARGUMENT', `stateDir must be a non-empty path (omit it for an in-memory registry), got ${JSON.stringify(options.stateDir)}`);
    }
    const envs = options.environments;
    if (envs !== undefined && (envs === null || typeof envs !== 'object' || Array.isArray(envs) || !Object.values(envs).every(isEnvironment))) {
      throw new ProcwardError('INVALID_ARGUMENT', 'environments must map names to ExecutionEnvironment objects');
    }
    this.checkpoint = options.stateDir !== undefined ? new Checkpoint(resolvePath(options.stateDir)) : undefined;
    this.writer = newWriter();
    this.commits = new GroupCommit(async () => {
      this.prune();
      const saved = await this.checkpoint?.save(
        [...this.sessions.values()].filter((l) => !l.foreign && !this.readOnly.has(l.record.id)).map((l) => ({ ...l.record })),
        this.options,
        this.mayPrune(),
      );
      this.diagnostics.push(...(saved?.diagnostics ?? []));
    });
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
      this.sessions.set(record.id, newLive(record, this.tailChars, true, true));
    }
    for (const record of [...sessions, ...orphans.records]) {
      const live = newLive(record, this.tailChars, true, this.isForeign(record));
      this.sessions.set(record.id, live);
      await this.refresh(live);
    }
    // A state directory that cannot be written (a full disk) must not keep a host from
    // listing and killing what is there: the failed write is a diagnostic.
    if (sessions.length + orphans.records.length > 0 || diagnostics.length > 0) await this.persist().catch(this.reportWriteError);
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
      if (this.sessions.get(record.id)?.foreign) return false;
      const w = record.writer;
      const key = `${w.pid}:${w.startTime}:${w.bootId}:${w.instance ?? ''}`;
      const known = byWriter.get(key);
      if (known !== undefined) return !known;
      const foreign = this.isForeign(record);
      byWriter.set(key, foreign);
      return !foreign;
    };
  }

  /** Sessions kept read-only: entries of a newer schema, or that failed validation (see `session.ts`). */
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

  /**
   * Keeps the in-memory output of all sessions within `maxTotalOutputChars`: running
   * sessions share the budget (each gets at most its own cap), finished durable sessions
   * give up their tail first (their log is on disk), then finished others, oldest first.
   */
  private rebalance(): void {
    const budget = this.options.maxTotalOutputChars ?? DEFAULT_TOTAL_OUTPUT_CHARS;
    let running = 0;
    for (const l of this.sessions.values()) if (l.record.status === 'running') running++;
    const share = running ? Math.min(this.tailChars, Math.floor(budget / running)) : this.tailChars;
    // Native tails answer through a call into the addon, so limits and the sizes of
    // finished tails (which barely change) are remembered here.
    let finishedHeld = 0;
    const finished: Live[] = [];
    for (const l of this.sessions.values()) {
      if (l.record.status === 'running') {
        if (l.tailLimit !== share) {
          l.tail.shrinkTo(share);
          l.tailLimit = share;
        }
      } else {
        l.heldAfterExit ??= l.tail.heldChars;
        finishedHeld += l.heldAfterExit;
        if (l.heldAfterExit > 0) finished.push(l);
      }
    }
    // Running tails stay within `running × share ≤ budget`; count them only when finished
    // tails might not fit beside them.
    if (finished.length === 0 || running * share + finishedHeld <= budget) return;
    let total = finishedHeld;
    for (const l of this.sessions.values()) if (l.record.status === 'running') total += l.tail.heldChars;
    finished.sort((a, b) => Number(b.record.durable) - Number(a.record.durable) || (a.record.exitedAt ?? 0) - (b.record.exitedAt ?? 0));
    for (const l of finished) {
      if (total <= budget) break;
      total -= l.heldAfterExit ?? 0;
      l.tail.shrinkTo(0);
      l.heldAfterExit = 0;
    }
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
    if (!live.watcher || live.foreign) return;
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
    const sandbox = opts.environment !== undefined ? this.spawnEnvironment(opts.environment) : undefined;
    const cwd = opts.environment ? (opts.cwd ?? '~') : resolvePath(opts.cwd ?? process.cwd());
    if (!opts.environment && (!existsSync(cwd) || !statSync(cwd).isDirectory())) {
      throw new ProcwardError('ENOENT', `working directory ${cwd} does not exist or is not a directory`);
    }
    const id = newSessionId();
    // A sandbox session keeps its files on the far side.
    const files = this.checkpoint && !opts.environment ? jobFiles(this.checkpoint.dir, id) : null;
    const now = Date.now();
    const live = newLive(
      {
        schemaVersion: SESSION_SCHEMA_VERSION,
        id,
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
        logPath: durable && files ? files.logPath : null,
        exitPath: durable && files ? files.exitPath : null,
        ...(durable && files && opts.stdin && { stdinPath: files.stdinPath }),
        writer: this.writer,
        updatedAt: now,
        ...(opts.notifyOnComplete && { notifyOnComplete: true, notificationDelivered: false }),
        ...(watchPatterns.length > 0 && { watchPatterns, watchFired: 0 }),
      },
      this.tailChars,
      false,
      false,
    );
    live.watcher = this.watcherFor(live.record);
    if (sandbox) return this.spawnSandbox(live, command, sandbox, { ...(opts.cwd !== undefined && { cwd: opts.cwd }), ...(opts.env && { vars: opts.env }) });
    // Written before the spawn: if this host dies before its checkpoint write, the next
    // host still finds the job (see recovery.ts).
    if (files) {
      try {
        writePrivate(files.metaPath, JSON.stringify(live.record));
      } catch (err) {
        removeSessionDir((this.checkpoint as Checkpoint).dir, id);
        throw err;
      }
    }
    let job: NativeJob;
    try {
      job = native.spawn(
        {
          command: shellCommand(command),
          cwd,
          env,
          ...(this.options.shell !== undefined && { shell: this.options.shell }),
          ...(this.options.shellArgs !== undefined && { shellArgs: this.options.shellArgs }),
          ...(durable && files && { logPath: files.logPath, exitPath: files.exitPath, supervisor: supervisorPath(), logPartBytes: Math.floor((this.options.logMaxBytes ?? LOG_MAX_BYTES) / 2) }),
          // A durable job's stdin is a FIFO any host can write (see stdinfifo.ts).
          ...(opts.stdin && (durable && files ? { stdinFifo: files.stdinPath } : { stdin: true })),
          ...(opts.pty && { pty: opts.pty }),
          ...(this.options.containment !== false && { cgroupName: id }),
          // Output stays in the native tail; JS sees it only when watch patterns need lines.
          tailBytes: this.tailChars,
          forwardOutput: live.watcher !== undefined,
        },
        (ev: JobEvent) => this.onEvent(live, ev),
      );
    } catch (err) {
      if (files && this.checkpoint) removeSessionDir(this.checkpoint.dir, id);
      const e = fromNative(err);
      throw new ProcwardError(e.code, this.clean(e.message));
    }
    live.job = job;
    live.tail = new NativeTail(job);
    if (job.cgroup) live.record.cgroup = job.cgroup;
    live.record.pid = job.pid;
    live.record.identity = job.identity;
    live.record.updatedAt = Math.max(Date.now(), live.record.updatedAt + 1);
    this.sessions.set(id, live);
    this.rebalance();
    // With a state directory the session is on disk already (session.json, written before
    // the spawn): checkpoint.json follows within 200 ms, shared by every spawn meanwhile. A
    // durable job's supervisor records who it is; a pipe-mode job's identity goes into
    // session.json now, so a host that dies before the checkpoint write can still be
    // followed and killed by the next one.
    if (files && !durable) this.recordSessionFile(live);
    if (files) this.persistSoon();
    else await this.persist();
    return summary(live);
  }

  /**
   * A sandbox session: launched detached on the far side of `env`, followed by a poller.
   * A launch that fails is recorded as `failed_start` with the wrapper's status and output,
   * and never as running.
   */
  private async spawnSandbox(live: Live, command: string, sandbox: { env: ExecutionEnvironment; name?: string }, opts: { cwd?: string; vars?: Record<string, string> }): Promise<SessionSummary> {
    const r = live.record;
    const { env } = sandbox;
    // Only the environment's name is recorded: a host re-attaches through its own
    // configuration, never through connection details read back from the state directory.
    Object.assign(r, { pidScope: 'sandbox', durable: false, logPath: null, exitPath: null, ...(sandbox.name !== undefined && { environment: sandbox.name }) });
    this.sandboxEnvs.set(r.id, env);
    delete live.watcher;
    live.watcher = this.watcherFor(r);
    // Registered and checkpointed before the launch: a host that dies meanwhile leaves a
    // record the next host can follow through the far-side directory.
    this.sessions.set(r.id, live);
    this.rebalance();
    await this.persist();
    const res = await launch(env, r.id, command, opts);
    if (res.ok === false) {
      live.tail.append(res.output);
      this.finish(live, { exitCode: res.code, signal: null, reason: 'failed_start', source: 'environment' });
      await this.persist();
      return summary(live);
    }
    if (res.ok === true) r.pid = res.pid;
    this.attachSandbox(live, env);
    await this.persist();
    return summary(live);
  }

  /** The environments of the sandbox sessions this host started (an environment passed as an object is known only here). */
  private readonly sandboxEnvs = new Map<string, ExecutionEnvironment>();

  /**
   * `spawn`'s `environment`: a name configured in `options.environments`, or an environment
   * object (recorded under its configured name when it is one of them; otherwise it is
   * known to this host only). Errors: `INVALID_ARGUMENT` for an unknown name or a value
   * that is neither.
   */
  private spawnEnvironment(e: unknown): { env: ExecutionEnvironment; name?: string } {
    const configured = Object.entries(this.options.environments ?? {});
    if (typeof e === 'string') {
      const env = Object.hasOwn(this.options.environments ?? {}, e) ? this.options.environments?.[e] : undefined;
      if (!env) throw new ProcwardError('INVALID_ARGUMENT', `environment ${JSON.stringify(e)} is not configured in the registry's environments`);
      return { env, name: e };
    }
    if (!isEnvironment(e)) {
      throw new ProcwardError('INVALID_ARGUMENT', 'environment must be the name of a configured environment or an ExecutionEnvironment');
    }
    const name = configured.find(([, env]) => env === e)?.[0];
    return { env: e, ...(name !== undefined && { name }) };
  }

  /**
   * The environment of a sandbox session: the one it was started with on this host, or the
   * one its recorded name has in this host's configuration; `null` when neither exists.
   */
  private environmentFor(r: SessionRecord): ExecutionEnvironment | null {
    const mine = this.sandboxEnvs.get(r.id);
    if (mine) return mine;
    const named = r.environment !== undefined && Object.hasOwn(this.options.environments ?? {}, r.environment) ? this.options.environments?.[r.environment] : undefined;
    return named ?? null;
  }

  /** Starts following a sandbox session (after spawn, or after a host restart). */
  private attachSandbox(live: Live, env: ExecutionEnvironment): void {
    const poller = new SandboxPoller(env, sandboxDir(env, live.record.id), {
      pid: (pid) => {
        if (live.record.pid !== pid) {
          live.record.pid = pid;
          this.persistSoon();
        }
      },
      output: (text) => {
        live.tail.append(text);
        this.watch(live, text);
      },
      exit: (code) => {
        // During a kill the kill decides whether this end is `killed` (see killSandbox).
        if (live.killsInFlight > 0) live.pendingExit = { exitCode: code, signal: null };
        else this.finishFromExit(live, { exitCode: code, signal: null });
      },
      lost: (reason) => {
        // A kill (in flight, or done and about to record its end) makes the wrapper vanish
        // on purpose: the kill records the end.
        if (live.killsInFlight > 0 || live.killed) {
          live.pendingLost = reason;
          return;
        }
        this.diagnostics.push(`${live.record.id}: ${reason}`);
        live.tail.append(`\n[procward: session lost: ${reason}]\n`);
        this.finish(live, { exitCode: null, signal: null, reason: 'lost', source: 'environment' });
      },
    }, {
      ...(this.options.sandbox?.pollIntervalMs !== undefined && { intervalMs: this.options.sandbox.pollIntervalMs }),
      ...(this.options.sandbox?.lostAfterMs !== undefined && { lostAfterMs: this.options.sandbox.lostAfterMs }),
    });
    live.sandbox = { env, poller };
    poller.start();
  }

  private onEvent(live: Live, ev: JobEvent): void {
    if (ev.kind === 'output') {
      if (!ev.data) return;
      live.tail.append(ev.data);
      if (live.watcher) this.watch(live, ev.data.toString('utf8'));
      return;
    }
    const end = { exitCode: ev.exitCode ?? null, signal: ev.signal ?? null };
    if (live.killsInFlight > 0) live.pendingExit = end;
    else this.finishFromExit(live, end);
  }

  /**
   * Publishes an observed end: `killed` when a kill reached the leader (ours, or one on
   * record in the session directory), else `exited` (`lost` when the status is unknown).
   */
  private finishFromExit(live: Live, end: RecordedExit): void {
    const files = this.files(live);
    // A kill another host claimed (it reached the leader) counts even if its marker is gone.
    const killed = live.killed || killRequested(files) || (files !== null && killClaimed(files.dir));
    const known = end.exitCode !== null || end.signal !== null;
    // An end nobody recorded, after our kill reached the leader: our last signal ended it.
    // A killed job that exited by itself on the signal (a trap) still names the signal a
    // kill always sends first: a kill is never recorded without one.
    const signal = end.signal ?? live.killSignal ?? (killed ? 'SIGTERM' : null);
    this.finish(live, { ...end, signal, reason: killed ? 'killed' : known ? 'exited' : 'lost', source: killed ? 'kill' : known ? 'process' : 'recovery' });
  }

  /** Rewrites `sessions/<id>/session.json` with the record (best effort: a pruned or unwritable directory is skipped). */
  private recordSessionFile(live: Live): void {
    const files = this.files(live);
    if (!files || !existsSync(files.dir)) return;
    try {
      writePrivate(files.metaPath, JSON.stringify(live.record));
    } catch (err) {
      this.diagnostics.push(`${live.record.id}: cannot update session.json: ${(err as Error).message}`);
    }
  }

  private files(live: Live): JobFiles | null {
    return this.checkpoint ? sessionFiles(this.checkpoint.dir, live.record.id) : null;
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
    // A pipe-mode job's end exists nowhere else on disk (a durable one has its exit file):
    // session.json keeps it should checkpoint.json be lost or damaged.
    if (!r.durable && !live.foreign && r.pidScope !== 'sandbox') this.recordSessionFile(live);
    this.watch(live, null);
    if (r.notifyOnComplete && r.completionTail === undefined) r.completionTail = preview(live.tail.text(), COMPLETION_TAIL_CHARS, (t, k) => this.clean(t, k), live.tail.startsInKeyBlock);
    delete live.watcher;
    this.rebalance();
    // Close the input side now: descriptors must not wait for the garbage collector. The
    // native job stays: it holds the output tail.
    live.job?.release();
    if (r.cgroup) native.removeCgroup(r.cgroup, r.id);
    for (const w of live.waiters) w();
    live.waiters.clear();
    const completion = pendingCompletion(r);
    if (completion && !live.foreign) this.emit('completion', completion);
    // A durable job's end is also in its exit file, so its checkpoint write can wait for the
    // next one (or a short timer); other ends are written at once.
    if (r.durable && !completion) this.persistSoon();
    else this.persist().catch(this.reportWriteError);
    return true;
  }

  /**
   * Brings a detached session up to date: it has ended as soon as its process is gone, a
   * zombie, or its PID was reused. A durable job's exit file gives the exact end; without
   * one the end is `lost`. `unknown` keeps it running (retried on the next access).
   */
  private async refresh(live: Live): Promise<void> {
    if (this.readOnly.has(live.record.id)) return;
    if (live.foreign) await this.reloadForeign(live);
    const r = live.record;
    if (r.pidScope === 'sandbox') {
      const env = r.status === 'running' && !live.sandbox && !live.foreign ? this.environmentFor(r) : null;
      if (env) this.attachSandbox(live, env);
      return;
    }
    if (r.status === 'exited') return;
    if (!live.detached) {
      // Our own child: its reader may have published the end while the event loop did not
      // run yet (a caller polling in a loop that never yields); take it from the job.
      const ended = live.job?.exitStatus();
      if (ended) this.onEvent(live, ended);
      return;
    }
    if (!r.identity && r.durable && this.checkpoint) {
      // Recovered from its session directory before its supervisor recorded who it is: it
      // may still be starting (its host died mid-spawn). Adopt it once it has written
      // supervisor.json; call it lost only when that never happens.
      const sup = readSupervisorIdentity(sessionFiles(this.checkpoint.dir, r.id).supervisorPath);
      if (sup) {
        Object.assign(r, { pid: sup.pid, identity: sup, updatedAt: Date.now() });
        this.persistSoon();
      } else if (Date.now() - r.startedAt < SUPERVISOR_START_MS && !(r.exitPath && (await readExitFile(r.exitPath)))) {
        return;
      }
    }
    // The exit file is the job's end even while its supervisor stays on for a grandchild
    // that still holds the job's output pipe.
    let recorded = r.exitPath ? await readExitFile(r.exitPath) : null;
    const v = recorded && !('invalid' in recorded) ? 'gone' : r.identity ? verdict(r.identity) : 'gone';
    await this.followDetachedLog(live);
    if (v === 'current' || v === 'unknown') return;
    // The supervisor writes the exit file before it exits: one that ended after the first
    // read left it behind for this one.
    if (!recorded && r.exitPath) recorded = await readExitFile(r.exitPath);
    if (r.logPath && live.tail.totalChars === 0) live.tail.append(await readLogTail(r.logPath, 16 * 1024));
    if (recorded && 'invalid' in recorded) this.diagnostics.push(recorded.invalid);
    if (recorded && !('invalid' in recorded)) this.finishFromExit(live, recorded);
    // A foreign pipe-mode job: its owner saw how it ended and will write it; wait for that.
    else if (!live.foreign) {
      // A pipe-mode job's host wrote its end to session.json (the checkpoint may be older).
      const written = r.durable || !this.checkpoint ? null : readSessionFile(sessionFiles(this.checkpoint.dir, r.id).metaPath);
      if (written?.status === 'exited' && written.reason) {
        this.finish(live, {
          exitCode: written.exitCode,
          signal: written.signal,
          reason: written.reason,
          source: written.terminationSource ?? 'recovery',
          ...(written.exitedAt !== null && { exitedAt: written.exitedAt }),
        });
      } else this.finishFromExit(live, { exitCode: null, signal: null });
    }
  }

  /** Feeds a detached durable job's new log output to its watch patterns (re-armed after recovery). */
  private async followDetachedLog(live: Live): Promise<void> {
    const r = live.record;
    if (!r.logPath || live.foreign || !r.watchPatterns?.length) return;
    live.watcher ??= this.watcherFor(r);
    if (!live.watcher) return;
    const { text, next } = await readLogFrom(r.logPath, live.watchOffset ?? 0);
    live.watchOffset = next;
    if (text) this.watch(live, text);
  }

  /** Takes a foreign entry's newer state from the checkpoint, or adopts it once its writer died. */
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

  private async reloadForeign(live: Live): Promise<void> {
    if (!this.checkpoint) return;
    const fresh = (await this.checkpointView()).get(live.record.id);
    if (fresh && fresh.updatedAt > live.record.updatedAt) {
      Object.assign(live.record, fresh);
      if (fresh.status === 'exited') {
        for (const w of live.waiters) w();
        live.waiters.clear();
      }
    }
    live.foreign = this.isForeign(live.record);
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

  /** The output a preview is cut from, and whether it starts inside a private-key block. */
  private async output(live: Live): Promise<{ text: string; startsInKeyBlock: boolean }> {
    if (live.record.durable && live.record.logPath && (live.detached || live.tail.heldChars === 0)) {
      // Where the log's last 16 KiB start is not known without reading the log: key material
      // at their head is taken for the inside of a block.
      // A log file replaced by a symlink or a FIFO is not read: the preview is empty, and
      // the reason is a diagnostic (readLog says it as an error).
      const text = await readLogTail(live.record.logPath, 16 * 1024).catch((err: unknown) => {
        if (!(err instanceof ProcwardError && err.code === 'STATE_DIR_UNTRUSTED')) throw err;
        const said = `${live.record.id}: output not shown: ${err.message}`;
        if (!this.diagnostics.includes(said)) this.diagnostics.push(said);
        return '';
      });
      return { text, startsInKeyBlock: leadsWithKeyMaterial(text) };
    }
    const text = live.tail.text();
    return { text, startsInKeyBlock: live.tail.startsInKeyBlock };
  }

  private async pollResult(live: Live): Promise<PollResult> {
    return { ...summary(live), ...this.readOnlyFlag(live), outputPreview: await this.outputPreview(live) };
  }

  private async outputPreview(live: Live): Promise<string> {
    const out = await this.output(live);
    return preview(out.text, 2000, (t, k) => this.clean(t, k), out.startsInKeyBlock);
  }

  /** Marks the session's completion event delivered (wait, end-reaching readLog, kill, acknowledged poll). */
  private consume(live: Live): void {
    const r = live.record;
    if (!pendingCompletion(r) || live.foreign) return;
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
      const timedOut = await untilEnd(live, {
        ...(timeoutMs !== undefined && { timeoutMs }),
        ...(signal && { signal }),
        ...(live.sandbox ? { tick: () => void live.sandbox?.poller.tick() } : live.detached && { tick: () => void this.refresh(live) }),
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
  async readLog(id: string, opts: { offset?: number; limit?: number; view?: 'plain' | 'raw' } = {}): Promise<LogResult> {
    const live = this.get(id);
    await this.refresh(live);
    const fromFile = live.record.durable && live.record.logPath;
    if (opts.view !== undefined && opts.view !== 'plain' && opts.view !== 'raw') {
      throw new ProcwardError('INVALID_ARGUMENT', `view must be 'plain' or 'raw', got ${JSON.stringify(opts.view)}`);
    }
    let page: LinePage;
    let drops: LogDrops = NO_DROPS;
    try {
      // A log too large to read whole (null) is paged by streaming.
      const log = fromFile ? await readLog(live.record.logPath as string, LARGE_LOG_BYTES) : tailLines(live.tail);
      if (log) {
        drops = log.drops;
        // A log whose front was rotated away may start inside a key whose BEGIN went with it.
        const inKey = fromFile ? log.drops.bytes > 0 && leadsWithKeyMaterial(log.text) : (log as { startsInKeyBlock?: boolean }).startsInKeyBlock === true;
        page = pageLines(this.redactView(log.text, opts.view ?? 'plain', inKey), { ...opts, view: 'raw' });
      } else ({ page, drops } = await this.pageLargeLog(live, opts));
    } catch (err) {
      if (err instanceof RangeError) throw new ProcwardError('INVALID_ARGUMENT', err.message);
      throw err;
    }
    if (live.record.status === 'exited' && page.offset + page.lines.length >= page.totalLines) this.consume(live);
    const droppedChars = fromFile ? drops.bytes + drops.lostBytes : live.tail.droppedChars;
    return {
      id: live.record.id,
      status: live.record.status,
      text: page.lines.join('\n'),
      ...page,
      showing: page.showing + droppedNote(droppedChars, drops, fromFile ? 'the log cap (logMaxBytes)' : 'the in-memory cap (maxOutputChars)'),
      droppedChars,
      ...(fromFile && { droppedLines: drops.lines }),
    };
  }

  /**
   * Pages a log too large to read whole (see `streamLogPage`), redacting the page with some
   * context before it and the private-key state the pager tracked up to that context.
   */
  private async pageLargeLog(live: Live, opts: { offset?: number; limit?: number; view?: 'plain' | 'raw' }): Promise<{ page: LinePage; drops: LogDrops }> {
    const limit = opts.limit ?? 200;
    if (!Number.isInteger(limit) || limit <= 0) throw new RangeError(`limit must be a positive integer, got ${limit}`);
    if (opts.offset !== undefined && (!Number.isInteger(opts.offset) || opts.offset < 0)) throw new RangeError(`offset must be a non-negative integer, got ${opts.offset}`);
    const got = await streamLogPage(live.record.logPath as string, { ...(opts.offset !== undefined && { offset: opts.offset }), limit, context: 64 });
    const redacted = this.redactView(got.lines.join('\n'), opts.view ?? 'plain', got.startsInKeyBlock).split('\n');
    const lines = redacted.slice(got.before, got.before + limit);
    return { page: { lines, totalLines: got.totalLines, offset: got.offset, showing: showing(got.offset, lines.length, got.totalLines) }, drops: got.drops };
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
   * `IDENTITY_UNKNOWN` when the process table cannot be read.
   */
  async kill(id: string, opts: { graceMs?: number } = {}): Promise<KillResult> {
    this.assertOpen();
    const graceMs = opts?.graceMs ?? this.options.graceMs ?? 2000;
    // Every argument is checked before any side effect: a rejected kill leaves no marker.
    assertGraceMs(graceMs);
    const live = this.actOn(id);
    await this.refresh(live);
    const r = live.record;
    const wasRunning = r.status === 'running';
    if (r.pidScope === 'sandbox') return this.killSandbox(live, graceMs);
    if (!r.identity) return { id: r.id, outcome: 'already_exited', ...EMPTY_REPORT, exitCode: r.exitCode, signal: r.signal };
    live.finisher?.abort();
    const files = this.files(live);
    let marked = false;
    if (wasRunning && files) {
      // Best effort: a full disk must not stop a kill (without the marker, a host that sees
      // the end later may record it as `exited` instead of `killed`).
      try {
        // Created, never overwritten: only the kill that created it may remove it.
        marked = createKillMarker(files.killMarkPath);
      } catch (err) {
        this.diagnostics.push(`${r.id}: cannot record the kill request: ${(err as Error).message}`);
      }
    }
    // On an ended session this still cleans up what is left of its process group.
    live.killsInFlight++;
    const signalAt = Date.now();
    // An end published before the first signal, or a leader already a zombie, is the job's own.
    const endedFirst = live.job?.exitStatus() != null || (!r.durable && endedUnreaped(r.identity));
    let report: KillReport;
    try {
      // Every job leads its own session: a root that does not is no job of ours.
      report = await killTree(r.identity, { graceMs, requireSessionLeader: true, ...(r.cgroup && { cgroup: r.cgroup, sessionId: r.id }) });
    } catch (err) {
      // The kill failed before it signalled anything (a refused root, an unreadable process
      // table): the marker it wrote must not make the job's own end look killed.
      if (marked && files && !live.killed && live.killsInFlight === 1) rmSync(files.killMarkPath, { force: true });
      throw err;
    } finally {
      live.killsInFlight--;
    }
    let reachedLeader = wasRunning && !endedFirst && report.signalled.includes(r.identity.pid);
    // A durable job's leader is its supervisor, which outlives SIGTERM and the job: the exit
    // file says whether the job had ended on its own before the first signal.
    if (reachedLeader && r.exitPath) {
      const end = await readExitFile(r.exitPath);
      if (end && !('invalid' in end) && end.exitedAt !== undefined && end.exitedAt < signalAt) reachedLeader = false;
    }
    // Two kills (two hosts, or two calls here) may both reach the leader: the first to
    // claim the kill records it, the other finds the job already ended.
    const otherKill = reachedLeader && (live.killed || !claimKill(files?.dir ?? null));
    if (otherKill) reachedLeader = false;
    if (reachedLeader) {
      live.killed = true;
      live.killSignal = report.escalated ? 'SIGKILL' : 'SIGTERM';
      // The kill that ended the job keeps the marker there (another kill that found the
      // leader gone may have removed it just before our claim).
      try {
        if (files && !marked && !killRequested(files)) marked = createKillMarker(files.killMarkPath);
      } catch {
        // A full disk: the claim file tells the owner as well (see finishFromExit).
      }
    }
    // The marker goes only when this kill wrote it and no kill (ours still on its way, or
    // another host's that claimed the job) needs it.
    else if (files && marked && !otherKill && !live.killed && live.killsInFlight === 0 && !killClaimed(files.dir)) rmSync(files.killMarkPath, { force: true });
    if (live.pendingExit && live.killsInFlight === 0) {
      const end = live.pendingExit;
      delete live.pendingExit;
      this.finishFromExit(live, end);
    }
    const result = (outcome: KillResult['outcome']): KillResult => {
      this.consume(live);
      return { id: r.id, outcome, ...report, exitCode: r.exitCode, signal: r.signal };
    };
    const rootRefused = report.refused.find((x) => x.pid === r.identity?.pid);
    if (rootRefused && wasRunning) {
      throw new ProcwardError('KILL_REFUSED', `the kill of ${r.id} was refused (${rootRefused.reason}): its record names PID ${rootRefused.pid}, which procward never signals; nothing was signalled`, { report });
    }
    // The guard already judged the recorded cgroup: the background kill takes it by name.
    const cgroupOurs = r.cgroup !== undefined && !report.refused.some((x) => x.cgroup !== undefined);
    if (report.survivors.length > 0) {
      const controller = new AbortController();
      live.finisher = controller;
      finishKillInBackground(report.survivorIdentities, {
        graceMs,
        ...(cgroupOurs && { cgroup: r.id }),
        signal: controller.signal,
        onDone: () => {
          if (r.identity && verdict(r.identity) !== 'current') this.finish(live, { exitCode: null, signal: 'SIGKILL', reason: 'killed', source: 'kill' });
        },
        onGiveUp: (left) => this.diagnostics.push(`kill of ${r.id}: ${left.map((i) => i.pid).join(', ')} still alive after 60 s`),
      });
      throw new ProcwardError(
        'KILL_SURVIVORS',
        `${report.survivors.length} process(es) survived the kill of ${r.id}: ${report.survivors.join(', ')}; procward keeps trying in the background`,
        { report, finishingInBackground: true },
      );
    }
    if (live.detached) await this.refresh(live);
    else await settle(live, 2000);
    // The leader had ended on its own (or its PID was reused) before the kill reached it.
    if (!reachedLeader) return result('already_exited');
    if (r.cgroup) native.removeCgroup(r.cgroup, r.id);
    // Still not published (a slow reader): what we know is that our kill ended it.
    this.finish(live, { exitCode: null, signal: report.escalated ? 'SIGKILL' : 'SIGTERM', reason: 'killed', source: 'kill' });
    return result('killed');
  }

  /**
   * Kill on the far side of a sandbox session: its process group there, then survivors.
   * Works for sessions another live host follows, and for `lost` ones whose environment is
   * back. Errors: `ENVIRONMENT_UNAVAILABLE` (the session stays as it was), `KILL_SURVIVORS`.
   */
  private async killSandbox(live: Live, graceMs: number): Promise<KillResult> {
    const r = live.record;
    const base = { id: r.id, ...EMPTY_REPORT };
    const killable = r.status === 'running' || r.reason === 'lost';
    if (!killable || !r.pid) return { ...base, outcome: 'already_exited', exitCode: r.exitCode, signal: r.signal };
    const env = live.sandbox?.env ?? this.environmentFor(r);
    if (!env) {
      throw new ProcwardError('ENVIRONMENT_UNAVAILABLE', `${r.id} runs in environment ${r.environment === undefined ? '(unnamed, known only to the host that started it)' : JSON.stringify(r.environment)}, which this host has not configured; nothing was run`);
    }
    live.killsInFlight++;
    let res: Awaited<ReturnType<typeof killRemote>>;
    try {
      res = await killRemote(env, sandboxDir(env, r.id), graceMs);
    } finally {
      live.killsInFlight--;
    }
    const seen = live.pendingExit;
    const lost = live.pendingLost;
    delete live.pendingExit;
    delete live.pendingLost;
    if (res === 'exited') {
      if (seen) this.finishFromExit(live, seen);
      else if (lost) this.finish(live, { exitCode: null, signal: null, reason: 'lost', source: 'environment' });
      await live.sandbox?.poller.tick();
      this.consume(live);
      return { ...base, outcome: 'already_exited', exitCode: r.exitCode, signal: r.signal };
    }
    if (res.length > 0) {
      if (seen) this.finishFromExit(live, seen);
      throw new ProcwardError('KILL_SURVIVORS', `${res.length} process(es) survived the kill of ${r.id} on the far side: ${res.join(', ')}`, { survivors: res });
    }
    live.killed = true;
    await live.sandbox?.poller.tick();
    live.sandbox?.poller.stop();
    this.finish(live, { exitCode: null, signal: 'SIGTERM', reason: 'killed', source: 'kill' });
    this.consume(live);
    return { ...base, outcome: 'killed', signalled: [r.pid], exitCode: r.exitCode, signal: r.signal };
  }

  /**
   * Writes raw text to the session's stdin (pipe, PTY, or a durable job's FIFO), without
   * blocking. Errors: `SESSION_EXITED`, `NO_STDIN`, `STDIN_CLOSED` (after `closeStdin`),
   * `EAGAIN` (the job is not reading its input).
   */
  async write(id: string, data: string): Promise<{ id: string; bytes: number }> {
    return this.input(this.actOn(id), data);
  }

  /** Writes `text` followed by Enter (LF; CR LF on a Windows console). */
  async submit(id: string, text: string): Promise<{ id: string; bytes: number }> {
    if (typeof text !== 'string') throw new ProcwardError('INVALID_ARGUMENT', 'text must be a string');
    return this.input(this.actOn(id), `${text}${process.platform === 'win32' ? '\r\n' : '\n'}`);
  }

  /** A durable job's input is its FIFO, which any host may write; others go through the native job. */
  private async input(live: Live, data: string): Promise<{ id: string; bytes: number }> {
    if (!live.record.stdinPath) return writeInput(live, data);
    if (typeof data !== 'string') throw new ProcwardError('INVALID_ARGUMENT', 'data must be a string');
    await this.refresh(live);
    if (live.record.status === 'exited') throw new ProcwardError('SESSION_EXITED', `${live.record.id} has exited; its stdin is closed`);
    return writeFifo(live, data);
  }

  /**
   * Ends the session's input: closes the pipe, sends EOF (Ctrl-D) to a PTY, or has a durable
   * job's supervisor close its end of the FIFO (the job reads EOF once no writer is left).
   */
  async closeStdin(id: string): Promise<{ id: string; closed: true }> {
    const live = this.actOn(id);
    if (live.record.stdinPath) {
      await this.refresh(live);
      if (live.record.status === 'exited') throw new ProcwardError('SESSION_EXITED', `${live.record.id} has exited; its stdin is closed`);
      return closeFifo(live);
    }
    const job = inputOf(live);
    try {
      job.closeStdin();
    } catch (err) {
      throw fromNative(err);
    }
    return { id: live.record.id, closed: true };
  }

  /** Resizes a PTY session's terminal (columns and rows). */
  async resize(id: string, size: { cols: number; rows: number }): Promise<{ id: string; cols: number; rows: number }> {
    for (const key of ['cols', 'rows'] as const) {
      const v = size?.[key];
      if (!Number.isInteger(v) || v < 1 || v > 65535) throw new ProcwardError('INVALID_ARGUMENT', `${key} must be an integer from 1 to 65535, got ${String(v)}`);
    }
    const live = this.actOn(id);
    const job = inputOf(live);
    try {
      job.resize(size);
    } catch (err) {
      throw fromNative(err);
    }
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

  /** Drops finished sessions past their retention (and their job files), only those this host may prune (see `retention.ts`). */
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
      const pruned = this.sessions.get(id)?.record;
      if (pruned?.cgroup) native.removeCgroup(pruned.cgroup, pruned.id);
      const env = pruned?.pidScope === 'sandbox' ? this.environmentFor(pruned) : null;
      // Best effort: the far side's session directory (derived from the id and the host's
      // own configuration) goes with the session.
      if (env) env.exec(`rm -rf ${shq(sandboxDir(env, id))}`).catch(() => undefined);
      this.sandboxEnvs.delete(id);
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
    for (const live of this.sessions.values()) {
      live.finisher?.abort();
      live.sandbox?.poller.stop();
    }
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
    const mine = lives.filter((l) => !l.foreign);
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

/** Whether `e` has the shape of an {@link ExecutionEnvironment} (a far side to run scripts on). */
function isEnvironment(e: unknown): e is ExecutionEnvironment {
  return e !== null && typeof e === 'object' && typeof (e as ExecutionEnvironment).exec === 'function' && typeof (e as ExecutionEnvironment).tmpDir === 'string';
}

/** The part of `showing` that says output was dropped before the first line (empty when none was). */
function droppedNote(bytes: number, drops: LogDrops, cap: string): string {
  if (bytes === 0) return '';
  const lines = drops.lines > 0 ? `${drops.lines} lines, ` : '';
  const lost = drops.lostBytes > 0 ? `; ${drops.lostBytes} bytes could not be written` : '';
  return ` (earlier output dropped by ${cap}: ${lines}${bytes - drops.lostBytes} bytes${lost})`;
}

/** A tail that lost its front to a cap starts inside a line: it starts at the next line. */
function wholeLines(text: string, dropped: number): string {
  const nl = dropped > 0 ? text.indexOf('\n') : -1;
  return nl >= 0 && nl < text.length - 1 ? text.slice(nl + 1) : text;
}

/** The in-memory tail from its first whole line, and whether that line starts inside a private-key block. */
function tailLines(tail: TailView): { text: string; drops: LogDrops; startsInKeyBlock: boolean } {
  const all = tail.text();
  const text = wholeLines(all, tail.droppedChars);
  return { text, drops: NO_DROPS, startsInKeyBlock: insideKeyBlockAt(all, all.length - text.length, tail.startsInKeyBlock) };
}
