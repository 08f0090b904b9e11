/**
 * A pipe-mode or PTY job this host started: its output reaches the native tail through a
 * reader thread, its input is the native job's pipe or terminal, and it lives as long as
 * this host reads it. With a state directory its record (and its end) are also kept in
 * `sessions/<id>/session.json`, so a host that dies before its checkpoint write still
 * leaves the job findable and killable, and its end known.
 */
import { existsSync } from 'node:fs';
import { type JobFiles, sessionFiles, writePrivate } from '../persist/jobfiles.js';
import { readSessionFile } from '../persist/recovery.js';
import { HostSession } from './host.js';
import type { Outcome, StartSpec } from './kind.js';
import { endedUnreaped } from './termination.js';

export class LocalSession extends HostSession {
  protected jobOptions(_files: JobFiles | null, spec: StartSpec): object {
    return spec.stdin ? { stdin: true } : {};
  }

  /** A pipe-mode job's identity goes into session.json now, so a host that dies before the checkpoint write can still be followed and killed by the next one. */
  protected started(): void {
    this.recordSessionFile();
  }

  /** A pipe-mode job's end exists nowhere else on disk: session.json keeps it should checkpoint.json be lost or damaged. */
  recordEnd(): void {
    if (this.owned) this.recordSessionFile();
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
