/**
 * Signals a caller sends to one session: the tree kill (through the session's kind) and a
 * single signal to its job, checked against the recorded identity and the kill guard.
 */
import { ProcwardError } from '../errors.js';
import { checkOptions } from '../options.js';
import { jobSignal, signalJob, signalTree } from '../processes.js';
import { assertGraceMs } from '../session/termination.js';
import type { KillOptions, KillResult, SignalResult } from '../types.js';
import { actOn, assertOpen, type RegistryState, refresh } from './state.js';

/**
 * Signals a durable job's supervisor ignores (a handler that does nothing) or that harm it
 * not: `signal` sends these to the process group the supervisor leads, which holds the job.
 */
const SUPERVISOR_IGNORES: ReadonlySet<string> = new Set(['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGCONT', 'SIGWINCH']);

/** `ProcessRegistry.kill`: every argument checked before any side effect, then the kind's kill. */
export async function kill(st: RegistryState, id: string, opts: KillOptions): Promise<KillResult> {
  assertOpen(st);
  checkOptions('kill', opts);
  const graceMs = opts?.graceMs ?? st.options.graceMs ?? 2000;
  // Every argument is checked before any side effect: a rejected kill leaves no marker.
  assertGraceMs(graceMs);
  const live = actOn(st, id);
  await refresh(st, live);
  try {
    return await live.kind.kill(graceMs);
  } finally {
    // What the kill left of an ended job: nothing, unless a survivor is still dying.
    st.leftovers.check([live]);
  }
}

/** `ProcessRegistry.signal`: one signal to the job's group, or to a durable job's own tree. */
export async function signal(st: RegistryState, id: string, name: string): Promise<SignalResult> {
  assertOpen(st);
  const sig = jobSignal(name);
  const live = actOn(st, id);
  await refresh(st, live);
  const r = live.record;
  const ended = () => new ProcwardError('SESSION_EXITED', `session ${r.id} has ended; ${sig} was not sent`);
  if (r.status !== 'running') throw ended();
  // A kind that signals its job itself (a sandbox session: on the far side).
  const own = live.kind.signal(sig);
  if (own) return own;
  const viaGroup = !r.durable || SUPERVISOR_IGNORES.has(sig);
  const target = viaGroup ? r.identity : r.jobIdentity;
  if (!target) {
    throw new ProcwardError(
      'ENOTSUP',
      r.durable
        ? `session ${r.id} is a durable job whose own process is not known yet: ${sig} would reach its supervisor; send one of ${[...SUPERVISOR_IGNORES].join(', ')} or kill it`
        : `session ${r.id} runs in another environment (or has no process yet): it cannot be signalled from this host; kill it instead`,
    );
  }
  // Not via the group: the job's own tree, one by one, never the supervisor that leads the group.
  const report = viaGroup ? signalJob(target, sig) : signalTree(target, sig);
  if (report.signalled.includes(target.pid)) return { id: r.id, signal: sig, pid: target.pid, processGroup: viaGroup, ...(!viaGroup && { signalled: report.signalled }) };
  if (report.refused.length > 0) throw new ProcwardError('KILL_REFUSED', `${sig} to session ${r.id} was refused: ${report.refused.map((x) => x.reason).join(', ')}`, { report });
  if (report.survivors.length > 0) throw new ProcwardError('IDENTITY_UNKNOWN', `process ${target.pid} of session ${r.id} cannot be read now; ${sig} was not sent`, { report });
  // Gone or reused since the refresh: the job ended.
  await refresh(st, live);
  throw ended();
}
