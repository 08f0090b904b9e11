/**
 * One interface for every kind of job ({@link JobSession}), the run-time state they share
 * ({@link Live}), and what a kind may ask of the registry that holds it ({@link SessionHost}).
 *
 * The kinds: `local.ts` (a pipe or PTY job this host started), `durable.ts` (a job with a
 * supervisor, followed through its files), `sandbox.ts` (a job on the far side of an
 * environment) and `foreign.ts` (an entry another live host owns). `kinds.ts` is the one
 * place that picks a kind. Platform differences are not kinds: they stay in the Rust core,
 * behind the native job API.
 */
import type { Identity, NativeJob } from '../native.js';
import type { LogDrops } from '../output/durablelog.js';
import type { TailView } from '../output/tail.js';
import type { LinePage } from '../output/views.js';
import type { RecordedExit } from '../persist/jobfiles.js';
import type { LineWatcher } from '../policy/notifications.js';
import type { ConfiguredEnvironments } from '../remote/configured.js';
import type { ExecutionEnvironment } from '../remote/environments.js';
import type { KillResult, RegistryOptions, SignalResult, WriteOptions } from '../types.js';
import type { CompletionReason, SessionRecord } from './record.js';

/** How a session ended, as the registry publishes it. */
export interface Outcome extends RecordedExit {
  reason: CompletionReason;
  source: string;
}

/** A session at run time: its record plus what only this host knows. */
export interface Live {
  record: SessionRecord;
  tail: TailView;
  /** What the session is: the one object that answers for its kind of job. */
  kind: JobSession;
  /** Recovered from a checkpoint: not our child, refreshed by identity. */
  detached: boolean;
  /**
   * Written by another host that is still alive: that host owns the entry. We show it,
   * re-read it from the checkpoint, may kill it, but never write it (see `foreign.ts`).
   */
  foreign: boolean;
  /** Kills of this host currently signalling the session. */
  killsInFlight: number;
  /** A kill of ours reached the leader, so its end is `killed`. */
  killed: boolean;
  /** A kill of this host created the session's kill marker (only this host may remove it). */
  killMarked: boolean;
  /** The last signal that kill sent (`SIGTERM`, or `SIGKILL` after escalation). */
  killSignal?: string;
  /** An end the reader reported while a kill was in flight: published once the kill knows whether it reached the leader. */
  pendingExit?: RecordedExit;
  /** A sandbox session's poller found the job gone while a kill was in flight: why. */
  pendingLost?: string;
  /** Stops the background finishing of a kill that timed out. */
  finisher?: AbortController;
  waiters: Set<() => void>;
  /**
   * Calls under way that will return the session's end to their caller (a `wait`, a kill
   * asked for by a caller): an end published meanwhile is delivered to them, so its
   * completion is consumed before it would be queued or told to `completion` listeners.
   */
  endReaders: number;
  /**
   * The end's completion was taken for a reader under way (`endReaders`): given back (queued
   * again, told to listeners) if no reader returns the end after all (a kill that throws, a
   * wait aborted), see `registry/notify.ts` `settleHeld`.
   */
  heldCompletion?: boolean;
  /** Matches output lines against the session's watch patterns. */
  watcher?: LineWatcher;
  /** Bytes of a detached durable job's log already fed to the watcher. */
  watchOffset?: number;
  /** The native job (sessions this host started): its stdin or PTY, and its output tail. */
  job?: NativeJob;
  /** The tail limit the registry last set (see `output/budget.ts`). */
  tailLimit?: number;
  /** Bytes the tail held when the session ended (kept current by the output budget). */
  heldAfterExit?: number;
}

/** A PTY job's screen as the native terminal emulator keeps it (see `TerminalScreen`). */
export type NativeScreen = NonNullable<ReturnType<NativeJob['screen']>>;

/** Output a preview is cut from, and whether it starts inside a private-key block. */
export interface OutputText {
  text: string;
  startsInKeyBlock: boolean;
}

/** Redacts a view of output (`plain` or `raw`); `startsInKeyBlock` as in `redact`. */
export type RedactView = (text: string, view: 'plain' | 'raw', startsInKeyBlock: boolean) => string;

/** Options of `readLog`: zero-based line `offset`, line `limit`, `view`. */
export interface LogOptions {
  offset?: number;
  limit?: number;
  view?: 'plain' | 'raw';
  /** The page's byte cap (UTF-8 text, default 1 MiB, at least 256; see `output/paging.ts`). */
  maxBytes?: number;
}

/** One page of a session's output and what was dropped before it (see `output/paging.ts`). */
export interface LogPage {
  page: LinePage;
  drops: LogDrops;
  /** Characters (tail) or bytes (log file) dropped before the first line. */
  droppedChars: number;
  /** Lines dropped, when the source counts them (a durable log). */
  droppedLines?: number;
  /** What dropped them, for `showing`. */
  cap: string;
}

/**
 * The questions every kind of job answers. The registry calls these and never asks which
 * kind it holds. Errors are `ProcwardError`s with the codes the registry documents.
 */
export interface JobSession {
  /** This host owns the record: it writes it, publishes its completion and may prune it. */
  readonly owned: boolean;
  /** Output and end are kept in files (a durable log and exit file), so the in-memory tail may go first. */
  readonly onDisk: boolean;
  /** Brings the session up to date (its end, new output, a poller to attach). */
  refresh(): Promise<void>;
  /** The output a preview is cut from. */
  output(): Promise<OutputText>;
  /** One page of output by line (see `LogOptions`); `RangeError` for a bad offset or limit. */
  readLog(opts: LogOptions, redactView: RedactView): Promise<LogPage>;
  /** What `wait` runs every tick to notice an end nobody reports (undefined: the end is an event). */
  waitTick(): (() => void) | undefined;
  /** Tree kill with a grace period in milliseconds, checked by the caller. */
  kill(graceMs: number): Promise<KindKillResult>;
  /**
   * Sends one signal (a `JOB_SIGNALS` name, checked by the caller) to a job this kind signals
   * itself (a sandbox session's, on the far side); null when the job's recorded identity is
   * one of this machine's, which the registry signals.
   */
  signal(name: string): Promise<SignalResult> | null;
  /** Writes raw text to the job's input, after the writes before it (see `input.ts`). */
  write(data: string, opts?: WriteOptions): Promise<{ id: string; bytes: number }>;
  /** Ends the job's input. */
  closeStdin(): Promise<{ id: string; closed: true }>;
  /** Resizes a PTY (cells, checked by the caller). */
  resize(size: { cols: number; rows: number }): void;
  /** What a PTY job's screen shows now, unredacted; `INVALID_ARGUMENT` for a job without a PTY this host follows. */
  screen(): NativeScreen;
  /** The process whose stop state `stopped` reports while the job runs on this machine, or null (see `live.ts` `stoppedFlags`). */
  stopProbe(): StopProbe | null;
  /** What to ask the core about the processes the ended job left on this machine, or null when it names none (see `leftovers.ts`). */
  leftoverQuery(): LeftoverQuery | null;
  /** Writes the end where this kind keeps it besides the checkpoint; called once, as the end is published. */
  recordEnd(): void;
  /** Releases what the job held on this host (input side, cgroup) after its end is published. */
  ended(): void;
  /** The registry closes: stop following the job (it keeps running). */
  close(): void;
  /** Retention dropped the session: remove what it left outside the state directory. */
  pruned(): void;
}

/** What a kind of job may ask of the registry that holds it. */
export interface SessionHost {
  readonly options: RegistryOptions;
  /** The state directory, or null for an in-memory registry. */
  readonly stateDir: string | null;
  /** Problems worth telling the host's operator (see `ProcessRegistry.diagnostics`). */
  readonly diagnostics: string[];
  /** The environments sandbox sessions may run in. */
  readonly environments: ConfiguredEnvironments;
  /** Per-session tail size, in bytes. */
  readonly tailChars: number;
  /** Adds a started session to the index. */
  register(live: Live): void;
  /** Removes a session whose job never started and that nothing recorded (a spawn that failed after `register`). */
  discard(live: Live): void;
  /** Brings a session up to date through its current kind (a foreign one may be adopted meanwhile). */
  refresh(live: Live): Promise<void>;
  /** Publishes a session's end; exactly one finisher wins (true for it). */
  finish(live: Live, outcome: Outcome): boolean;
  /** Feeds output to the session's watch patterns (`null`: the output ended). */
  watch(live: Live, text: string | null): void;
  /** The session's watcher for patterns read back from its record. */
  watcherFor(record: SessionRecord): LineWatcher | undefined;
  /** Redacts text leaving the registry (unless redaction is off). */
  clean(text: string, startsInKeyBlock?: boolean): string;
  /** Writes the checkpoint now (shared with concurrent writers). */
  persist(): Promise<void>;
  /** Writes the checkpoint within 200 ms. */
  persistSoon(): void;
  /** The checkpoint's entries as other hosts last wrote them. */
  recordsOnDisk(): Promise<Map<string, SessionRecord>>;
  /** Whether a live host other than this one wrote the record. */
  isForeign(record: SessionRecord): boolean;
}

/** An ended job's recorded leader (a durable job's: its supervisor) and cgroup, as `native.jobLeftovers` takes them. */
export interface LeftoverQuery {
  leader: Identity;
  /** The cgroup as recorded, judged by the core against `sessionId`. */
  cgroup?: string;
  sessionId: string;
  /** The session's mark (see `mark.ts`): group members count only when they carry it. */
  mark?: string;
}

/** A running job's recorded identity, and whether it is a durable job's supervisor's (the job is then its child). */
export interface StopProbe {
  identity: Identity;
  supervised: boolean;
}

/** What `spawn` hands a kind of job to start. */
export interface StartSpec {
  /** The command as given (the record holds it redacted). */
  command: string;
  /** The child's environment (host jobs) ... */
  env: Record<string, string>;
  /** ... or the variables a sandbox exports on the far side. */
  vars?: Record<string, string>;
  /** A sandbox's working directory as given (the record holds `~` when none was). */
  cwd?: string;
  stdin?: boolean;
  pty?: { cols?: number; rows?: number };
  /** Run durably (a host job with a supervisor and files). */
  durable: boolean;
  /** A job of an in-memory registry that keeps running when its host ends (see `guardian.ts`). */
  outliveHost?: boolean;
  /** Run on the far side of this environment (recorded under `name` when it has one). */
  sandbox?: { env: ExecutionEnvironment; name?: string };
}

/** An empty kill report: nothing signalled. */
/** A kind's kill result: the registry adds `killSignal` from its report (see `registry/kill.ts`). */
export type KindKillResult = Omit<KillResult, 'killSignal'>;

export const EMPTY_REPORT = { signalled: [], alreadyGone: [], refusedReused: [], survivors: [], survivorIdentities: [], escalated: false, refused: [] };
