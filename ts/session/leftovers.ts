/**
 * What ended jobs left running (a server started with `&` by a script that exited): the
 * registry counts these leftovers for liveness and bulk cleanup (`hasActiveProcesses`,
 * `killAll`, `killStartedSince`) and shows their number on the ended session (`leftovers`).
 *
 * A process is a job's leftover only when the core proves it (see `jobLeftovers`): it is in
 * the job's own cgroup, or carries the session's mark (in the job's own session and process
 * group; or anywhere, in a deep look); never by its PID, group or session number, name or
 * parent alone.
 *
 * A deep look reads every process's environment (one pass over `/proc` for all the sessions
 * asked about): it is taken for the task- and key-scoped liveness questions and bulk kills
 * (`checkScope`), and for sessions a deep look found leftovers of, so a daemon the job left
 * outside its group and session (`(setsid server &)`) is counted and killed there; the look
 * at a session's end, `poll` and `list` stay shallow.
 *
 * An ended session is looked at when it ends (with the others ending in the same turn), when
 * it is recovered, on `poll`, after a `kill`, and before a task-scoped call; those with
 * leftovers are looked at again every 2 s (one native call for all of them, only while there
 * are any) until their leftovers are gone or the session is pruned. Nothing here signals
 * anything: a kill of the session does (see `host.ts`).
 */
import { native } from '../native.js';
import type { Live } from './kind.js';

/** How often the sessions known to have leftovers are looked at again, in milliseconds. */
const RECHECK_MS = 2000;

export class Leftovers {
  /** Session id → live leftovers when last looked at (only sessions with some). */
  private readonly counts = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  /** Sessions that ended since the last look, looked at together (see {@link soon}). */
  private readonly ended = new Set<Live>();
  /** The registry closed: nothing is looked at any more. */
  private stopped = false;
  /** Sessions a deep look found leftovers of: looked at deeply again until they have none. */
  private readonly deep = new Set<string>();

  constructor(
    /** The registry's index: a session no longer in it (pruned) is no longer tracked. */
    private readonly sessions: Map<string, Live>,
  ) {}

  /**
   * Looks again at the ended sessions of a task (by `taskId` or `ownerTaskId`) or of a
   * session key, before a scoped call counts them.
   */
  checkScope(taskId?: unknown, sessionKey?: unknown): void {
    const mine = (l: Live) =>
      (taskId !== undefined && (l.record.taskId === taskId || l.record.ownerTaskId === taskId)) || (sessionKey !== undefined && l.record.sessionKey === sessionKey);
    this.check(
      [...this.sessions.values()].filter((l) => l.record.status === 'exited' && mine(l)),
      true,
    );
  }

  /**
   * Looks at the ended sessions among `lives` now, in one native call, and keeps the count
   * of each: deeply (see the module docs) when `deep` is set or one of them was found so
   * before. Sessions that are running, or whose kind names no process of this machine, are
   * skipped. Never throws: a record the binding cannot take counts as none.
   */
  check(lives: Iterable<Live>, deep = false): void {
    if (this.stopped) return;
    const asked: Live[] = [];
    const queries = [];
    for (const live of lives) {
      this.ended.delete(live);
      const query = live.record.status === 'exited' ? live.kind.leftoverQuery() : null;
      if (query === null) continue;
      asked.push(live);
      queries.push(query);
    }
    if (queries.length === 0) return;
    const deeply = deep || asked.some((l) => this.deep.has(l.record.id));
    let found: unknown[][];
    try {
      found = native.jobLeftovers(queries, deeply);
    } catch {
      found = queries.map(() => []);
    }
    asked.forEach((live, i) => {
      const n = found[i]?.length ?? 0;
      const id = live.record.id;
      if (n > 0) this.counts.set(id, n);
      else this.counts.delete(id);
      if (deeply && n > 0) this.deep.add(id);
      else if (n === 0) this.deep.delete(id);
    });
    this.schedule();
  }

  /**
   * Looks at a session that just ended, together with the others that end in this turn of
   * the event loop (a recovery or a bulk kill ends many): one native call for all of them,
   * in the next turn, or sooner when a count is asked for.
   */
  soon(live: Live): void {
    if (this.stopped) return;
    if (this.ended.size === 0) setImmediate(() => this.flush());
    this.ended.add(live);
  }

  /** Looks at the sessions {@link soon} queued, now. */
  flush(): void {
    if (this.ended.size > 0) this.check([...this.ended]);
  }

  /** The session's live leftovers when last looked at (0: none known). */
  count(live: Live): number {
    this.flush();
    return this.counts.get(live.record.id) ?? 0;
  }

  /** `{ leftovers }` for an ended session with some, else nothing (for a summary). */
  flag(live: Live): { leftovers?: number } {
    const n = live.record.status === 'exited' ? this.count(live) : 0;
    return n > 0 ? { leftovers: n } : {};
  }

  /** Stops looking (the registry closes). */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    this.counts.clear();
    this.deep.clear();
    this.ended.clear();
  }

  /** The periodic look runs while some session has leftovers, and never keeps the host alive. */
  private schedule(): void {
    if (this.counts.size > 0 && this.timer === undefined) {
      this.timer = setInterval(() => this.recheck(), RECHECK_MS);
      this.timer.unref();
    } else if (this.counts.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private recheck(): void {
    const tracked: Live[] = [];
    for (const id of this.counts.keys()) {
      const live = this.sessions.get(id);
      if (live) tracked.push(live);
      else {
        this.counts.delete(id);
        this.deep.delete(id);
      }
    }
    this.check(tracked);
    this.schedule();
  }
}
