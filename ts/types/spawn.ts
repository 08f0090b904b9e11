/** What `ProcessRegistry.spawn` takes and returns. */
import type { ExecutionEnvironment } from '../remote/environments.js';
import type { SessionSummary } from './session.js';
import type { TerminalSize } from './terminal.js';

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
