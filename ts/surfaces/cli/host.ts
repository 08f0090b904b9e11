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
  try {
    return await withOpen(await ProcessRegistry.open({ ...extra, ...(environments && { environments }), stateDir: opts.stateDir ?? defaultStateDir() }), fn);
  } finally {
    await closeEnvironments(environments);
  }
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
