/**
 * Opening a registry: its parts built over one session map, the sessions its state
 * directory lists recovered, and closing it again. The parts call back into the registry
 * through the state (see `state.ts`), never through the public class.
 */
import { native } from '../native.js';
import { checkRegistryOptions } from '../options.js';
import { DiskBudget } from '../persist/diskbudget.js';
import { SessionStore } from '../persist/store.js';
import { SpawnGate } from '../policy/spawnpolicy.js';
import { Watching } from '../policy/watching.js';
import { ConfiguredEnvironments } from '../remote/configured.js';
import type { Live, SessionHost } from '../session/kind.js';
import { sessionFor } from '../session/kinds.js';
import { Leftovers } from '../session/leftovers.js';
import { newLive } from '../session/live.js';
import type { SessionRecord } from '../session/record.js';
import { Deadlines } from '../session/termination.js';
import type { RegistryOptions } from '../types.js';
import { finish } from './finish.js';
import { watch } from './notify.js';
import { escapeControls } from '../output/controls.js';
import { clean, type RegistryState, rebalance, refresh, tailChars } from './state.js';

/**
 * Builds a registry's state: checks the options (`INVALID_ARGUMENT`), then the watch
 * patterns, environments, spawn policy, checkpoint store, log budget and deadlines, and
 * the host its sessions' kinds call. `diagnostics` is the registry's public array.
 */
export function buildState(options: RegistryOptions, diagnostics: string[], emit: RegistryState['emit']): RegistryState {
  const sessions = new Map<string, Live>();
  const leftovers = new Leftovers(sessions);
  checkRegistryOptions(options);
  // A watch event's line is model-facing: its controls shown as `\xNN` after redaction.
  const watching = new Watching(options, diagnostics, (text) => escapeControls(clean(st, text)));
  const environments = new ConfiguredEnvironments(options.environments);
  const spawnGate = new SpawnGate(options.spawnPolicy, () => runningRecords(sessions));
  const store = new SessionStore(options, sessions, diagnostics);
  const logs = new DiskBudget(store.dir, options, sessions, diagnostics);
  const deadlines = new Deadlines({
    session: (id) => sessions.get(id),
    refresh: (live) => refresh(st, live),
    graceMs: () => options.graceMs ?? 2000,
    killed: (live) => {
      leftovers.check([live]);
      store.persist().catch(store.reportWriteError);
    },
    diagnostics,
  });
  const host: SessionHost = {
    options,
    stateDir: store.dir,
    diagnostics,
    environments,
    tailChars: tailChars(options),
    register: (live) => {
      sessions.set(live.record.id, live);
      rebalance(st, live);
      logs.started(live);
    },
    discard: (live) => store.discard(live.record.id),
    refresh: (live) => refresh(st, live),
    finish: (live, outcome) => finish(st, live, outcome),
    watch: (live, text) => watch(st, live, text),
    watcherFor: (record) => watching.watcherFor(record),
    clean: (text, startsInKeyBlock) => clean(st, text, startsInKeyBlock),
    persist: () => store.persist(),
    persistSoon: () => store.persistSoon(),
    recordsOnDisk: () => store.recordsOnDisk(),
    isForeign: (record) => store.isForeign(record),
  };
  const st: RegistryState = { options, sessions, store, logs, environments, watching, leftovers, spawnGate, deadlines, host, diagnostics, emit, closed: false };
  return st;
}

/** The records of running sessions, for the spawn policy's caps. */
function* runningRecords(sessions: Map<string, Live>): Iterable<SessionRecord> {
  for (const live of sessions.values()) if (live.record.status === 'running') yield live.record;
}

/** Recovers the sessions the state directory lists: each one detached, of the kind its record says. */
export async function recover(st: RegistryState): Promise<void> {
  const { records, readOnly, changed } = await st.store.recover();
  // Entries this version does not understand are listed, never refreshed, acted on or written.
  for (const record of readOnly) st.sessions.set(record.id, recovered(st, record, true));
  for (const record of records) {
    const live = recovered(st, record, st.store.isForeign(record));
    st.sessions.set(record.id, live);
    await refresh(st, live);
    // A deadline holds across hosts: one already past fires at once (a foreign session's
    // is its owner's to enforce until it is adopted here; see Deadlines).
    st.deadlines.arm(live);
  }
  st.leftovers.check(st.sessions.values());
  // A state directory that cannot be written (a full disk) must not keep a host from
  // listing and killing what is there: the failed write is a diagnostic.
  if (changed) await st.store.persist().catch(st.store.reportWriteError);
  st.logs.opened();
}

function recovered(st: RegistryState, record: SessionRecord, foreign: boolean): Live {
  return newLive(record, tailChars(st.options), true, foreign, (live) => sessionFor(live, st.host));
}

/** `ProcessRegistry.close`: stops the timers and sessions' followers, then flushes the logs' budget and the checkpoint. */
export async function close(st: RegistryState): Promise<void> {
  if (st.closed) return;
  st.leftovers.stop();
  st.deadlines.stop();
  for (const live of st.sessions.values()) live.kind.close();
  // Empty cgroups of ended jobs go now; one that still holds a process stays.
  if (st.options.containment !== false) native.sweepCgroups();
  await st.logs.close();
  await st.store.close();
  st.closed = true;
}
