/**
 * Signals a caller sends to one session: the tree kill (through the session's kind) and a
 * single signal to its job, checked against the recorded identity and the kill guard.
 */
import { ProcwardError } from '../errors.js';
import { checkOptions } from '../options.js';
import { sessionSignal, signalPlan, TERMINAL_SIGNALS } from '../session/signal.js';
import { assertGraceMs } from '../session/termination.js';
import type { KillOptions, KillResult, SignalResult } from '../types.js';
import { consume, settleHeld } from './notify.js';
import { actOn, assertOpen, type RegistryState, refresh } from './state.js';

/** `ProcessRegistry.kill`: every argument checked before any side effect, then the kind's kill. */
export async function kill(st: RegistryState, id: string, opts: KillOptions): Promise<KillResult> {
  assertOpen(st);
  checkOptions('kill', opts);
  const graceMs = opts?.graceMs ?? st.options.graceMs ?? 2000;
  // Every argument is checked before any side effect: a rejected kill leaves no marker.
  assertGraceMs(graceMs);
  const live = actOn(st, id);
  await refresh(st, live);
  // The caller sees the end in the kill's result: its completion is delivered (DESIGN
  // section 7), whether the end comes during the kill or came before it.
  live.endReaders++;
  let seen = false;
  try {
    const result = await live.kind.kill(graceMs);
    consume(st, live);
    seen = true;
    return { ...result, killSignal: result.signalled.length === 0 ? null : result.escalated ? 'SIGKILL' : 'SIGTERM' };
  } finally {
    live.endReaders--;
    settleHeld(st, live, seen);
    // What the kill left of an ended job: nothing, unless a survivor is still dying.
    st.leftovers.check([live]);
  }
}

/** `ProcessRegistry.signal`: one signal to the job's group, or to a durable job's own tree. */
export async function signal(st: RegistryState, id: string, name: string): Promise<SignalResult> {
  assertOpen(st);
  const sig = sessionSignal(name);
  const live = actOn(st, id);
  await refresh(st, live);
  const r = live.record;
  const ended = () => new ProcwardError('SESSION_EXITED', `session ${r.id} has ended; ${sig} was not sent`);
  if (r.status !== 'running') throw ended();
  // A kind that signals its job itself (a sandbox session: on the far side).
  const own = live.kind.signal(sig);
  if (own) return own;
  // The platform's target: the group, or a durable job's own process (see session/signal.ts).
  const { target, viaGroup, missing, send } = signalPlan(r, sig, live.detached);
  if (!target) throw new ProcwardError('ENOTSUP', missing);
  // A PTY job this host runs: a terminal signal goes to the terminal's foreground group, as
  // Ctrl-C does (an interactive shell's command runs in a group of its own).
  const fg = viaGroup && !r.durable && TERMINAL_SIGNALS.has(sig) ? (live.job?.foregroundGroup() ?? null) : null;
  if (fg !== null && fg !== target.pid) {
    const report = await send(target, fg);
    if (report.signalled.length > 0) return { id: r.id, signal: sig, pid: target.pid, processGroup: true, foregroundGroup: fg, signalled: report.signalled };
    // The foreground group left the session or ended meanwhile: the job's own group, as before.
  }
  const report = await send(target);
  if (report.signalled.includes(target.pid)) return { id: r.id, signal: sig, pid: target.pid, processGroup: viaGroup, ...(!viaGroup && { signalled: report.signalled }) };
  if (report.refused.length > 0) throw new ProcwardError('KILL_REFUSED', `${sig} to session ${r.id} was refused: ${report.refused.map((x) => x.reason).join(', ')}`, { report });
  if (report.survivors.length > 0) throw new ProcwardError('IDENTITY_UNKNOWN', `process ${target.pid} of session ${r.id} cannot be read now; ${sig} was not sent`, { report });
  // Gone or reused since the refresh: the job ended.
  await refresh(st, live);
  throw ended();
}
