/** The options of `ProcessRegistry.open` and of the calls that take an options object. Times in milliseconds. */
import type { ExecutionEnvironment } from '../remote/environments.js';
import type { ProcwardEvent, WatchLimits } from '../policy/notifications.js';
import type { RetentionOptions } from '../policy/retention.js';
import type { SpawnPolicy } from '../policy/spawnpolicy.js';

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
   * Milliseconds a job of another live host's may be gone (its process gone or a zombie)
   * with no end written by its owner before this host records it `lost` (an owner whose
   * event loop is stuck, or that was stopped, never would). Default 60 000, as
   * `sandbox.lostAfterMs`; an owner that closed its registry owns nothing at once (see
   * `persist/hostlock.ts`).
   */
  lostAfterMs?: number;
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
