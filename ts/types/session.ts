/** A session as the registry describes it (`list`, `spawn`, `poll`, `wait`). Times in milliseconds. */
import type { CompletionReason, SessionStatus } from '../session/record.js';

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
