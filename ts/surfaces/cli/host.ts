/** The registry a CLI invocation opens: a fresh host that recovers from the state directory. */
import { defaultStateDir } from '../../persist/statedir.js';
import { ProcessRegistry } from '../../registry.js';
import type { Common } from './output.js';

/** Opens the registry of `--state-dir` (or the default), prints its diagnostics on stderr, runs `fn` and closes it. */
export async function withRegistry<T>(opts: Common, fn: (r: ProcessRegistry) => Promise<T>): Promise<T> {
  const registry = await ProcessRegistry.open({ stateDir: opts.stateDir ?? defaultStateDir() });
  for (const d of registry.diagnostics) process.stderr.write(`procward: ${d}\n`);
  try {
    return await fn(registry);
  } finally {
    // The command's own result stands; a checkpoint that could not be written is a warning.
    await registry.close().catch((err: unknown) => process.stderr.write(`procward: warning: the checkpoint was not written: ${(err as Error).message}\n`));
  }
}
