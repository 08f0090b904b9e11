/**
 * The process registry: the index of sessions, the policy over them (scoping, retention,
 * output budget, redaction, watch patterns), their persistence (a checkpoint that lets the
 * next host recover them) and their notifications. What a session does is its kind's
 * business (see `session/kind.ts`): the registry asks, and never branches on the kind.
 *
 * Data flows one way: native spawn → reader events → session → registry → checkpoint.
 */
import { EventEmitter } from 'node:events';
import { native } from './native.js';
import { checkOptions } from './options.js';
import type { CompletionEvent, ProcwardEvent, WatchEvent } from './policy/notifications.js';
import * as scoping from './policy/scoping.js';
import type { BulkKillOutcome } from './policy/scoping.js';
import { buildState, close, recover } from './registry/build.js';
import { forget } from './registry/finish.js';
import { closeStdin, resize, submit, write } from './registry/input.js';
import { kill, signal } from './registry/kill.js';
import { drainNotifications } from './registry/notify.js';
import { list, poll, readLog, screen, wait } from './registry/reading.js';
import { spawn } from './registry/spawn.js';
import { assertOpen, type RegistryState } from './registry/state.js';
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
  TerminalScreen,
  TerminalSize,
  WaitOptions,
  WaitResult,
  WriteOptions,
} from './types.js';

export type { KillResult, LogDiskUsage, LogResult, PollResult, RegistryOptions, SessionSummary, SpawnOptions, WaitResult } from './types.js';

/** Events a registry emits: `completion` and `watch` (see `policy/notifications.ts`). */
export interface RegistryEvents {
  completion: [CompletionEvent];
  watch: [WatchEvent];
}

/** A background process registry. Create with {@link ProcessRegistry.open}. */
export class ProcessRegistry extends EventEmitter<RegistryEvents> {
  /**
   * What the registry holds besides its public surface. The work is done over it in
   * `registry/`: `build` (open, recover, close), `spawn`, `reading` (poll, wait, readLog,
   * screen, list), `kill` (kill, signal), `input`, `notify` and `finish` (see `state.ts`).
   */
  private readonly state: RegistryState;
  /** Problems found while recovering (corrupt files, skipped entries). */
  readonly diagnostics: string[] = [];

  private constructor(options: RegistryOptions) {
    super();
    this.state = buildState(options, this.diagnostics, this.emit.bind(this));
  }

  /** Opens a registry; with a `stateDir`, recovers the sessions its checkpoint lists first. */
  static async open(options: RegistryOptions = {}): Promise<ProcessRegistry> {
    const registry = new ProcessRegistry(options);
    await recover(registry.state);
    if (options.containment !== false) native.sweepCgroups();
    return registry;
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
    return spawn(this.state, command, opts);
  }

  /** Status, PID, uptime, output preview and (once ended) exit code, signal and reason. */
  async poll(id: string, opts: PollOptions = {}): Promise<PollResult> {
    return poll(this.state, id, opts);
  }

  /**
   * Resolves as soon as the session ends (event-driven; detached sessions are re-checked
   * every 25 ms), or when `timeoutMs` passes with `timedOut: true` and the partial output.
   *
   * Errors: `INVALID_ARGUMENT` for a non-positive or non-finite timeout; the abort reason
   * when `signal` aborts; `UNKNOWN_SESSION`.
   */
  async wait(id: string, opts: WaitOptions = {}): Promise<WaitResult> {
    return wait(this.state, id, opts);
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
    return readLog(this.state, id, opts);
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
    return kill(this.state, id, opts);
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
   * the guard refused; `IDENTITY_UNKNOWN` when the process cannot be read now; `ENOTSUP`
   * for a durable job whose own process is not known yet with a signal its supervisor does
   * not ignore, and for `SIGBREAK` off Windows; `UNKNOWN_SESSION`, `SESSION_READ_ONLY`.
   *
   * Windows (`WINDOWS_JOB_SIGNALS`, see `session/signal.ts`): `SIGTERM`, `SIGKILL`, `SIGINT`,
   * `SIGQUIT` and `SIGHUP` terminate the job's root process alone, as `process.kill` does
   * there (exit code 1, no signal in the exit; `processGroup: false`); `SIGBREAK` is
   * Ctrl-Break to the job's process group (`processGroup: true`), only for a root in the Job
   * Object procward created for it (`KILL_REFUSED`, `not_session_leader`, otherwise), and
   * `EIO` when it cannot be sent (always under Wine 8). A durable job gets each on its own
   * process, never its supervisor. Other names are `ENOTSUP` (details: `allowed`).
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
    return signal(this.state, id, name);
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
    return write(this.state, id, data, opts);
  }

  /**
   * Writes `text` followed by Enter: CR LF to a PTY session on Windows (a ConPTY console
   * reads Enter as CR), LF everywhere else (pipes and durable jobs' named pipes on Windows,
   * every input on Unix). Waits and fails as {@link write} does.
   */
  async submit(id: string, text: string, opts: WriteOptions = {}): Promise<{ id: string; bytes: number }> {
    return submit(this.state, id, text, opts);
  }

  /**
   * Ends the session's input, after the writes that wait: closes the pipe, has a durable
   * job's supervisor close its end of the FIFO (the job reads EOF once no writer is left),
   * or, on a PTY in canonical mode, sends the terminal's end of input (its `VEOF` character,
   * Ctrl-D by default; twice when the line holds characters not sent yet) and keeps the
   * terminal open (Windows ConPTY: Ctrl-Z and Enter). Later `write` and `submit` fail with
   * `STDIN_CLOSED`. Errors: `ENOTSUP` for a PTY in raw mode (no end of input there; nothing
   * is sent), `STDIN_CLOSED` when closed already, `SESSION_EXITED`.
   */
  async closeStdin(id: string): Promise<{ id: string; closed: true }> {
    return closeStdin(this.state, id);
  }

  /** Resizes a PTY session's terminal (columns and rows). */
  async resize(id: string, size: Required<TerminalSize>): Promise<{ id: string; cols: number; rows: number }> {
    return resize(this.state, id, size);
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
    return screen(this.state, id);
  }

  /**
   * Summaries, oldest first. With `taskId`, the task's sessions; with `sessionKey` too,
   * sessions sharing the key but started by another task are included and flagged
   * `sessionScoped`.
   */
  async list(filter: ListFilter = {}): Promise<SessionSummary[]> {
    return list(this.state, filter);
  }

  /**
   * Flushes the checkpoint and stops accepting work; nothing is written after it. Never
   * rejects: a failed final write is added to `diagnostics`. Running
   * jobs are not killed: durable ones live on and the next host recovers them; pipe-mode
   * jobs lose their reader when this process exits, and those of an in-memory registry end
   * with this process (see `SpawnOptions.outliveHost`).
   */
  async close(): Promise<void> {
    return close(this.state);
  }

  /**
   * Returns and removes the pending events the caller owns: with `ownsEvent`, those it
   * returns true for (a predicate that throws owns nothing: the event stays queued);
   * otherwise those with the given `sessionKey` (all events when it is omitted). Events of
   * other owners stay queued.
   */
  async drainNotifications(opts: DrainOptions = {}): Promise<ProcwardEvent[]> {
    return drainNotifications(this.state, opts);
  }

  /**
   * Kills every active session of `taskId` except `excludeIds`: running ones, and ended ones
   * whose leftovers still run (their kill ends those: `already_exited` with them in
   * `signalled`). One outcome per session, never throws for one failure.
   */
  async killAll(opts: KillAllOptions): Promise<BulkKillOutcome[]> {
    const checked = checkOptions('killAll', opts, true);
    this.state.leftovers.checkScope(checked?.taskId);
    return scoping.killAll(this, checked);
  }

  /** Ids of the task's active sessions (running, or ended with live leftovers): a baseline for {@link killStartedSince}. */
  snapshotRunningIds(taskId: string): Promise<string[]> {
    this.state.leftovers.checkScope(taskId);
    return scoping.snapshotRunningIds(this, taskId);
  }

  /** Kills the task's active sessions (as {@link killAll} counts them) that are not in `baseline`. */
  async killStartedSince(taskId: string, baseline: string[], opts: KillOptions = {}): Promise<BulkKillOutcome[]> {
    this.state.leftovers.checkScope(taskId);
    return scoping.killStartedSince(this, taskId, baseline, checkOptions('killStartedSince', opts).graceMs);
  }

  /** Whether the task has a running session, or an ended one whose leftovers still run (detached sessions are re-checked first). */
  hasActiveProcesses(taskId: string): Promise<boolean> {
    this.state.leftovers.checkScope(taskId);
    return scoping.hasActiveProcesses(this, taskId);
  }

  /** Whether a session with this key runs (or left processes running) and started within `maxActiveAgeMs` (milliseconds). */
  async hasActiveForSession(sessionKey: string, opts: ActiveForSessionOptions = {}): Promise<boolean> {
    const checked = checkOptions('hasActiveForSession', opts);
    this.state.leftovers.checkScope(undefined, sessionKey);
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
    return forget(this.state, id);
  }

  /**
   * Disk taken by the state directory's durable logs against `maxTotalLogBytes`: measures the
   * running logs and enforces the budget first (evicting the oldest delivered logs).
   */
  async logDiskUsage(): Promise<LogDiskUsage> {
    assertOpen(this.state);
    return this.state.logs.usage();
  }

  /** Counters for diagnostics and tests: sessions held, checkpoint writes done. */
  stats(): { sessions: number; checkpointWrites: number } {
    return { sessions: this.state.sessions.size, checkpointWrites: this.state.store.writes };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
