/**
 * The one place that picks a kind of job: for a recorded session (`sessionFor`), and for a
 * new one (`startSession`). Everything else asks the {@link JobSession} it got. A running
 * entry that no kind can follow (see {@link unfollowable}) is ended `lost` by the host that
 * owns it, with a diagnostic saying why.
 */
import { WrappingSession } from './base.js';
import { DurableSession } from './durable.js';
import { ForeignSession } from './foreign.js';
import { EMPTY_REPORT, type JobSession, type LeftoverQuery, type Live, type SessionHost, type StartSpec, type StopProbe, type KindKillResult } from './kind.js';
import { LocalSession } from './local.js';
import type { SessionRecord } from './record.js';
import { SandboxSession } from './sandbox.js';

/** The kind of job a record describes; wrapped as foreign while another live host owns it. */
export function sessionFor(live: Live, host: SessionHost): JobSession {
  const r = live.record;
  let inner: JobSession = r.pidScope === 'sandbox' ? new SandboxSession(live, host) : r.durable ? new DurableSession(live, host) : new LocalSession(live, host);
  const why = unfollowable(r, host);
  if (why !== null) inner = new Unfollowable(live, host, inner, why, guardRefuses(r));
  return live.foreign ? new ForeignSession(live, host, inner) : inner;
}

/**
 * Why no host can follow the running job `r` names, or null when one can. Such an entry is
 * well-formed field by field, but its fields together lead to nothing to watch or signal:
 * - a sandbox job in an environment that was not named: only the host that started it held
 *   the environment (an object, never recorded), so once that host is gone nobody can poll
 *   or kill the far side;
 * - a host job without an identity (its host stopped before the job started, or the record
 *   lost it), unless durable: a durable job's supervisor records its own (`supervisor.json`);
 * - a host job whose identity names PID 1 or less, or this host's own process: never a job,
 *   and never signalled (see the core's guard), so it could never be seen to end;
 * - a host job whose `pid` and identity name different processes: which one is the job?
 *
 * A named environment this host has not configured is followable (by a host that has), so
 * it is not on the list; nor are ended entries.
 */
export function unfollowable(r: SessionRecord, host: SessionHost): string | null {
  if (r.status !== 'running') return null;
  if (r.pidScope === 'sandbox') {
    if (r.environment !== undefined || host.environments.forRecord(r) !== null) return null;
    return 'it runs in an environment that was not named, known only to the host that started it: no other host can follow or kill it';
  }
  const id = r.identity;
  if (id === null) return r.durable ? null : 'its record holds no process identity, so there is no process to follow';
  if (id.pid <= 1) return `its record names PID ${id.pid}, which is never a job`;
  if (id.pid === process.pid) return `its record names this host's own process (PID ${id.pid}), which is never a job`;
  if (r.pid !== null && r.pid !== id.pid) return `its record names PID ${r.pid} but the identity of PID ${id.pid}, so which process is the job is not known`;
  return null;
}

/**
 * Whether the core's kill guard refuses the process a host entry names, whatever else it
 * says (PID 1 or less, this host): a kill of it may go to its kind, which signals nothing
 * and lists the refusal.
 */
function guardRefuses(r: SessionRecord): boolean {
  const pid = r.pidScope === 'sandbox' ? null : r.identity?.pid;
  return pid !== undefined && pid !== null && (pid <= 1 || pid === process.pid);
}

/**
 * A running entry no host can follow (see {@link unfollowable}): while another live host
 * owns it, it is the kind it names (that host may still follow it); once this host owns it,
 * its first refresh ends it `lost` (unless its kind learns a true end first), with the reason
 * in `diagnostics` and in its output. A kill of it then signals nothing and says
 * `already_exited`, with the session ended (and the guard's refusal listed when its record
 * names a process procward never signals).
 */
class Unfollowable extends WrappingSession {
  constructor(
    live: Live,
    host: SessionHost,
    inner: JobSession,
    private readonly why: string,
    /** The guard refuses its root: an ended one's kill still goes to its kind, which lists the refusal (see `guardRefuses`). */
    private readonly refusedRoot: boolean,
  ) {
    super(live, host, inner);
  }

  /** Whether the diagnostic was given (once, whichever refresh ended the entry). */
  private said = false;

  /**
   * Refreshes it as its kind first (which may still learn a true end, say from a durable
   * job's exit file), then ends it `lost` if it still runs and this host owns it.
   */
  async refresh(): Promise<void> {
    const { live, host } = this;
    const r = live.record;
    const wasRunning = r.status === 'running';
    await this.inner.refresh();
    if (live.foreign || !wasRunning) return;
    if (r.status === 'running') {
      live.tail.append(`\n[procward: session lost: ${this.why}]\n`);
      host.finish(live, { exitCode: null, signal: null, reason: 'lost', source: 'recovery' });
    }
    if (r.reason === 'lost' && !this.said) {
      this.said = true;
      host.diagnostics.push(`${r.id}: ended as lost: ${this.why}`);
    }
  }

  async kill(graceMs: number): Promise<KindKillResult> {
    const r = this.live.record;
    if (r.status === 'running' || this.refusedRoot) return this.inner.kill(graceMs);
    return { id: r.id, outcome: 'already_exited', ...EMPTY_REPORT, exitCode: r.exitCode, signal: r.signal };
  }

  /** Nothing to look at: the record names no process of a job. */
  stopProbe(): StopProbe | null {
    return null;
  }

  /** Nothing to look for: the record names no process of a job. */
  leftoverQuery(): LeftoverQuery | null {
    return null;
  }
}

/** A new session's kind of job, not started yet. */
export interface StartableSession extends JobSession {
  /** Starts the job and registers the session; resolves once it is recorded. Errors: those of `ProcessRegistry.spawn`. */
  start(spec: StartSpec): Promise<void>;
}

/** The kind of job a new session is: on the far side of an environment, durable, or a pipe or PTY job of this host. */
export function sessionToStart(live: Live, host: SessionHost, spec: StartSpec): StartableSession {
  return spec.sandbox ? new SandboxSession(live, host) : spec.durable ? new DurableSession(live, host) : new LocalSession(live, host);
}
