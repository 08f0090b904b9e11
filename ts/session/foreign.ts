/**
 * A session another live host owns: the entry it wrote in the shared checkpoint. This host
 * shows it, takes its newer state from the checkpoint on every refresh, may kill it and
 * write to a durable job's FIFO (through the kind of job it is), but never writes its
 * record, publishes its completion or prunes it. Once its writer has died the session is
 * adopted: it becomes the kind of job it is, owned here.
 */
import { verdict } from '../processes.js';
import { WrappingSession } from './base.js';

/** Default of `RegistryOptions.lostAfterMs`. */
const LOST_AFTER_MS = 60_000;

export class ForeignSession extends WrappingSession {
  /** When this host first saw the job gone while its owner had written no end. */
  private goneSince: number | undefined;

  get owned(): boolean {
    return false;
  }

  /** Takes the entry's newer state from the checkpoint, or adopts it once its writer died; then refreshes it as its kind. */
  async refresh(): Promise<void> {
    const { live, host } = this;
    if (host.stateDir !== null) {
      const fresh = (await host.recordsOnDisk()).get(live.record.id);
      if (fresh && fresh.updatedAt > live.record.updatedAt) {
        Object.assign(live.record, fresh);
        if (fresh.status === 'exited') {
          for (const w of live.waiters) w();
          live.waiters.clear();
        }
      }
      live.foreign = host.isForeign(live.record) && !this.ownerLate();
      if (!live.foreign && live.kind === this) live.kind = this.inner;
    }
    await this.inner.refresh();
  }

  /**
   * Whether the owner, alive and open, has left the end of a job that is gone unwritten for
   * longer than `lostAfterMs`: the session is then adopted here and ends `lost` (or with the
   * end its files show), so no host waits for it for ever.
   */
  private ownerLate(): boolean {
    const r = this.live.record;
    const gone = r.status === 'running' && r.identity !== null && verdict(r.identity) === 'gone';
    if (!gone) {
      this.goneSince = undefined;
      return false;
    }
    this.goneSince ??= Date.now();
    return Date.now() - this.goneSince >= (this.host.options.lostAfterMs ?? LOST_AFTER_MS);
  }

  /** Its owner records the end. */
  recordEnd(): void {}
}
