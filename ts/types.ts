/** The public shapes of the registry's options and results. Times in milliseconds. */
import type { KillReport } from './processes.js';
import type { ExecutionEnvironment } from './remote/environments.js';
import type { ProcwardEvent, WatchLimits } from './policy/notifications.js';
import type { RetentionOptions } from './policy/retention.js';
import type { SpawnPolicy } from './policy/spawnpolicy.js';
import type { CompletionReason, SessionStatus } from './session/record.js';

/** Options of `ProcessRegistry.open`. */
export interface RegistryOptions extends RetentionOptions {
  /**
   * Directory for the checkpoint and durable job files. Without it nothing is persisted. A
   * missing directory is created 0700; an existing one must be a real directory owned by the
   * effective user and writable by no one else, or `open` fails with `STATE_DIR_UNTRUSTED`
   * (it is never chmodded). An empty string or a non-string is `INVALID_ARGUMENT`.
   */
  stateDir?: string;
  /**
   * Shell for commands. Default on Unix: `/bin/bash` when it exists (it execs the last
   * command, so signal deaths stay visible), else `/bin/sh`. On Windows: `%ComSpec%` (else
   * `C:\Windows\System32\cmd.exe`); a shell named `powershell`/`pwsh` or `bash`/`sh` gets
   * its own arguments and quoting (see `shellArgs`).
   */
  shell?: string;
  /**
   * Shell arguments before the command. Default on Unix `['-c', '--']` (a command starting
   * with `-` stays a command). On Windows, by the shell's family: cmd `['/d', '/s', '/c']`
   * (the command follows in quotes, passed byte for byte: cmd's `/s` rule strips only the
   * outer quotes), PowerShell `['-NoProfile', '-NonInteractive', '-Command']`, others
   * `['-c']`; a command line longer than cmd's 8191 characters is refused (`EINVAL`, naming the limit).
   */
  shellArgs?: string[];
  /** In-memory output tail per session, in bytes of UTF-8 text (about characters for ASCII). Default 200 000. */
  maxOutputChars?: number;
  /**
   * In-memory output of all sessions together, in bytes of UTF-8 text (default 20 000 000). Running
   * sessions share it; finished ones give up their tail first (durable ones keep their log).
   */
  maxTotalOutputChars?: number;
  /** Default grace period of `kill`, in milliseconds. Default 2000. */
  graceMs?: number;
  /** Run jobs durably (log file + supervisor) unless a spawn says otherwise. Default: true when `stateDir` is set. */
  durable?: boolean;
  /**
   * Disk cap of each durable job's log, in bytes (at least 4096). The log rotates at half of it
   * and keeps one rotated part, so the newest output (at least half the cap) is always
   * readable and the oldest is dropped; `readLog` reports what was dropped. Default 64 MiB.
   */
  logMaxBytes?: number;
  /**
   * Disk budget of all durable logs in the state directory together, in bytes (`st_blocks ×
   * 512` of each log's parts). Over it, the logs of the oldest ended sessions whose output
   * was delivered (ended, with no completion event waiting) are evicted until the total
   * fits: the session stays listed with `logEvicted: true`, and `readLog` gives an empty
   * page that says so. A running job's log is never evicted (each is capped by
   * `logMaxBytes`); when running and undelivered logs alone exceed the budget, a diagnostic
   * says so and `logDiskUsage()` reports `overBudget`. 0 evicts every delivered log once its
   * session ends. Checked when the registry opens, when a durable job ends, and every 10 s
   * while durable jobs run (see `persist/diskbudget.ts`). Default 1 GiB.
   */
  maxTotalLogBytes?: number;
  /** Redact secrets in persisted commands and in previews. Default true. */
  redact?: boolean;
  /** Limits of watch-pattern events. */
  watch?: WatchLimits;
  /** Sandbox sessions' poller: milliseconds between polls (default 200) and before an unreachable environment makes a session `lost` (default 60 000). */
  sandbox?: { pollIntervalMs?: number; lostAfterMs?: number };
  /**
   * Run each job in its own cgroup v2 when the host may create cgroups (Linux: root or a
   * delegated subtree), so a kill reaches daemons that escaped the process tree. Falls back
   * silently. Default true; `PROCWARD_NO_CGROUP=1` also turns it off.
   */
  containment?: boolean;
  /**
   * Execution environments sandbox sessions may run in, by name. A sandbox session records
   * only this name; after a restart it is followed and killed through the environment of
   * the same name in this host's configuration, never through details read from the state
   * directory. A recovered session whose name is not configured here stays listed, and
   * `kill` answers `ENVIRONMENT_UNAVAILABLE`. The caller owns them (`close()` leaves them open).
   */
  environments?: Record<string, ExecutionEnvironment>;
  /**
   * What this host lets a spawn do (see `policy/spawnpolicy.ts`): an approval hook, caps on
   * running jobs per task and per session key, allowed roots for the working directory, and
   * the variables a model-supplied `env` may not set. A refused spawn is `SPAWN_REFUSED`
   * (details: `rule`, `reason`) and starts and writes nothing. Default: no hook, no caps, no
   * roots, and the default denylist for model-supplied `env`.
   */
  spawnPolicy?: SpawnPolicy;
}

/** Options of `ProcessRegistry.spawn`. */
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
  /**
   * Keep a job of an in-memory registry (no `stateDir`) running when the host process ends.
   * By default such a job, which no other host can ever reach, ends with its host however
   * the host ends (even by SIGKILL), its whole tree: a guardian process tree-kills it (Unix);
   * on Windows the Job Object the host holds does, and this option has no effect there.
   * Jobs of a registry with a `stateDir` (durable or not) are never ended with the host.
   * Default false.
   */
  outliveHost?: boolean;
  /**
   * Host variables to pass although they look like secrets (they are withheld by default;
   * the spawn's result names the ones withheld in `withheldEnv`). Variables set in `env`
   * always reach the job. Refused (`SPAWN_REFUSED`) when `envSource` is `'model'`.
   */
  allowEnv?: string[];
  /**
   * Who wrote `env` and `allowEnv`: `'caller'` (the host or a person; default) or `'model'`
   * (an LLM's tool call). A model's `env` may not set loader and runtime variables
   * (`LD_PRELOAD`, `DYLD_*`, `NODE_OPTIONS`, ...; `spawnPolicy.deniedEnv`) nor pass `allowEnv`.
   */
  envSource?: 'caller' | 'model';
  /** Queue a completion event when the job ends (see `drainNotifications`). */
  notifyOnComplete?: boolean;
  /**
   * Kill-after deadline in milliseconds from the start (an integer from 1 to 2 147 483 647,
   * about 24.8 days). When it passes while the job runs, its whole tree is killed as `kill`
   * does (SIGTERM, SIGKILL after the registry's `graceMs`), and the ended session reports
   * `deadlineExceeded: true` with reason `killed`. A durable job's supervisor enforces it
   * (it holds when the host has crashed, and any host then reports it); other jobs' host
   * does. Default: none.
   */
  timeoutMs?: number;
  /**
   * Regular expressions in the Rust `regex` crate's syntax, matched in time linear in the
   * line; a whole output line (plain text: escape sequences removed) that matches one
   * queues a watch event naming the first pattern that matched, with the line's first 4096
   * characters. Only the head of a line is matched: its first 64 KiB (UTF-8), or less for
   * a set that compiles to many automaton states (8 Mi divided by the states, at least 512
   * bytes), so one line costs at most about 0.1 s. Matching takes at most 100 ms of the
   * event loop per second for all sessions together; lines past that budget are not
   * matched (a diagnostic says how many). At most 32 non-empty patterns of at most 512
   * characters each, compiling to at most 1 MiB and 16 384 states together (Unicode classes
   * such as `\w` and counted repetitions such as `{1,500}` are what makes states).
   *
   * Errors (`INVALID_ARGUMENT`, from `spawn`): too many, empty or too long patterns, one
   * the engine rejects (look-around, backreferences, a syntax error; the message gives the
   * engine's reason), or a set that compiles too big. Default: no patterns.
   */
  watchPatterns?: string[];
  /**
   * Keep the job's stdin open for `write`/`submit`/`closeStdin`. Default false (stdin is
   * /dev/null). A durable job's stdin is a FIFO in its session directory that any host may
   * write to, also after the starting host is gone; otherwise it is a pipe of this host.
   */
  stdin?: boolean;
  /**
   * Run under a pseudo-terminal (stdin, stdout and stderr): `true` or a size in cells
   * (default 120×40); `false` is the same as leaving it out. Never durable.
   */
  pty?: boolean | TerminalSize;
  /**
   * Run on the far side of this environment (SSH, docker exec, kubectl exec, local shell)
   * as a sandbox session: detached there, its PID never signalled on the host. A name from
   * the registry's `environments`, or an environment object (recorded under its configured
   * name when it is one of them; otherwise only this host can follow and kill the session).
   * An unknown name is `INVALID_ARGUMENT`.
   */
  environment?: string | ExecutionEnvironment;
}

/** `SpawnOptions` as `spawn` hands them on once checked: `pty` a size (`true` is `{}`) or absent. */
export type StartOptions = Omit<SpawnOptions, 'pty'> & { pty?: TerminalSize };

/** A terminal's size in cells (columns and rows). */
export interface TerminalSize {
  cols?: number;
  rows?: number;
}

/**
 * What a PTY session's terminal shows now (`ProcessRegistry.screen`): the text a person would
 * see on it, kept by procward's terminal emulator from every byte of the session's output
 * (which also answers the program's terminal queries, such as the cursor position).
 */
export interface TerminalScreen {
  id: string;
  /** `running`, or `exited`: an ended session's screen is the one it left. */
  status: SessionStatus;
  /**
   * The rows' text, top to bottom, without trailing blanks (a wide character is one
   * character for its two cells). Redacted as one text like all output, so a private-key
   * block on screen is masked as one line and there are fewer lines than `rows`.
   */
  lines: string[];
  /**
   * For each of `lines`, whether its line goes on in the next row (a soft wrap: the line
   * was wider than the terminal). Redaction sees the rows of one line joined, so a token
   * wrapped over rows is masked on each of them.
   */
  wrapped: boolean[];
  /** The cursor, in cells, 0-based from the top left (`col` equals `cols` while it waits to wrap); `visible` unless the program hid it. */
  cursor: { row: number; col: number; visible: boolean };
  /** Width in cells: the PTY's, at most 512 (a wider PTY shows its left 512 columns). */
  cols: number;
  /** Height in cells: the PTY's, at most 256 (a taller PTY shows its top 256 rows). */
  rows: number;
  /** The program draws on the alternate screen (`ESC[?1049h`), as full-screen TUIs do. */
  alternateScreen: boolean;
  /**
   * Bytes of output read but not drawn yet: 0 when the screen shows all output so far.
   * Drawing is bounded by work per call, so a job flooding its terminal (costly sequences
   * such as REP or erase in display) is shown as drawn so far and this says how far behind.
   */
  pendingBytes: number;
}

/** What every session summary has, running or ended. Times in milliseconds since the epoch. */
export interface SessionFields {
  id: string;
  command: string;
  cwd: string;
  pid: number | null;
  /** `running` or `exited`: the discriminant of {@link SessionSummary}. */
  status: SessionStatus;
  startedAt: number;
  /** Milliseconds the job ran (until now while running). */
  uptimeMs: number;
  taskId?: string;
  ownerTaskId?: string;
  sessionKey?: string;
  durable: boolean;
  /**
   * A durable job's supervisor (`procward-supervise`), which `pid` is not: `pid` is the job's
   * own process (its shell), the one a signal must reach. Absent for other sessions.
   */
  supervisorPid?: number;
  /** The kill-after deadline the job was started with (see `SpawnOptions.timeoutMs`), in milliseconds. */
  timeoutMs?: number;
  /** The job's cgroup v2 directory when it runs contained (Linux). */
  cgroup?: string;
  /** `sandbox` when the job runs in another environment (its PID is that environment's). */
  pidScope?: 'host' | 'sandbox';
  /** The configured environment (by name) a sandbox session runs in; absent for an environment passed as an object, and for local jobs. */
  environment?: string;
  /**
   * Present when this host does not fully understand the session's entry (written by a newer
   * procward, or failing validation): it is listed as far as it can be shown, and `kill`,
   * `wait` and input give `SESSION_READ_ONLY`.
   */
  readOnly?: true;
  /** Recovered from the checkpoint: not a child of this host. */
  detached: boolean;
  /** Listed because it shares the session key, though another task started it. */
  sessionScoped?: boolean;
  /**
   * A running job on this machine: whether its own process is stopped (SIGSTOP, or Ctrl-Z
   * and the other stop signals it acted on: state `T` in `/proc/<pid>/stat`), a durable
   * job's own process, not its supervisor's. A stopped job still counts as running
   * (`hasActiveProcesses`), and `kill` sends SIGCONT right after SIGTERM so its handlers
   * run. Absent for ended and sandbox sessions, and when the process cannot be read.
   */
  stopped?: boolean;
  /** The durable log was evicted to keep the state directory within `maxTotalLogBytes`: `readLog` has no lines. */
  logEvicted?: true;
}

/** A session whose job runs: it has no end yet. */
export interface RunningSession extends SessionFields {
  status: 'running';
  exitCode: null;
  signal: null;
  reason: null;
  exitedAt: null;
}

/** A session whose job ended: when and why, with its exit code or the signal that ended it. */
export interface ExitedSession extends SessionFields {
  status: 'exited';
  /** The exit code; null when a signal ended the job or the end was not seen (`lost`). */
  exitCode: number | null;
  /** The terminating signal's name (`SIGKILL`), or null. */
  signal: string | null;
  reason: CompletionReason;
  exitedAt: number;
  /**
   * Present when the job had a deadline (`timeoutMs`): true when the deadline passed while
   * it ran and its tree was killed for it (then `reason` is `killed`), false when it ended
   * before. Not `WaitResult.timedOut`, which says the wait gave up.
   */
  deadlineExceeded?: boolean;
  /**
   * Processes the job left running that are provably its own (in its cgroup, or in its
   * session and process group, started after it on this boot): a server started with `&`
   * by a script that exited. Absent when none are known. Such a session still counts for
   * `hasActiveProcesses`, `killAll` and `killStartedSince`, and its `kill` ends them.
   */
  leftovers?: number;
}

/**
 * A session as `list`, `spawn` and `poll` describe it, discriminated on `status`: once
 * `status === 'exited'`, `reason` and `exitedAt` are set.
 */
export type SessionSummary = RunningSession | ExitedSession;

/** What `ProcessRegistry.spawn` returns: the new session's summary and what its environment left out. */
export type SpawnResult = SessionSummary & {
  /**
   * Names (never values) of the host's variables withheld from the job because they look
   * like secrets (credential-like names, known provider variables) and were neither set in
   * `env` nor named in `allowEnv`, sorted. Empty for a sandbox session (its environment is
   * the far side's).
   */
  withheldEnv: string[];
};

/** What `ProcessRegistry.signal` returns: the signal sent and what got it. */
export interface SignalResult {
  id: string;
  /** The signal's name as sent (`SIGINT`). */
  signal: string;
  /** The PID signalled: the job's, also its process group's id when `processGroup`. */
  pid: number;
  /** Whether the job's process group got it (`kill(-pid)`), or its own process alone (a durable job; see `signal`). */
  processGroup: boolean;
  /**
   * When not `processGroup` (a durable job, see `signal`): the PIDs that got the signal, the
   * job's own process first, then its descendants as snapshotted before the first signal.
   */
  signalled?: number[];
}

/** What `ProcessRegistry.poll` returns: the summary and the output preview. */
export type PollResult = SessionSummary & {
  /** The last 2000 characters of output, ANSI-stripped and redacted. */
  outputPreview: string;
};

/** What `ProcessRegistry.wait` returns. */
export type WaitResult = PollResult & {
  /** True when the timeout passed before the job ended. */
  timedOut: boolean;
  processRunning: boolean;
};

/** Options of `ProcessRegistry.poll`. */
export interface PollOptions {
  /** Also consume the completion notification (as `wait` does). Default false. */
  acknowledge?: boolean;
}

/** Options of `ProcessRegistry.wait`. */
export interface WaitOptions {
  /** Give up after this many milliseconds (a positive number). Default: wait for the end. */
  timeoutMs?: number;
  /** Abort the wait: it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Options of `ProcessRegistry.readLog`. */
export interface ReadLogOptions {
  /** First line, 0-based. Default: the last `limit` lines. */
  offset?: number;
  /** Lines in the page. Default 200. */
  limit?: number;
  /** `plain` (escape sequences removed, the default) or `raw`. */
  view?: 'plain' | 'raw';
  /** Byte cap of the page's text (UTF-8), at least 256. Default 1 MiB. */
  maxBytes?: number;
}

/** Options of `ProcessRegistry.kill` and `killStartedSince`. */
export interface KillOptions {
  /** Milliseconds between SIGTERM and SIGKILL. Default: the registry's `graceMs` (2000). */
  graceMs?: number;
}

/** Options of `ProcessRegistry.killAll`. */
export interface KillAllOptions extends KillOptions {
  /** The task whose running sessions are killed. */
  taskId: string;
  /** Sessions left running. */
  excludeIds?: string[];
}

/** Filter of `ProcessRegistry.list`. */
export interface ListFilter {
  /** Only the sessions this task started or owns (and, with `sessionKey`, those sharing the key). */
  taskId?: string;
  sessionKey?: string;
}

/** Options of `ProcessRegistry.drainNotifications`. */
export interface DrainOptions {
  /** Only events of this session key (all events when omitted and there is no `ownsEvent`). */
  sessionKey?: string;
  /** Which events the caller owns; one that throws owns nothing (the event stays queued). */
  ownsEvent?: (event: ProcwardEvent) => boolean;
}

/** Options of `ProcessRegistry.hasActiveForSession`. */
export interface ActiveForSessionOptions {
  /** Only sessions that started within this many milliseconds. */
  maxActiveAgeMs?: number;
}

/** Options of `ProcessRegistry.write` and `submit`. */
export interface WriteOptions {
  /**
   * Milliseconds the write waits while the job takes none of its bytes, before it fails with
   * `WRITE_TIMEOUT` (a job that reads slowly is waited for as long as it reads). Default
   * 30 000.
   */
  timeoutMs?: number;
}

/** What `ProcessRegistry.readLog` returns. */
export interface LogResult {
  id: string;
  status: SessionStatus;
  /** The page's lines joined with `\n`. */
  text: string;
  lines: string[];
  totalLines: number;
  offset: number;
  showing: string;
  /**
   * Bytes of output dropped before the first line: by the in-memory cap (`maxOutputChars`),
   * or for durable jobs by the log cap (`logMaxBytes`, plus bytes the disk refused).
   * `showing` says so too.
   */
  droppedChars: number;
  /** Durable jobs: lines in the output dropped by the log cap. */
  droppedLines?: number;
  /**
   * The durable log was evicted by the disk budget (`maxTotalLogBytes`): the page is empty,
   * `showing` says when, and `droppedChars` is the output the log held (0 when unknown).
   */
  logEvicted?: true;
}

/** What `ProcessRegistry.logDiskUsage` returns: the durable logs of the state directory, in bytes on disk (`st_blocks × 512`). */
export interface LogDiskUsage {
  /** Disk the logs of the sessions this registry lists take, as last measured (running logs just now). */
  usedBytes: number;
  /** `maxTotalLogBytes`. */
  budgetBytes: number;
  /** Of `usedBytes`, the logs of running jobs (never evicted). */
  runningBytes: number;
  /** Listed sessions whose log was evicted. */
  evictedSessions: number;
  /** Still over the budget after eviction: what is left is running, undelivered, another live host's, or still written by a supervisor. */
  overBudget: boolean;
}

/** What `ProcessRegistry.kill` returns. */
export interface KillResult extends KillReport {
  id: string;
  /** `killed`, or `already_exited` when the session had ended before the kill. */
  outcome: 'killed' | 'already_exited';
  exitCode: number | null;
  signal: string | null;
}


/** `timeoutMs` → `timeout_ms`: a camelCase key as the tool surface writes it. */
type SnakeKey<K extends string> = K extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${SnakeKey<T>}` : K;

/**
 * A result as the LLM tool gives it (see `surfaces/tool.ts`): every key snake_case, at every
 * depth, and a session's `id` named `session_id`.
 */
export type Snake<T> = T extends readonly (infer E)[]
  ? Snake<E>[]
  : T extends object
    ? { [K in keyof T as K extends 'id' ? 'session_id' : K extends string ? SnakeKey<K> : never]: Snake<T[K]> }
    : T;
