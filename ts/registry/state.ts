/**
 * The registry's internal state, and the small questions every part of the registry asks of
 * it: is it open, which session does an id name, may this host act on it, bring it up to
 * date, redact text leaving it. `ProcessRegistry` holds one `RegistryState`; the modules
 * beside this one take it as their first argument.
 */
import { ProcwardError } from '../errors.js';
import { rebalance as rebalanceOutput } from '../output/budget.js';
import { DEFAULT_TAIL_CHARS, DEFAULT_TOTAL_OUTPUT_CHARS } from '../output/tail.js';
import type { DiskBudget } from '../persist/diskbudget.js';
import type { SessionStore } from '../persist/store.js';
import type { CompletionEvent, WatchEvent } from '../policy/notifications.js';
import { redact } from '../policy/redact.js';
import type { SpawnGate } from '../policy/spawnpolicy.js';
import type { Watching } from '../policy/watching.js';
import type { ConfiguredEnvironments } from '../remote/configured.js';
import { resolveSessionId } from '../session/ids.js';
import type { Live, SessionHost } from '../session/kind.js';
import type { Leftovers } from '../session/leftovers.js';
import type { Deadlines } from '../session/termination.js';
import type { RegistryOptions } from '../types.js';

/** The registry's own `emit`, for its two events (`RegistryEvents` in `registry.ts`). */
export interface RegistryEmit {
  (event: 'completion', e: CompletionEvent): boolean;
  (event: 'watch', e: WatchEvent): boolean;
}

/** What a registry holds besides its public surface (built by `build.ts`). */
export interface RegistryState {
  readonly options: RegistryOptions;
  readonly sessions: Map<string, Live>;
  readonly store: SessionStore;
  /** The disk budget of the state directory's durable logs (`maxTotalLogBytes`). */
  readonly logs: DiskBudget;
  readonly environments: ConfiguredEnvironments;
  readonly watching: Watching;
  /** What ended sessions left running (see `session/leftovers.ts`). */
  readonly leftovers: Leftovers;
  /** The host's spawn policy (`spawnPolicy`, see `policy/spawnpolicy.ts`). */
  readonly spawnGate: SpawnGate;
  /** Kill-after deadlines this host enforces (`SpawnOptions.timeoutMs`; a durable job's only once its supervisor did not). */
  readonly deadlines: Deadlines;
  /** What the sessions' kinds may ask of this registry. */
  readonly host: SessionHost;
  /** Problems found while recovering (corrupt files, skipped entries): the registry's public `diagnostics`. */
  readonly diagnostics: string[];
  /** The registry's own `emit`: `completion` and `watch` events. */
  readonly emit: RegistryEmit;
  closed: boolean;
}

/** What refresh returns when there is nothing to do. */
export const SETTLED: Promise<void> = Promise.resolve();

/** Characters of output kept in memory per session (`maxOutputChars`). */
export function tailChars(options: RegistryOptions): number {
  return options.maxOutputChars ?? DEFAULT_TAIL_CHARS;
}

/** Errors: `REGISTRY_CLOSED` once the registry is closed. */
export function assertOpen(st: RegistryState): void {
  if (st.closed) throw new ProcwardError('REGISTRY_CLOSED', 'the registry is closed');
}

/**
 * The session an id (or a unique prefix of one) names. Errors: `REGISTRY_CLOSED`,
 * `INVALID_ARGUMENT` for an id that is not a string, those of `resolveSessionId`.
 */
export function get(st: RegistryState, id: string): Live {
  assertOpen(st);
  if (typeof id === 'number') id = String(id);
  if (typeof id !== 'string') throw new ProcwardError('INVALID_ARGUMENT', `session id must be a string, got ${id === null ? 'null' : typeof id}`);
  // A whole id is found without a scan of every session (a prefix of 12 hex is the id itself).
  return (st.sessions.get(id) ?? st.sessions.get(resolveSessionId(st.sessions.keys(), id))) as Live;
}

/** A session this host may act on (kill, input, wait). Errors: those of `get`, and `SESSION_READ_ONLY`. */
export function actOn(st: RegistryState, id: string): Live {
  const live = get(st, id);
  if (st.store.readOnly.has(live.record.id)) {
    throw new ProcwardError('SESSION_READ_ONLY', `${live.record.id} was written by a newer procward or does not validate here: it is listed read-only and nothing is done to it`);
  }
  return live;
}

/** `{ readOnly: true }` for an entry this version only lists (see `SessionStore.readOnly`). */
export function readOnlyFlag(st: RegistryState, live: Live): { readOnly?: true } {
  return st.store.readOnly.has(live.record.id) ? { readOnly: true } : {};
}

/**
 * Brings a session up to date through its kind; read-only entries are never touched, and
 * an ended session this host owns has nothing to bring (its kind's refresh does nothing):
 * both get {@link SETTLED}, which list() does not await (10 000 awaits were most of a list).
 */
export function refresh(st: RegistryState, live: Live): Promise<void> {
  // A closed registry follows nothing: no poller is attached after close().
  if (st.closed || st.store.readOnly.has(live.record.id) || (live.record.status === 'exited' && !live.foreign)) return SETTLED;
  return live.kind.refresh();
}

/** Keeps the in-memory output of all sessions within `maxTotalOutputChars` (see `output/budget.ts`). */
export function rebalance(st: RegistryState, changed: Live): void {
  rebalanceOutput(st.sessions, st.options.maxTotalOutputChars ?? DEFAULT_TOTAL_OUTPUT_CHARS, tailChars(st.options), changed);
}

/**
 * Redacts text leaving the registry. `startsInKeyBlock`: the text begins inside a
 * private-key block whose BEGIN line came before it (see `redact`).
 */
export function clean(st: RegistryState, text: string, startsInKeyBlock = false): string {
  return st.options.redact === false ? text : redact(text, { startsInKeyBlock });
}
