/**
 * Group commit: many callers that want "the current state written" share one write. A call
 * made while a write is running is folded into the next write, and `soon` batches writes
 * that may wait a little.
 */
export class GroupCommit {
  private running: Promise<void> | null = null;
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /** `write` persists whatever the state is when it runs. */
  constructor(private readonly write: () => Promise<void>) {}

  /** Resolves once a write that started after this call has finished. */
  now(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.dirty = true;
    this.running ??= (async () => {
      try {
        while (this.dirty) {
          this.dirty = false;
          await this.write();
        }
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  /** Writes within `ms` milliseconds (or with the next `now`); errors go to `onError`. Never keeps the host alive. */
  soon(ms: number, onError: (err: unknown) => void): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.now().catch(onError);
    }, ms);
    this.timer.unref();
  }

  /** No more writes after this. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
