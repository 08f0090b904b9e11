/**
 * The execution environments a registry knows: the ones its options name, and the unnamed
 * ones sessions were started with on this host. A sandbox session records only a name: a
 * host re-attaches through its own configuration, never through connection details read
 * back from the state directory.
 */
import { ProcwardError } from '../errors.js';
import type { SessionRecord } from '../session/record.js';
import type { ExecutionEnvironment } from './environments.js';

/** Whether `e` has the shape of an {@link ExecutionEnvironment} (a far side to run scripts on). */
export function isEnvironment(e: unknown): e is ExecutionEnvironment {
  return e !== null && typeof e === 'object' && typeof (e as ExecutionEnvironment).exec === 'function' && typeof (e as ExecutionEnvironment).tmpDir === 'string';
}

/**
 * The error for a name this host has not configured: it names the ones it has (names only:
 * they come from the host's configuration and carry no connection details), or says there
 * are none. `details.configured`: the names.
 */
function unknownEnvironment(name: string, names: string[]): ProcwardError {
  const known = names.length > 0 ? `the configured environments are: ${names.join(', ')}` : 'this host has configured no environments (its environments file names them)';
  return new ProcwardError('INVALID_ARGUMENT', `environment ${JSON.stringify(name)} is not configured; ${known}`, { environment: name, configured: names });
}

export class ConfiguredEnvironments {
  /** The environments of the sandbox sessions this host started (an environment passed as an object is known only here). */
  private readonly started = new Map<string, ExecutionEnvironment>();

  /**
   * `configured`: `RegistryOptions.environments`. Errors: `INVALID_ARGUMENT` unless it maps
   * names to environments.
   */
  constructor(private readonly configured: Record<string, ExecutionEnvironment> | undefined) {
    const envs = configured;
    if (envs !== undefined && (envs === null || typeof envs !== 'object' || Array.isArray(envs) || !Object.values(envs).every(isEnvironment))) {
      throw new ProcwardError('INVALID_ARGUMENT', 'environments must map names to ExecutionEnvironment objects');
    }
  }

  /**
   * `spawn`'s `environment`: a name configured in `options.environments`, or an environment
   * object (recorded under its configured name when it is one of them; otherwise it is
   * known to this host only). Errors: `INVALID_ARGUMENT` for an unknown name or a value
   * that is neither.
   */
  forSpawn(e: unknown): { env: ExecutionEnvironment; name?: string } {
    const configured = Object.entries(this.configured ?? {});
    if (typeof e === 'string') {
      const env = Object.hasOwn(this.configured ?? {}, e) ? this.configured?.[e] : undefined;
      if (!env) throw unknownEnvironment(e, this.names());
      return { env, name: e };
    }
    if (!isEnvironment(e)) {
      throw new ProcwardError('INVALID_ARGUMENT', 'environment must be the name of a configured environment or an ExecutionEnvironment');
    }
    const name = configured.find(([, env]) => env === e)?.[0];
    return { env: e, ...(name !== undefined && { name }) };
  }

  /** The names of the configured environments, sorted (what a caller may pick; nothing else about them). */
  names(): string[] {
    return Object.keys(this.configured ?? {}).sort();
  }

  /** Remembers the environment a session started here runs in. */
  remember(sessionId: string, env: ExecutionEnvironment): void {
    this.started.set(sessionId, env);
  }

  /** Forgets a session's environment (it was pruned). */
  forget(sessionId: string): void {
    this.started.delete(sessionId);
  }

  /**
   * The environment of a sandbox session: the one it was started with on this host, or the
   * one its recorded name has in this host's configuration; `null` when neither exists.
   */
  forRecord(r: SessionRecord): ExecutionEnvironment | null {
    const mine = this.started.get(r.id);
    if (mine) return mine;
    const named = r.environment !== undefined && Object.hasOwn(this.configured ?? {}, r.environment) ? this.configured?.[r.environment] : undefined;
    return named ?? null;
  }
}
