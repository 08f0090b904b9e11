/**
 * Starting a session: the options checked, the record made, the host's spawn policy asked,
 * then the kind that runs the job started and its deadline armed.
 */
import { checkSpawn } from '../options.js';
import { withheldVariables } from '../policy/environment.js';
import type { SpawnRequest } from '../policy/spawnpolicy.js';
import { type StartableSession, sessionToStart } from '../session/kinds.js';
import { newLive, summary } from '../session/live.js';
import { newSession } from '../session/newsession.js';
import type { SessionRecord } from '../session/record.js';
import type { SpawnOptions, SpawnResult, StartOptions } from '../types.js';
import { assertOpen, type RegistryState, tailChars } from './state.js';

/** What the spawn policy's hook sees of a spawn (see `policy/spawnpolicy.ts`). */
function spawnRequest(command: string, o: StartOptions, record: SessionRecord): SpawnRequest {
  return {
    command,
    cwd: record.cwd,
    env: { ...o.env },
    allowEnv: [...(o.allowEnv ?? [])],
    envSource: o.envSource ?? 'caller',
    ...(o.taskId !== undefined && { taskId: o.taskId }),
    ...(o.ownerTaskId !== undefined && { ownerTaskId: o.ownerTaskId }),
    ...(o.sessionKey !== undefined && { sessionKey: o.sessionKey }),
    durable: record.durable,
    pty: o.pty !== undefined,
    stdin: o.stdin === true,
    ...(typeof o.environment === 'string' && { environment: o.environment }),
  };
}

/** `ProcessRegistry.spawn`: starts `command` in a new session (see its errors there). */
export async function spawn(st: RegistryState, command: string, opts: SpawnOptions): Promise<SpawnResult> {
  assertOpen(st);
  const checked = checkSpawn(opts);
  const { spec, record } = newSession(command, checked, {
    options: st.options,
    hasStateDir: st.store.dir !== null,
    newerCheckpoint: st.store.newerPath,
    environments: st.environments,
    writer: st.store.writer,
  });
  const admitted = await st.spawnGate.admit(spawnRequest(command, checked, record), checked.environment !== undefined);
  const runSpec = admitted.cwd !== undefined ? { ...spec, cwd: admitted.cwd } : spec;
  try {
    // The approval hook may have taken a while: the registry may have closed meanwhile.
    assertOpen(st);
    const live = newLive(record, tailChars(st.options), false, false, (l) => sessionToStart(l, st.host, runSpec));
    live.watcher = st.watching.watcherFor(live.record);
    await (live.kind as StartableSession).start(runSpec);
    st.deadlines.arm(live);
    const withheldEnv = checked.environment === undefined ? withheldVariables(process.env, checked.env, checked.allowEnv) : [];
    return { ...summary(live), withheldEnv };
  } finally {
    admitted.release();
  }
}
