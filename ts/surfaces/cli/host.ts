/**
 * The registry a CLI invocation opens: a fresh host that recovers from the state directory.
 * The registry module (and with it the native addon) is loaded only by the commands that
 * need it, so `procward --version` and `--help` start about as fast as Node itself.
 */
import type { ProcessRegistry, RegistryOptions } from '../../registry.js';
import { closeEnvironments, hostEnvironments } from './environments.js';
import type { Common } from './output.js';

/** Thrown into a command interrupted by Ctrl-C (SIGINT) or SIGTERM: it exits 130 (143), its jobs keep running. */
export class Interrupted extends Error {
  constructor(readonly signal: 'SIGINT' | 'SIGTERM') {
    super(`interrupted by ${signal}`);
  }
}

const controller = new AbortController();
let interruptedBy: Interrupted | null = null;

/** Whether Ctrl-C (or SIGTERM) asked this invocation to stop. */
export function interrupted(): Interrupted | null {
  return interruptedBy;
}

/** The first Ctrl-C stops the command cleanly; the handler is gone after it, so a second one ends the process at once. */
function onSignal(signal: 'SIGINT' | 'SIGTERM'): void {
  interruptedBy = new Interrupted(signal);
  controller.abort(interruptedBy);
}

/**
 * Opens the registry of `--state-dir` (or `$PROCWARD_STATE_DIR`, or the platform's state
 * directory) with the host's environments (`extra.environments`, else the environments
 * file; see `environments.ts`), prints its diagnostics on stderr, runs `fn` with an abort
 * signal that Ctrl-C fires, and closes the registry (writing the checkpoint) and the
 * environments whatever `fn` did.
 */
export async function withRegistry<T>(opts: Common, fn: (r: ProcessRegistry, signal: AbortSignal) => Promise<T>, extra: RegistryOptions = {}): Promise<T> {
  const [{ ProcessRegistry }, { defaultStateDir }] = await Promise.all([import('../../registry.js'), import('../../persist/statedir.js')]);
  const environments = extra.environments ?? (await hostEnvironments(false));
  const stateDir = opts.stateDir ?? defaultStateDir();
  try {
    return await withOpen(await ProcessRegistry.open({ ...extra, ...(environments && { environments }), stateDir }), fn);
  } catch (err) {
    throw searchedIn(err, stateDir, opts.stateDir !== undefined);
  } finally {
    await closeEnvironments(environments);
  }
}

/**
 * An unknown session's error naming the state directory searched (`details.stateDir`): the
 * usual cause is a `--state-dir` or `$PROCWARD_STATE_DIR` other than the one the session
 * was started with. Other errors as they are.
 */
function searchedIn(err: unknown, stateDir: string, given: boolean): unknown {
  const e = err as { code?: unknown; message?: unknown; details?: unknown };
  if (e?.code !== 'UNKNOWN_SESSION' || typeof e.message !== 'string') return err;
  const from = given ? '--state-dir' : process.env.PROCWARD_STATE_DIR ? '$PROCWARD_STATE_DIR' : 'the default; --state-dir or $PROCWARD_STATE_DIR choose another';
  const details = { ...(e.details && typeof e.details === 'object' ? e.details : {}), stateDir };
  return Object.assign(new Error(`${e.message} in the state directory ${stateDir} (${from}); a session started with another state directory is only found there`), { code: e.code, details });
}

async function withOpen<T>(registry: ProcessRegistry, fn: (r: ProcessRegistry, signal: AbortSignal) => Promise<T>): Promise<T> {
  for (const d of registry.diagnostics) process.stderr.write(`procward: ${d}\n`);
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    return await fn(registry, controller.signal);
  } finally {
    // The command's own result stands; a checkpoint that could not be written is a warning.
    await registry.close().catch((err: unknown) => process.stderr.write(`procward: warning: the checkpoint was not written: ${(err as Error).message}\n`));
  }
}
