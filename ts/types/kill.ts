/** What `ProcessRegistry.kill`, `signal` and the bulk kills take and return. */
import type { KillReport } from '../processes.js';

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
   * With `foregroundGroup`: the member of that group the group signal went through.
   */
  signalled?: number[];
  /**
   * A PTY job's terminal foreground process group, when a terminal signal (`SIGINT`,
   * `SIGQUIT`, `SIGTSTP`) went there rather than to the job's own group: job control (an
   * interactive shell) puts the command it runs in a group of its own, as Ctrl-C reaches it.
   */
  foregroundGroup?: number;
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

/** What `ProcessRegistry.kill` returns. */
export interface KillResult extends KillReport {
  id: string;
  /** `killed`, or `already_exited` when the session had ended before the kill. */
  outcome: 'killed' | 'already_exited';
  /** How the job ended, as its record says: its own exit code, null when a signal ended it or the status is unknown. */
  exitCode: number | null;
  /**
   * The signal that ended the job, null when it exited by itself: a job that exits from its
   * own TERM trap after the kill's SIGTERM has its exit code here and `signal: null` (what
   * the kill sent is `killSignal`).
   */
  signal: string | null;
  /** The last signal this kill sent: `SIGTERM`, `SIGKILL` after escalation (`escalated`), null when it signalled nothing. */
  killSignal: 'SIGTERM' | 'SIGKILL' | null;
}
