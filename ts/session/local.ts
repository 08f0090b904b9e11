/**
 * A pipe-mode or PTY job this host started: its output reaches the native tail through a
 * reader thread, its input is the native job's pipe or terminal, and it lives as long as
 * this host reads it. With a state directory its record (and its end) are also kept in
 * `sessions/<id>/session.json`, so a host that dies before its checkpoint write still
 * leaves the job findable and killable, and its end known.
 */
import { existsSync } from 'node:fs';
import { type JobFiles, sessionFiles, writePrivate, writePrivateAsync } from '../persist/jobfiles.js';
import { readSessionFile } from '../persist/recovery.js';
import { HostSession } from './host.js';
import type { Outcome, StartSpec, KindKillResult } from './kind.js';
import type { Identity } from '../processes.js';
import { ownMark } from './mark.js';
import { guardJob, releaseJob } from './guardian.js';
import { endedUnreaped } from './termination.js';

export class LocalSession extends HostSession {
  protected jobOptions(_files: JobFiles | null, spec: StartSpec): object {
    return spec.stdin ? { stdin: true } : {};
  }

  /**
   * A pipe-mode job's identity goes into session.json now, so a host that dies before the
   * checkpoint write can still be followed and killed by the next one. Without a state
   * directory no other host can ever reach the job: it ends with this host (see
   * `guardian.ts`), unless it was started with `outliveHost`.
   */
  protected started(spec: StartSpec): void {
    this.recordSessionFile();
    const r = this.live.record;
    if (this.host.stateDir !== null || spec.outliveHost || !r.identity) return;
    this.guarded = r.identity;
    const why = guardJob(r.identity, r.cgroup !== undefined ? r.id : null, ownMark(r));
    if (why !== null && !this.host.diagnostics.includes(why)) this.host.diagnostics.push(why);
  }

  /** The identity the guardian holds for this job, until it ends. */
  private guarded: Identity | undefined;

  ended(): void {
    super.ended();
    if (this.guarded) releaseJob(this.guarded);
    this.guarded = undefined;
  }

  /** Kills of this session under way (see {@link kill}). */
  private killing = 0;

  /**
   * A pipe-mode job's end exists nowhere else on disk: session.json keeps it should
   * checkpoint.json be lost or damaged. During a kill it is written on the thread pool,
   * after the kill's claim (see {@link kill}).
   */
  recordEnd(): void {
    if (!this.owned) return;
    if (this.killing === 0) {
      this.recordSessionFile();
      return;
    }
    const text = JSON.stringify(this.live.record);
    // After the claims of the kills asked for with this one (queued for the same turn).
    setImmediate(() => void this.recordSessionFileSoon(text));
  }

  /**
   * The tree kill. The end it brings reaches session.json on the thread pool, behind the
   * kill's claim, and the kill does not wait for it: until it is written, the kill's marker
   * and claim in the session directory say the job was killed, and the checkpoint (written
   * within 200 ms, and on close) holds the end. A bulk kill then costs its markers and
   * claims, not a file replaced per job on the event loop (1-5 ms each on a busy disk).
   */
  async kill(graceMs: number): Promise<KindKillResult> {
    this.killing++;
    try {
      return await super.kill(graceMs);
    } finally {
      this.killing--;
    }
  }

  /** A pipe-mode job's host wrote its end to session.json (the checkpoint may be older). */
  protected writtenEnd(): Outcome | null {
    const written = this.host.stateDir === null ? null : readSessionFile(sessionFiles(this.host.stateDir, this.live.record.id).metaPath);
    if (written?.status !== 'exited' || !written.reason) return null;
    return {
      exitCode: written.exitCode,
      signal: written.signal,
      reason: written.reason,
      source: written.terminationSource ?? 'recovery',
      ...(written.exitedAt !== null && { exitedAt: written.exitedAt }),
    };
  }

  protected endedBeforeKill(): boolean {
    return super.endedBeforeKill() || (this.live.record.identity !== null && endedUnreaped(this.live.record.identity));
  }

  /** {@link recordSessionFile} of `text` on the thread pool; never rejects (a failure is a diagnostic). */
  private async recordSessionFileSoon(text: string): Promise<void> {
    const files = this.files();
    if (!files) return;
    try {
      await writePrivateAsync(files.metaPath, text);
    } catch (err) {
      // A pruned directory has nothing left to update.
      if (existsSync(files.dir)) this.host.diagnostics.push(`${this.live.record.id}: cannot update session.json: ${(err as Error).message}`);
    }
  }

  /** Rewrites `sessions/<id>/session.json` with the record (best effort: a pruned or unwritable directory is skipped). */
  private recordSessionFile(): void {
    const files = this.files();
    if (!files || !existsSync(files.dir)) return;
    try {
      writePrivate(files.metaPath, JSON.stringify(this.live.record));
    } catch (err) {
      this.host.diagnostics.push(`${this.live.record.id}: cannot update session.json: ${(err as Error).message}`);
    }
  }
}
