/**
 * What `ProcessRegistry.signal` sends, and to which process, on each platform: the name
 * check, the target (a durable job's own process or its supervisor's group) and the native
 * call. The registry turns the report into its result or error (`registry/kill.ts`).
 *
 * POSIX: one of `JOB_SIGNALS` to the job's process group; a durable job's supervisor leads
 * that group, so signals it does not ignore go to the job's own tree, one process at a time.
 *
 * Windows has no signals. The names follow libuv's `uv_kill`, which Node's `process.kill`
 * uses (https://docs.libuv.org/en/v1.x/process.html#c.uv_kill,
 * https://nodejs.org/api/process.html#signal-events): `SIGTERM`, `SIGKILL`, `SIGINT`,
 * `SIGQUIT` and `SIGHUP` terminate the job's ROOT process alone (`TerminateProcess`, exit
 * code 1; its children run on: a tree kill is `kill`), and `SIGBREAK` is Ctrl-Break to the
 * job's process group, sent by `procward-supervise.exe` (the console helper a kill's
 * graceful step uses), only to a root in the Job Object procward created for it
 * (`KILL_REFUSED` with `not_session_leader` otherwise). A durable job gets every name on
 * its own root, never its supervisor, which holds the job's Job Object and writes the exit
 * file. The end is published as any Windows exit: exit code 1 after termination, no signal
 * (as after a tree kill there). Under Wine 8 Ctrl-Break cannot be sent: `SIGBREAK` fails
 * with `EIO` and the job runs on.
 */
import { fromNative, ProcwardError } from '../errors.js';
import { native } from '../native.js';
import { ownMark } from './mark.js';
import { consoleHelper, type Identity, JOB_SIGNALS, jobSignal, type KillReport, probe, type SignalProof, signalJob, signalTree } from '../processes.js';
import type { SessionRecord } from './record.js';

/** The names `ProcessRegistry.signal` takes on Windows (see the module docs). */
export const WINDOWS_JOB_SIGNALS = ['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGQUIT', 'SIGHUP', 'SIGBREAK'] as const;

/** A name of {@link WINDOWS_JOB_SIGNALS}. */
export type WindowsJobSignal = (typeof WINDOWS_JOB_SIGNALS)[number];

/**
 * Signals a durable job's supervisor ignores (a handler that does nothing) or that harm it
 * not (POSIX): `signal` sends these to the process group the supervisor leads, which holds the job.
 */
export const SUPERVISOR_IGNORES: ReadonlySet<string> = new Set(['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGCONT', 'SIGWINCH']);

/**
 * The name `ProcessRegistry.signal` sends for `name` (case-insensitive, `SIG` optional), as
 * `JOB_SIGNALS` spells it, or `SIGBREAK` on Windows. Which of them a local job on Windows
 * can get is {@link signalPlan}'s answer (a sandbox session's far side takes them all).
 *
 * Errors: as {@link jobSignal} (`INVALID_ARGUMENT`, details: `allowed`), and `ENOTSUP` for
 * `SIGBREAK` off Windows (Ctrl-Break exists there only).
 */
export function sessionSignal(name: unknown, platform: NodeJS.Platform = process.platform): string {
  const upper = typeof name === 'string' ? name.trim().toUpperCase() : '';
  if (upper !== 'SIGBREAK' && upper !== 'BREAK') return jobSignal(name);
  if (platform === 'win32') return 'SIGBREAK';
  throw new ProcwardError('ENOTSUP', 'SIGBREAK is Ctrl-Break, which only Windows has', { allowed: [...JOB_SIGNALS] });
}

/** Where one signal of a running session goes, and how. */
export interface SignalPlan {
  /** The process checked and signalled (absent: not known yet, see `missing`). */
  target: Identity | undefined;
  /** Whether its process group gets the signal; otherwise the process (POSIX: and its descendants) alone. */
  viaGroup: boolean;
  /** Why there is no target (the `ENOTSUP` message). */
  missing: string;
  /**
   * Sends the signal to `target` (or, with `foregroundGroup`, a PTY job's terminal foreground
   * group of `target`'s session); the report as the kill path reports.
   */
  send(target: Identity, foregroundGroup?: number): Promise<KillReport>;
}

/**
 * The plan for signal `sig` (from {@link sessionSignal}) to the running local session `r`
 * on `platform`. Throws `ENOTSUP` on Windows for a name outside {@link WINDOWS_JOB_SIGNALS}
 * (details: `allowed`).
 */
/** The signals a terminal sends its foreground process group (Ctrl-C, Ctrl-\\, Ctrl-Z). */
export const TERMINAL_SIGNALS: ReadonlySet<string> = new Set(['SIGINT', 'SIGQUIT', 'SIGTSTP']);

export function signalPlan(r: SessionRecord, sig: string, detached: boolean, platform: NodeJS.Platform = process.platform): SignalPlan {
  const other = `session ${r.id} runs in another environment (or has no process yet): it cannot be signalled from this host; kill it instead`;
  if (platform === 'win32') {
    if (!(WINDOWS_JOB_SIGNALS as readonly string[]).includes(sig)) {
      throw new ProcwardError('ENOTSUP', `${sig} has no Windows counterpart: use one of ${WINDOWS_JOB_SIGNALS.join(', ')}`, { allowed: [...WINDOWS_JOB_SIGNALS] });
    }
    // Never a durable job's supervisor: the job's own root, whatever the name.
    return {
      target: (r.durable ? r.jobIdentity : r.identity) ?? undefined,
      viaGroup: sig === 'SIGBREAK',
      missing: r.durable ? `session ${r.id} is a durable job whose own process is not known yet: ${sig} would reach its supervisor; kill it instead` : other,
      send: (target) => signalJobAsync(target, sig, proofOf(r, detached)),
    };
  }
  const viaGroup = !r.durable || SUPERVISOR_IGNORES.has(sig);
  return {
    target: (viaGroup ? r.identity : r.jobIdentity) ?? undefined,
    viaGroup,
    missing: r.durable
      ? `session ${r.id} is a durable job whose own process is not known yet: ${sig} would reach its supervisor; send one of ${[...SUPERVISOR_IGNORES].join(', ')} or kill it`
      : other,
    // Not via the group: the job's own tree, one by one, never the supervisor that leads the group.
    send: async (target, foregroundGroup) => {
      const proof = proofOf(r, detached);
      if (!viaGroup) return signalTree(target, sig, proof);
      if (r.durable) return signalJob(target, sig, proof);
      return leaderOnly(target) ?? signalJob(target, sig, { ...proof, ...(foregroundGroup !== undefined && { foregroundGroup }) });
    },
  };
}

/**
 * The refusal for a non-durable job's root that does not lead its own process group
 * (`/proc/<pid>/stat` field 5): every such job starts with `setsid`, so a record naming
 * anything else is not one of procward's jobs, and `signal` refuses it as `kill` does
 * (`not_session_leader`), where the core would send the signal to that process alone.
 * Undefined when the root leads its group, or when it is not the recorded process (gone or
 * reused: `signalJob` reports that).
 */
function leaderOnly(target: Identity): KillReport | undefined {
  const [p] = probe([target.pid]);
  if (!p?.alive || p.startTime !== target.startTime || p.pgid === target.pid) return undefined;
  return { signalled: [], alreadyGone: [], refusedReused: [], survivors: [], survivorIdentities: [], escalated: false, refused: [{ pid: target.pid, reason: 'not_session_leader' }] };
}

/**
 * The native `signalJob` on its own thread, with the console helper `SIGBREAK` needs on
 * Windows (a helper process the thread waits for, never the event loop). Rejects with the
 * native error (`EIO` when Ctrl-Break could not be sent, `ENOTSUP` for a name without a
 * counterpart).
 */
/**
 * What proves a session's root (see `mark.ts`): its mark or its cgroup, required when the
 * session is known from a record (`detached`), not from this host's own spawn.
 */
function proofOf(r: SessionRecord, detached: boolean): SignalProof {
  const mark = ownMark(r);
  return { requireProof: detached, ...(mark !== undefined && { mark }), ...(r.cgroup !== undefined && { cgroup: r.cgroup, sessionId: r.id }) };
}

function signalJobAsync(root: Identity, sig: string, proof: SignalProof): Promise<KillReport> {
  return new Promise((resolve, reject) => {
    try {
      native.signalJobAsync(root, sig, { ...consoleHelper(), ...proof }, (err, report) => (err ? reject(fromNative(err)) : resolve(report as KillReport)));
    } catch (err) {
      reject(fromNative(err));
    }
  });
}
