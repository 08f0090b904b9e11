/**
 * A session another live host owns: the entry it wrote in the shared checkpoint. This host
 * shows it, takes its newer state from the checkpoint on every refresh, may kill it and
 * write to a durable job's FIFO (through the kind of job it is), but never writes its
 * record, publishes its completion or prunes it. Once its writer has died the session is
 * adopted: it becomes the kind of job it is, owned here.
 */
import type { KillResult, WriteOptions } from '../types.js';
import type { JobSession, Live, LogOptions, LogPage, OutputText, RedactView, SessionHost, StopProbe } from './kind.js';

export class ForeignSession implements JobSession {
  constructor(
    private readonly live: Live,
    private readonly host: SessionHost,
    /** The kind of job the entry describes, which answers everything but ownership. */
    private readonly inner: JobSession,
  ) {}

  readonly owned = false;

  get onDisk(): boolean {
    return this.inner.onDisk;
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

  output(): Promise<OutputText> {
    return this.inner.output();
  }

  readLog(opts: LogOptions, redactView: RedactView): Promise<LogPage> {
    return this.inner.readLog(opts, redactView);
  }

  waitTick(): (() => void) | undefined {
    return this.inner.waitTick();
  }

  kill(graceMs: number): Promise<KillResult> {
    return this.inner.kill(graceMs);
  }

  write(data: string, opts?: WriteOptions): Promise<{ id: string; bytes: number }> {
    return this.inner.write(data, opts);
  }

  closeStdin(): Promise<{ id: string; closed: true }> {
    return this.inner.closeStdin();
  }

  resize(size: { cols: number; rows: number }): void {
    this.inner.resize(size);
  }

  stopProbe(): StopProbe | null {
    return this.inner.stopProbe();
  }

  /** Its owner records the end. */
  recordEnd(): void {}

  ended(): void {
    this.inner.ended();
  }

  close(): void {
    this.inner.close();
  }

  /** Never pruned here while its owner lives; adopted first otherwise. */
  pruned(): void {
    this.inner.pruned();
  }
}
