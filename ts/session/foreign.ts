/**
 * A session another live host owns: the entry it wrote in the shared checkpoint. This host
 * shows it, takes its newer state from the checkpoint on every refresh, may kill it and
 * write to a durable job's FIFO (through the kind of job it is), but never writes its
 * record, publishes its completion or prunes it. Once its writer has died the session is
 * adopted: it becomes the kind of job it is, owned here.
 */
import { WrappingSession } from './base.js';

export class ForeignSession extends WrappingSession {
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
      live.foreign = host.isForeign(live.record);
      if (!live.foreign && live.kind === this) live.kind = this.inner;
    }
    await this.inner.refresh();
  }

  /** Its owner records the end. */
  recordEnd(): void {}
}
