/**
 * Jobs on this host, pipe-mode (`local.ts`) or durable (`durable.ts`): started through the
 * native job API in a new session, ended by tree kill with their recorded identity, and,
 * once detached (recovered after a host restart), followed by that identity.
 */
import { rmSync, statfsSync } from 'node:fs';
import { fromNative, isErrorCode, ProcwardError } from '../errors.js';
import { type JobEvent, native, type NativeJob } from '../native.js';
import { NativeTail } from '../output/tail.js';
import { type JobFiles, jobFiles, killRequested, type RecordedExit, removeSessionDir, writePrivate } from '../persist/jobfiles.js';
import { shellCommand } from '../policy/environment.js';
import { type Identity, type KillReport, killTree, type Verdict, verdict } from '../processes.js';
import { BaseSession } from './base.js';
import { EMPTY_REPORT, type LeftoverQuery, type Outcome, type StartSpec, type StopProbe, type KindKillResult } from './kind.js';
import { settle } from './live.js';
import { markVariables, newMark, ownMark } from './mark.js';
import { claimKillBatched, createKillMarker, createKillMarkerBatched, finishKillInBackground, killClaimed } from './termination.js';

/**
 * The error of a spawn whose session could not be recorded in `stateDir` (nothing was
 * started): the file system's code (`ENOSPC` on a full disk, `EDQUOT`, `EACCES`, ...), with
 * the state directory named. `cause`: the write's error, when there is one.
 */
export function unrecorded(id: string, stateDir: string, cause?: unknown): ProcwardError {
  const e = cause as NodeJS.ErrnoException | undefined;
  let code = e?.code;
  if (code === undefined) {
    try {
      code = statfsSync(stateDir).bavail === 0 ? 'ENOSPC' : 'EIO';
    } catch {
      code = 'EIO';
    }
  }
  const why = e?.message ?? (code === 'ENOSPC' ? 'no space left on the device' : 'its supervisor could not write it');
  return new ProcwardError(isErrorCode(code) ? code : 'EIO', `cannot record session ${id} in the state directory ${stateDir} (${why}); nothing was started`);
}

export abstract class HostSession extends BaseSession {
  /** The native spawn options only this kind adds (a durable job's files, its stdin FIFO). */
  protected abstract jobOptions(files: JobFiles | null, spec: StartSpec): object;

  /**
   * Starts the job and registers the session; resolves once it is recorded (in the
   * checkpoint too, or within 200 ms when `session.json` holds it already).
   */
  async start(spec: StartSpec): Promise<void> {
    const { host, live } = this;
    const r = live.record;
    let files: JobFiles | null = null;
    if (host.stateDir !== null) {
      try {
        files = this.sessionDir(host.stateDir);
      } catch (err) {
        throw unrecorded(r.id, host.stateDir, err);
      }
    }
    // Drawn before session.json is first written: a host that recovers the job proves it by this.
    r.mark ??= newMark(r.id);
    this.prepare(files, spec);
    if (files) this.recordBeforeSpawn(files, spec);
    let job: NativeJob;
    try {
      job = native.spawn(
        {
          command: shellCommand(spec.command, host.options.shell),
          cwd: r.cwd,
          // The mark goes last, so nothing the caller passed can replace it (see mark.ts).
          env: { ...spec.env, ...markVariables(r.mark) },
          ...(host.options.shell !== undefined && { shell: host.options.shell }),
          ...(host.options.shellArgs !== undefined && { shellArgs: host.options.shellArgs }),
          ...this.jobOptions(files, spec),
          ...(spec.pty && { pty: spec.pty }),
          ...(host.options.containment !== false && { cgroupName: r.id }),
          // Output stays in the native tail; JS sees it only when watch patterns need lines.
          tailBytes: host.tailChars,
          forwardOutput: live.watcher !== undefined,
        },
        (ev: JobEvent) => this.onEvent(ev),
      );
    } catch (err) {
      if (files) removeSessionDir(host.stateDir as string, r.id);
      const e = fromNative(err);
      throw new ProcwardError(e.code, host.clean(e.message));
    }
    live.job = job;
    live.tail = new NativeTail(job);
    if (job.cgroup) r.cgroup = job.cgroup;
    r.pid = job.pid;
    r.identity = job.identity;
    r.updatedAt = Math.max(Date.now(), r.updatedAt + 1);
    host.register(live);
    // With a state directory the session is on disk already (session.json, written before
    // the spawn): checkpoint.json follows within 200 ms, shared by every spawn meanwhile.
    this.started(spec);
    if (files) host.persistSoon();
    else await host.persist();
  }

  /** Names the session's files before the spawn, creating what must exist by then (here: its directory). */
  protected sessionDir(stateDir: string): JobFiles {
    return jobFiles(stateDir, this.live.record.id);
  }

  /**
   * Writes `session.json` before the spawn: if this host dies before its checkpoint write,
   * the next host still finds the job (see recovery.ts). Throws what the write throws,
   * with the session directory removed.
   */
  protected recordBeforeSpawn(files: JobFiles, _spec: StartSpec): void {
    try {
      writePrivate(files.metaPath, JSON.stringify(this.live.record));
    } catch (err) {
      removeSessionDir(this.host.stateDir as string, this.live.record.id);
      throw unrecorded(this.live.record.id, this.host.stateDir as string, err);
    }
  }

  /** Fills the record's kind-specific fields before `session.json` is first written. */
  protected prepare(_files: JobFiles | null, _spec: StartSpec): void {}

  /** Called once the job runs and the session is registered. */
  protected started(_spec: StartSpec): void {}

  /** Bytes of output fed to the watcher from output events (see `catchUpWatcher`). */
  private watchedBytes = 0;

  private onEvent(ev: JobEvent): void {
    const live = this.live;
    if (ev.kind === 'output') {
      if (!ev.data) return;
      live.tail.append(ev.data);
      if (live.watcher) {
        this.watchedBytes += ev.data.length;
        this.host.watch(live, ev.data.toString('utf8'));
      }
      return;
    }
    const end = { exitCode: ev.exitCode ?? null, signal: ev.signal ?? null };
    if (live.killsInFlight > 0) live.pendingExit = end;
    else this.endFromExit(end);
  }

  /** The job's own process (a durable job's is its supervisor's child), while it runs. */
  stopProbe(): StopProbe | null {
    const r = this.live.record;
    return r.status === 'running' && r.identity ? { identity: r.identity, supervised: r.durable } : null;
  }

  /** The recorded leader and cgroup: what the core proves the ended job's leftovers by. */
  leftoverQuery(): LeftoverQuery | null {
    const r = this.live.record;
    const mark = ownMark(r);
    return r.identity ? { leader: r.identity, ...(r.cgroup !== undefined && { cgroup: r.cgroup }), sessionId: r.id, ...(mark !== undefined && { mark }) } : null;
  }

  /**
   * Brings the session up to date: a detached one has ended as soon as its process is gone,
   * a zombie, or its PID was reused; `unknown` keeps it running (retried on the next access).
   */
  async refresh(): Promise<void> {
    const { live } = this;
    const r = live.record;
    if (r.status === 'exited') return;
    if (!live.detached) {
      // Our own child: its reader may have published the end while the event loop did not
      // run yet (a caller polling in a loop that never yields); take it from the job.
      const ended = live.job?.exitStatus();
      if (ended) {
        this.catchUpWatcher();
        this.onEvent(ended);
      }
      return;
    }
    if (!(await this.adopt())) return;
    let recorded = await this.exitRecord();
    const v = recorded && !('invalid' in recorded) ? 'gone' : this.liveVerdict();
    await this.followLog();
    if (v === 'current' || v === 'unknown') return;
    // The supervisor writes the exit file before it exits: one that ended after the first
    // read left it behind for this one.
    recorded ??= await this.exitRecord();
    await this.loadTail();
    if (recorded && 'invalid' in recorded) this.host.diagnostics.push(recorded.invalid);
    if (recorded && !('invalid' in recorded)) this.endFromExit(recorded);
    // A foreign pipe-mode job: its owner saw how it ended and will write it; wait for that.
    else if (this.owned) {
      const written = this.writtenEnd();
      if (written) this.host.finish(live, written);
      else this.endFromExit({ exitCode: null, signal: null });
    }
  }

  /**
   * Before an end taken from the job ahead of its events: output events still queued for the
   * event loop would reach the watcher after the session ended (and its watcher was
   * dropped), so their lines would never be matched. Feeds the watcher the output it has
   * not seen from the native tail (which holds every byte the reader read, up to its cap);
   * the queued events arrive later and find no watcher.
   */
  private catchUpWatcher(): void {
    const { live } = this;
    if (!live.watcher || !live.job) return;
    const { total } = live.job.tailStats();
    const missing = total - this.watchedBytes;
    if (missing <= 0) return;
    const tail = Buffer.from(live.job.tailText(), 'utf8');
    this.watchedBytes = total;
    this.host.watch(live, tail.subarray(Math.max(0, tail.length - missing)).toString('utf8'));
  }

  /** Whether the job runs, by its recorded identity (a durable job: its own or its supervisor's). */
  protected liveVerdict(): Verdict {
    const r = this.live.record;
    return r.identity ? verdict(r.identity) : 'gone';
  }

  /**
   * What the tree kill starts from: the recorded identity, which leads the job's session
   * (a durable job whose supervisor is gone: the job's own process, see `durable.ts`).
   */
  protected killRoot(identity: Identity): { root: Identity; sessionLeader: boolean } {
    return { root: identity, sessionLeader: true };
  }

  /** Whether a detached job can be judged now (a durable job may still be starting). */
  protected async adopt(): Promise<boolean> {
    return true;
  }

  /** The job's end as its exit file records it (durable jobs), or why that file is invalid. */
  protected async exitRecord(): Promise<RecordedExit | { invalid: string } | null> {
    return null;
  }

  /** Follows a detached job's output while it runs (durable jobs: their log). */
  protected async followLog(): Promise<void> {}

  /** Fills an empty tail from where the ended job's output is kept. */
  protected async loadTail(): Promise<void> {}

  /** The end the job's last host wrote beside the checkpoint, if any. */
  protected writtenEnd(): Outcome | null {
    return null;
  }

  /** Whether the job's end was published, or its leader a zombie, before the first signal. */
  protected endedBeforeKill(): boolean {
    return this.live.job?.exitStatus() != null;
  }

  /** The kill's report as this kind of job reads it (a durable job's supervisor is no survivor of the job). */
  protected judgeReport(report: KillReport): KillReport {
    return report;
  }

  /** Whether a kill that reached the leader found a job that had ended on its own before `signalAt`. */
  protected async endedBefore(_signalAt: number): Promise<boolean> {
    return false;
  }

  /**
   * Tree kill (see `ProcessRegistry.kill`): a kill marker first, the guard-checked tree
   * kill, a claim when two kills reach the leader, and survivors finished in the background.
   */
  async kill(graceMs: number): Promise<KindKillResult> {
    const { live, host } = this;
    const r = live.record;
    const wasRunning = r.status === 'running';
    if (!r.identity) return { id: r.id, outcome: 'already_exited', ...EMPTY_REPORT, exitCode: r.exitCode, signal: r.signal };
    const { root, sessionLeader } = this.killRoot(r.identity);
    live.finisher?.abort();
    const files = this.files();
    // Counted before the marker is awaited: an end that arrives meanwhile waits for the
    // kill's verdict (see onEvent), and is not taken for a kill that signalled nothing yet.
    live.killsInFlight++;
    let marked = false;
    if (wasRunning && files) {
      // Best effort: a full disk must not stop a kill (without the marker, a host that sees
      // the end later may record it as `exited` instead of `killed`).
      try {
        // Created, never overwritten: only the kill that created it may remove it.
        marked = await createKillMarkerBatched(files.killMarkPath);
        if (marked) live.killMarked = true;
      } catch (err) {
        host.diagnostics.push(`${r.id}: cannot record the kill request: ${(err as Error).message}`);
      }
    }
    // On an ended session this still cleans up what is left of its process group.
    const signalAt = Date.now();
    // An end published before the first signal, or a leader already a zombie, is the job's own.
    const endedFirst = this.endedBeforeKill();
    let report: KillReport;
    try {
      // Every job leads its own session: a root that does not is no job of ours. And a record
      // is no proof: a job known from one (recovered, or another host's) is signalled only
      // when it carries the session's mark or is in its cgroup. The host that started it
      // knows its identity from the spawn while it has not reaped it; once it ended, its
      // PID may be a stranger's, even one started in the same clock tick (the same start
      // time: seen in the PID-reuse harness), so it takes a proof too.
      const mark = ownMark(r);
      const requireProof = live.detached || !wasRunning || endedFirst;
      report = this.judgeReport(
        await killTree(root, { graceMs, requireSessionLeader: sessionLeader, requireProof, ...(mark && { mark }), ...(r.cgroup && { cgroup: r.cgroup, sessionId: r.id }) }),
      );
    } catch (err) {
      // The kill failed before it signalled anything (a refused root, an unreadable process
      // table): the marker it wrote must not make the job's own end look killed.
      live.killsInFlight--;
      this.dropKillMarker(files);
      throw err;
    }
    let reachedLeader = wasRunning && !endedFirst && report.signalled.includes(root.pid);
    if (reachedLeader && (await this.endedBefore(signalAt))) reachedLeader = false;
    // Two kills (two hosts, or two calls here) may both reach the leader: the first to
    // claim the kill records it, the other finds the job already ended. Either way the job
    // ended killed (a kill's marker or claim is there), so its end is recorded while the
    // claim is on its way: the files of a bulk kill are written side by side.
    const firstHere = reachedLeader && !live.killed;
    const claimed = firstHere ? claimKillBatched(files?.dir ?? null) : null;
    if (firstHere) {
      live.killed = true;
      live.killSignal = report.escalated ? 'SIGKILL' : 'SIGTERM';
    }
    // Counted until this kill knows whether it reached the leader: another kill of ours that
    // finds the leader gone must not remove the marker while this one is still deciding.
    live.killsInFlight--;
    this.dropKillMarker(files);
    if (live.pendingExit && live.killsInFlight === 0) {
      const end = live.pendingExit;
      delete live.pendingExit;
      this.endFromExit(end);
    }
    if (reachedLeader && !(claimed !== null && (await claimed))) reachedLeader = false;
    if (reachedLeader) {
      // The kill that ended the job keeps the marker there (another kill that found the
      // leader gone may have removed it just before our claim).
      try {
        if (files && !marked && !killRequested(files)) marked = createKillMarker(files.killMarkPath);
      } catch {
        // A full disk: the claim file tells the owner as well (see endFromExit).
      }
    }
    const result = (outcome: KindKillResult['outcome']): KindKillResult => ({ id: r.id, outcome, ...report, exitCode: r.exitCode, signal: r.signal });
    // A root that ended (another kill of ours) and was reaped between the core's verdict and
    // its session check reads as no session leader: it is gone, not a stranger.
    const rootRefused = report.refused.find((x) => x.pid === root.pid && !(x.reason === 'not_session_leader' && verdict(root) !== 'current'));
    // A root refused for want of a proof while the job's proven processes were ended: the
    // record named a stranger (the job had ended), and the kill took what the job left.
    if (rootRefused && wasRunning && report.signalled.length === 0) {
      const hint =
        rootRefused.reason === 'no_proof'
          ? ownMark(r) === undefined
            ? ': its record has no session mark (written by a procward before 0.x marked its jobs), and nothing else proves that process is the job; if it is, end it yourself (kill -TERM -<pid>) after checking it'
            : `: that process does not carry the session's mark (${r.id}:…) in its environment and is not in the job's cgroup, so it is not the job`
          : `: its record names PID ${rootRefused.pid}, which procward never signals`;
      throw new ProcwardError('KILL_REFUSED', `the kill of ${r.id} was refused (${rootRefused.reason})${hint}; nothing was signalled`, { report });
    }
    if (report.survivors.length > 0) this.finishInBackground(report, graceMs, root);
    if (live.detached) await host.refresh(live);
    else await settle(live, 2000);
    // Whatever became of the leader, the kill emptied the job's own cgroup (the core kills
    // its members even behind a reused or unreadable leader PID): it goes now.
    if (r.cgroup) native.removeCgroup(r.cgroup, r.id);
    // The leader had ended on its own (or its PID was reused) before the kill reached it.
    if (!reachedLeader) return result('already_exited');
    // Still not published (a slow reader): what we know is that our kill ended it.
    host.finish(live, { exitCode: null, signal: report.escalated ? 'SIGKILL' : 'SIGTERM', reason: 'killed', source: 'kill' });
    return result('killed');
  }

  /**
   * Removes the kill marker when a kill of this host wrote it and no kill needs it: none of
   * ours is still deciding, none reached the leader, and no host claimed the job.
   */
  private dropKillMarker(files: JobFiles | null): void {
    const { live } = this;
    if (!files || !live.killMarked || live.killed || live.killsInFlight > 0 || killClaimed(files.dir)) return;
    rmSync(files.killMarkPath, { force: true });
    live.killMarked = false;
  }

  /**
   * Keeps killing survivors in the background (SIGKILL retries for up to 60 s, only while
   * this registry stays open) and throws `KILL_SURVIVORS` with the report.
   */
  private finishInBackground(report: KillReport, graceMs: number, root: Identity): never {
    const { live, host } = this;
    const r = live.record;
    // The guard already judged the recorded cgroup: the background kill takes it by name.
    const cgroupOurs = r.cgroup !== undefined && !report.refused.some((x) => x.cgroup !== undefined);
    const controller = new AbortController();
    live.finisher = controller;
    finishKillInBackground(report.survivorIdentities, {
      graceMs,
      ...(cgroupOurs && { cgroup: r.id }),
      signal: controller.signal,
      onDone: () => {
        if (verdict(root) !== 'current') host.finish(live, { exitCode: null, signal: 'SIGKILL', reason: 'killed', source: 'kill' });
      },
      onGiveUp: (left) => host.diagnostics.push(`kill of ${r.id}: ${left.map((i) => i.pid).join(', ')} still alive after 60 s`),
    });
    throw new ProcwardError(
      'KILL_SURVIVORS',
      `${report.survivors.length} process(es) survived the kill of ${r.id}: ${report.survivors.join(', ')}; this registry retries SIGKILL for up to 60 s while it stays open (a process in uninterruptible sleep, state D, ends when its I/O does)`,
      { report, finishingInBackground: true },
    );
  }
}
