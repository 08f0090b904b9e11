/**
 * The one place that picks a kind of job: for a recorded session (`sessionFor`), and for a
 * new one (`startSession`). Everything else asks the {@link JobSession} it got.
 */
import { DurableSession } from './durable.js';
import { ForeignSession } from './foreign.js';
import type { JobSession, Live, SessionHost, StartSpec } from './kind.js';
import { LocalSession } from './local.js';
import { SandboxSession } from './sandbox.js';

/** The kind of job a record describes; wrapped as foreign while another live host owns it. */
export function sessionFor(live: Live, host: SessionHost): JobSession {
  const r = live.record;
  const inner = r.pidScope === 'sandbox' ? new SandboxSession(live, host) : r.durable ? new DurableSession(live, host) : new LocalSession(live, host);
  return live.foreign ? new ForeignSession(live, host, inner) : inner;
}

/** A new session's kind of job, not started yet. */
export interface StartableSession extends JobSession {
  /** Starts the job and registers the session; resolves once it is recorded. Errors: those of `ProcessRegistry.spawn`. */
  start(spec: StartSpec): Promise<void>;
}

/** The kind of job a new session is: on the far side of an environment, durable, or a pipe or PTY job of this host. */
export function sessionToStart(live: Live, host: SessionHost, spec: StartSpec): StartableSession {
  return spec.sandbox ? new SandboxSession(live, host) : spec.durable ? new DurableSession(live, host) : new LocalSession(live, host);
}
