/**
 * What a caller reads of sessions: a poll, a wait for the end, a page of the log, a PTY's
 * screen and the list. Every read brings the session up to date first and redacts what
 * leaves the registry.
 */
import { ProcwardError } from '../errors.js';
import { checkOptions } from '../options.js';
import { logResult } from '../output/paging.js';
import { redactScreenRows } from '../output/screenview.js';
import { preview, redactedView } from '../output/views.js';
import { evictedLogResult } from '../persist/diskbudget.js';
import type { Live } from '../session/kind.js';
import { stoppedFlags, summary, untilEnd } from '../session/live.js';
import type { ListFilter, LogResult, PollOptions, PollResult, ReadLogOptions, SessionSummary, TerminalScreen, WaitOptions, WaitResult } from '../types.js';
import { consume, settleHeld } from './notify.js';
import { refreshMany } from '../session/refreshmany.js';
import { actOn, assertOpen, clean, get, type RegistryState, readOnlyFlag, refresh, SETTLED } from './state.js';

const DETACHED_TICK_MS = 25;

/**
 * The summary as of now, then the output preview (reading a log may take a while). A read
 * that found the end (a sandbox session this host does not follow reads the far side up to
 * the end of its log, and its exit with it) speaks for the summary: it is taken again.
 */
async function pollResult(st: RegistryState, live: Live): Promise<PollResult> {
  const sum = () => ({ ...summary(live, false, stoppedFlags([live])[0]), ...readOnlyFlag(st, live), ...st.logs.flag(live), ...st.leftovers.flag(live) });
  let now = sum();
  const out = await live.kind.output();
  if (now.status === 'running' && live.record.status !== 'running' && live.record.pidScope === 'sandbox') now = sum();
  return { ...now, outputPreview: preview(out.text, 2000, (t, k) => clean(st, t, k), out.startsInKeyBlock) };
}

/** `ProcessRegistry.poll`. */
export async function poll(st: RegistryState, id: string, opts: PollOptions): Promise<PollResult> {
  checkOptions('poll', opts);
  const live = get(st, id);
  await refresh(st, live);
  if (opts.acknowledge) consume(st, live);
  st.leftovers.check([live]);
  return pollResult(st, live);
}

/** `ProcessRegistry.wait`: until the end (detached sessions re-checked every 25 ms) or `timeoutMs`. */
export async function wait(st: RegistryState, id: string, opts: WaitOptions): Promise<WaitResult> {
  const { timeoutMs, signal } = checkOptions('wait', opts);
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new ProcwardError('INVALID_ARGUMENT', `timeoutMs must be a positive number, got ${timeoutMs}`);
  }
  signal?.throwIfAborted();
  const live = actOn(st, id);
  await refresh(st, live);
  // An abort while the refresh ran has fired already: untilEnd's listener would never hear it.
  signal?.throwIfAborted();
  if (live.record.status === 'running') {
    const tick = live.kind.waitTick();
    // An end published while this waits is this caller's (see Live.endReaders).
    live.endReaders++;
    let seen = false;
    try {
      const timedOut = await untilEnd(live, {
        ...(timeoutMs !== undefined && { timeoutMs }),
        ...(signal && { signal }),
        ...(tick && { tick }),
        tickMs: DETACHED_TICK_MS,
      });
      const result = await pollResult(st, live);
      // The result shows the end (it may have come as the timeout passed): the caller saw it.
      seen = result.status === 'exited';
      if (seen) consume(st, live);
      return { ...result, timedOut, processRunning: live.record.status === 'running' };
    } finally {
      live.endReaders--;
      settleHeld(st, live, seen);
    }
  }
  consume(st, live);
  return { ...(await pollResult(st, live)), timedOut: false, processRunning: false };
}

/** `ProcessRegistry.readLog`: one page of lines, redacted; an end-reaching page of an ended session consumes its completion. */
export async function readLog(st: RegistryState, id: string, opts: ReadLogOptions): Promise<LogResult> {
  checkOptions('readLog', opts);
  const live = get(st, id);
  await refresh(st, live);
  if (opts.view !== undefined && opts.view !== 'plain' && opts.view !== 'raw') {
    throw new ProcwardError('INVALID_ARGUMENT', `view must be 'plain' or 'raw', got ${JSON.stringify(opts.view)}`);
  }
  const evicted = st.logs.eviction(live);
  if (evicted) return evictedLogResult(live.record.id, live.record.status, evicted);
  let got: Awaited<ReturnType<Live['kind']['readLog']>>;
  try {
    got = await live.kind.readLog(opts, (text, view, inKey) => redactedView(text, view, st.options.redact === false ? null : (t) => clean(st, t, inKey)));
  } catch (err) {
    if (err instanceof RangeError) throw new ProcwardError('INVALID_ARGUMENT', err.message);
    throw err;
  }
  const { page } = got;
  if (live.record.status === 'exited' && page.offset + page.lines.length >= page.totalLines) consume(st, live);
  return logResult(live.record.id, live.record.status, got);
}

/** `ProcessRegistry.screen`: a PTY session's terminal as drawn now, its lines redacted. */
export async function screen(st: RegistryState, id: string): Promise<TerminalScreen> {
  const live = get(st, id);
  await refresh(st, live);
  const s = live.kind.screen();
  const rows = { lines: s.lines, wrapped: s.wrapped };
  const { lines, wrapped } = st.options.redact === false ? rows : redactScreenRows(rows, (t) => clean(st, t));
  const { row, col, visible } = s.cursor;
  return { id: live.record.id, status: live.record.status, lines, wrapped, cursor: { row, col, visible }, cols: s.cols, rows: s.rows, alternateScreen: s.alternateScreen, pendingBytes: s.pendingBytes };
}

/** `ProcessRegistry.list`: summaries of the sessions the filter selects, oldest first. */
export async function list(st: RegistryState, filter: ListFilter): Promise<SessionSummary[]> {
  assertOpen(st);
  checkOptions('list', filter);
  const listed: { live: Live; scoped: boolean }[] = [];
  for (const live of st.sessions.values()) {
    const r = live.record;
    const taskMatch = filter.taskId === undefined || r.taskId === filter.taskId || r.ownerTaskId === filter.taskId;
    const keyMatch = filter.sessionKey !== undefined && r.sessionKey === filter.sessionKey;
    if (filter.taskId !== undefined && !taskMatch && !keyMatch) continue;
    if (filter.taskId === undefined && filter.sessionKey !== undefined && !keyMatch) continue;
    listed.push({ live, scoped: filter.taskId !== undefined && !taskMatch });
  }
  // At most 8 at a time: a far side that does not answer holds its own refresh, not the others'.
  await refreshMany(listed, ({ live }) => refresh(st, live), SETTLED);
  assertOpen(st);
  // The running jobs' stop states in one native call.
  const stopped = stoppedFlags(listed.map((l) => l.live));
  const out = listed.map(({ live, scoped }, i) => ({ ...summary(live, scoped, stopped[i]), ...readOnlyFlag(st, live), ...st.logs.flag(live), ...st.leftovers.flag(live) }));
  return out.sort((a, b) => a.startedAt - b.startedAt);
}
