/**
 * A durable job's own process, beside its supervisor's (DESIGN section 3): which process
 * may be believed to be the job, and the one the supervisor names in `supervisor.json`.
 * Both sources are untrusted (a checkpoint anyone with the state directory can edit, a
 * session directory the job itself can write), so a job identity is believed only when
 * the live system agrees: a stranger's PID is never reported as a session's `pid`, where
 * a user would signal it.
 */
import { readSupervisorFile } from '../persist/jobfiles.js';
import { descendants, probe, verdict } from '../processes.js';
import type { RecordedIdentity } from './record.js';

/**
 * Whether `job` is the job of `supervisor`: on the same boot, started no earlier than it,
 * and, while a process with that PID lives, with that start time and the supervisor's
 * child or a member of its process group (the job's group is the supervisor's, and stays
 * so when the supervisor is gone; Windows has no such group: there the supervisor must be
 * alive and the job its child). A job that is gone passes (nothing can be pointed at); a
 * PID that now names another process does not.
 */
export function isJobOf(job: RecordedIdentity, supervisor: RecordedIdentity): boolean {
  if (job.bootId !== supervisor.bootId || job.pid === supervisor.pid || BigInt(job.startTime) < BigInt(supervisor.startTime)) return false;
  const [p] = probe([job.pid]);
  if (!p?.exists || p.state === 'Z' || p.state === 'X') return !p?.error;
  if (p.startTime !== job.startTime) return false;
  // Windows: one process's probe has no parent (ToolHelp's snapshot has) and no group.
  if (process.platform === 'win32') return childOf(job, supervisor);
  return p.ppid === supervisor.pid || p.pgid === supervisor.pid;
}

/** Whether `job` is a live child of the live `supervisor`, from one snapshot of the process table. */
function childOf(job: RecordedIdentity, supervisor: RecordedIdentity): boolean {
  if (verdict(supervisor) !== 'current') return false;
  try {
    return descendants(supervisor.pid).some((d) => d.pid === job.pid && d.ppid === supervisor.pid && d.identity.startTime === job.startTime);
  } catch {
    return false;
  }
}

/**
 * The job `supervisor.json` at `path` names, when that file is the recorded supervisor's
 * (same PID and start time) and the job passes {@link isJobOf}; else `null` (not written
 * yet, written by a supervisor of an earlier version, or not to be believed).
 */
export function namedJob(path: string, supervisor: RecordedIdentity): RecordedIdentity | null {
  const file = readSupervisorFile(path);
  const sup = file?.supervisor;
  if (!file?.job || !sup || sup.pid !== supervisor.pid || sup.startTime !== supervisor.startTime) return null;
  return isJobOf(file.job, supervisor) ? file.job : null;
}
