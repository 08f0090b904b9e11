/**
 * One signal to a sandbox session's job on the far side (`ProcessRegistry.signal`), with no
 * escalation and no wait, as `signalTree` sends one on this host.
 *
 * The job shares its session and process group with the wrapper that records its exit (see
 * `WRAPPER` in `farshell.ts`), so a group signal would reach the wrapper too: a SIGINT would
 * end the wrapper and the job's end would never be recorded. So the signal goes to the job's
 * own tree only: the job's process (its PID and start time as the wrapper recorded them in
 * `job`), then its descendants by parent PID (a "child" that started before its parent is
 * not one: the PID was reused), all snapshotted with their start times before the first
 * signal, each checked again (field 22 of `/proc/<pid>/stat`, not a zombie) right before its
 * own signal. When the job's process itself does not get it, no descendant does. The job can
 * rewrite `job`, so the process it names must be the wrapper's child in the wrapper's session
 * (the wrapper as `pid` and `start` name it, alive). The wrapper, PID 1, the far shell running
 * the script, its ancestors and the leaders of their groups and sessions are never signalled.
 * (A `job` file naming the wrapper's watcher, its other child, is not told apart: the job can
 * end that one itself anyway.)
 *
 * The name is checked against `JOB_SIGNALS` here before anything runs and reaches the far
 * shell single-quoted, without its `SIG` prefix (`kill -s INT`: dash, bash and BusyBox take
 * names, and numbers differ between architectures). Without `/proc` (a non-Linux far side)
 * no identity can be checked, so nothing is sent.
 */
import { ProcwardError } from '../errors.js';
import { JOB_SIGNALS } from '../processes.js';
import type { SignalResult } from '../types.js';
import type { ExecutionEnvironment } from './environments.js';
import { farDir, OURS, OWN, shq, WRAPPER_ALIVE } from './farshell.js';

/** What the far side answered: the PIDs that got the signal (the job's first), or why none did. */
export type FarSignal = { sent: number[]; job: number } | 'exited';

/**
 * The script: `WRAPPER_ALIVE` gives the wrapper (`P`, `PS`, `A`) and the safe reads, `OWN`
 * gives `snap`, `OURS` this script's own processes. The job's process must be the wrapper's
 * child in the wrapper's session, as the wrapper started it (the job can rewrite `job` to
 * name anything); its tree is printed root first as `pid start` lines; each line is signalled
 * only while its process is still that one. Output: `SENT pid` lines, or one of `EXITED` (the
 * job's process is gone: the session has ended or is ending), `NOJOB` (its process is not
 * recorded yet: the launch is under way), `NOTJOB` (`job` names no child of a running
 * wrapper), `NOPROC`.
 */
function script(dir: string, name: string): string {
  return [
    farDir(dir),
    WRAPPER_ALIVE,
    OWN,
    OURS,
    '[ -d /proc/1 ] || { echo NOPROC; exit 0; }',
    // The job can write into its directory: only a regular file is read, and only its head.
    'J=$(rd "$D/job" 64); set -f; set -- $J; set +f',
    'JP=${1:-}; JS=${2:-}',
    'num "$JP" && num "$JS" || { if [ -e "$D/exit" ]; then echo EXITED; else echo NOJOB; fi; exit 0; }',
    '[ "$JP" -gt 1 ] || { echo NOJOB; exit 0; }',
    'if [ "$A" != alive ]; then if [ -e "$D/exit" ]; then echo EXITED; else echo NOTJOB; fi; exit 0; fi',
    'if ours "$JP" || ours "$P" || [ "$JP" = "$P" ]; then echo NOTJOB; exit 0; fi',
    'TREE=$(snap | awk -v P="$JP" -v S="$JS" -v W="$P" \'',
    '  { pp[$1] = $2; sid[$1] = $3; st[$1] = $4; state[$1] = $5 }',
    '  END {',
    '    if (!(P in st) || st[P] != S || state[P] == "Z") exit',
    '    if (pp[P] != W || sid[P] != W || st[P] + 0 < st[W] + 0) { print "NOTJOB"; exit }',
    '    mark[P] = 1; print P, S',
    '    do { changed = 0',
    '      for (p in pp) if (!(p in mark) && p != W && (pp[p] in mark) && st[p] + 0 >= st[pp[p]] + 0) { mark[p] = 1; changed = 1; if (state[p] != "Z") print p, st[p] }',
    '    } while (changed)',
    '  }\')',
    '[ -n "$TREE" ] || { echo EXITED; exit 0; }',
    '[ "$TREE" != NOTJOB ] || { echo NOTJOB; exit 0; }',
    'FIRST=1',
    'echo "$TREE" | while read -r p s; do',
    '  case "$p" in ""|*[!0-9]*) continue;; esac',
    // `ours` first: it may run pstat itself.
    `  if [ "$p" -gt 1 ] && [ "$p" != "$P" ] && ! ours "$p" && pstat "$p" && [ "$T" = "$s" ] && [ "$ST" != Z ] && kill -s ${shq(name.slice(3))} "$p" 2>/dev/null; then echo "SENT $p"`,
    // The job's own process did not get it: it ended since the snapshot; its tree is left alone.
    '  elif [ -n "$FIRST" ]; then echo EXITED; break; fi',
    '  FIRST=',
    'done',
    // So the caller knows the job's PID even when its process did not get the signal.
    'echo "JOB $JP"',
  ].join('\n');
}

/**
 * Sends `name` (one of `JOB_SIGNALS`, as `jobSignal` spells it) to the tree of the job whose
 * far-side directory is `dir`. Returns the PIDs that got it (the job's process first), or
 * `exited` when the job's process is gone. Errors: `INVALID_ARGUMENT` for another name
 * (details: `allowed`; nothing runs); `ENOTSUP` when the job's process is not recorded yet or
 * the far side has no `/proc`; `ENVIRONMENT_UNAVAILABLE` when the far side cannot be reached.
 */
export async function signalRemote(env: ExecutionEnvironment, dir: string, name: string): Promise<FarSignal> {
  if (!(JOB_SIGNALS as readonly string[]).includes(name)) {
    throw new ProcwardError('INVALID_ARGUMENT', `unknown signal ${JSON.stringify(name)}: use one of ${JOB_SIGNALS.join(', ')}`, { allowed: [...JOB_SIGNALS] });
  }
  const res = await env.exec(script(dir, name), { timeoutMs: 20_000 });
  const text = res.stdout.toString('utf8');
  if (res.code !== 0 || res.timedOut) {
    throw new ProcwardError('ENVIRONMENT_UNAVAILABLE', `cannot reach the sandbox to send ${name} (${res.timedOut ? 'timed out' : `exit ${res.code}`}): ${res.stderr.trim()}; nothing was sent`);
  }
  if (/^NOPROC$/m.test(text)) {
    throw new ProcwardError('ENOTSUP', `the far side has no /proc: its processes cannot be told from others that reuse their PIDs, so ${name} was not sent; kill the session instead`);
  }
  if (/^NOTJOB$/m.test(text)) {
    throw new ProcwardError('ENOTSUP', `the far side's job file names no child of the session's running wrapper (the job can rewrite it, or the wrapper is gone): ${name} was not sent; kill the session instead`);
  }
  if (/^NOJOB$/m.test(text)) {
    throw new ProcwardError('ENOTSUP', `the job's own process is not recorded on the far side yet (it is starting): ${name} was not sent; try again`);
  }
  const sent = [...text.matchAll(/^SENT (\d+)$/gm)].map((m) => Number(m[1]));
  const job = Number(/^JOB (\d+)$/m.exec(text)?.[1]);
  if (sent.length === 0 || sent[0] !== job) return 'exited';
  return { sent, job };
}

/** The registry's result for a signal the far side sent (`processGroup` false: the job's own tree, never its wrapper's group). */
export function farSignalResult(id: string, signal: string, far: { sent: number[]; job: number }): SignalResult {
  return { id, signal, pid: far.job, processGroup: false, signalled: far.sent };
}
