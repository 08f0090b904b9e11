/**
 * The host's spawn policy (issue 17): what a registry lets a spawn do before anything starts.
 *
 * - **Model-supplied environment**: a spawn whose `envSource` is `'model'` (the LLM tool and
 *   the MCP server set it) may not set loader and runtime variables (`LD_PRELOAD`, `DYLD_*`,
 *   `NODE_OPTIONS`, ... : {@link DEFAULT_DENIED_ENV}), which run code of the model's choosing
 *   inside every program the job starts, nor pass host variables through `allowEnv` (which
 *   would hand the model the secrets the environment policy withholds). This applies with or
 *   without a `spawnPolicy`; `spawnPolicy.deniedEnv` replaces the list (`[]` allows all).
 *   Environment the host or a person passes (`envSource` `'caller'`, the default) is not
 *   checked: the host decides what it runs.
 * - **Working directory roots** (`workdirRoots`): the job's working directory, symbolic
 *   links resolved (`realpath`), must be one of the roots (each resolved the same way) or
 *   below one. `/root/../etc` and a link inside a root that points out are both refused.
 *   Sandbox sessions (another environment's paths) are not checked.
 * - **Caps on running jobs** per task (`maxRunningPerTask`: sessions whose `taskId` or
 *   `ownerTaskId` is the spawn's owner task) and per session key (`maxRunningPerSessionKey`),
 *   counting the registry's running sessions (durable ones it recovered included) and the
 *   spawns of this host still being started.
 * - **Approval hook** (`approve`): called last, with the request, for every spawn that
 *   passed the rules above; `{ allow: false, reason }` refuses it. A hook that throws or
 *   answers anything else refuses too (fail closed).
 *
 * Every refusal is a `SPAWN_REFUSED` {@link ProcwardError} whose `details` name the `rule`
 * (`denied_env`, `allow_env`, `workdir_root`, `max_running_per_task`,
 * `max_running_per_session_key`, `approve`) and the `reason`; nothing was started or written.
 */
import { realpathSync } from 'node:fs';
import { resolve as resolvePath, sep } from 'node:path';
import { ProcwardError } from '../errors.js';

/** What the approval hook sees of a spawn. Values as the caller passed them (not redacted). */
export interface SpawnRequest {
  command: string;
  /** The working directory, resolved to an absolute path (a sandbox's: as given, or `~`). */
  cwd: string;
  /** The variables the spawn sets explicitly (names and values), `{}` for none. */
  env: Record<string, string>;
  /** Host variables the spawn asks to pass although they look like secrets. */
  allowEnv: string[];
  /** Who wrote `env`: `'model'` (an LLM tool call) or `'caller'` (the host or a person). */
  envSource: 'caller' | 'model';
  taskId?: string;
  ownerTaskId?: string;
  sessionKey?: string;
  durable: boolean;
  pty: boolean;
  stdin: boolean;
  /** The environment's name for a sandbox session. */
  environment?: string;
}

/** The approval hook's answer. */
export type SpawnDecision = { allow: true } | { allow: false; reason: string };

/** Options of a registry's spawn policy (`RegistryOptions.spawnPolicy`). Every rule is off unless set. */
export interface SpawnPolicy {
  /** Called for every spawn that passed the other rules; may be async. Fails closed. */
  approve?: (request: SpawnRequest) => SpawnDecision | Promise<SpawnDecision>;
  /** Most running jobs per owner task (`ownerTaskId ?? taskId`); spawns without a task are not capped. */
  maxRunningPerTask?: number;
  /** Most running jobs per session key; spawns without a key are not capped. */
  maxRunningPerSessionKey?: number;
  /** Directories the working directory must be in (after `realpath`); each must exist. */
  workdirRoots?: string[];
  /**
   * Variables a model-supplied `env` may not set: names, or prefixes ending in `*`
   * (`DYLD_*`), compared case-insensitively. Default {@link DEFAULT_DENIED_ENV}.
   */
  deniedEnv?: string[];
}

/**
 * Loader and runtime variables that make programs load or run code named in them: the
 * dynamic loaders' (glibc, musl, macOS dyld), and the runtimes' preload and option
 * variables (Node, Python, Perl, Ruby, Java, .NET, bash's startup file and exported
 * functions, git's hooks).
 */
export const DEFAULT_DENIED_ENV: readonly string[] = [
  'LD_*',
  'DYLD_*',
  // glibc loads character-set converters (shared objects) from here.
  'GCONV_PATH',
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_REPL_EXTERNAL_MODULE',
  'PYTHONPATH',
  'PYTHONSTARTUP',
  'PYTHONHOME',
  'PERL5LIB',
  'PERL5OPT',
  'RUBYLIB',
  'RUBYOPT',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'DOTNET_STARTUP_HOOKS',
  'CORECLR_PROFILER_PATH',
  'BASH_ENV',
  'ENV',
  'PROMPT_COMMAND',
  'SHELLOPTS',
  'BASHOPTS',
  'IFS',
  'GIT_EXEC_PATH',
  'GIT_CONFIG_GLOBAL',
  'GIT_SSH_COMMAND',
  // bash imports exported functions from these (`BASH_FUNC_echo%%`): they replace any
  // command the job's own `bash -c` runs.
  'BASH_FUNC_*',
  'PROCWARD_*',
];

function refuse(rule: string, reason: string, extra: Record<string, unknown> = {}): never {
  throw new ProcwardError('SPAWN_REFUSED', `spawn refused (${rule}): ${reason}`, { rule, reason, ...extra });
}

/** Throws `INVALID_ARGUMENT` unless `policy` has the shape of {@link SpawnPolicy} (checked when the registry opens). */
export function checkSpawnPolicy(policy: SpawnPolicy | undefined): void {
  if (policy === undefined) return;
  const bad = (msg: string): never => {
    throw new ProcwardError('INVALID_ARGUMENT', `spawnPolicy.${msg}`);
  };
  if (typeof policy !== 'object' || policy === null) throw new ProcwardError('INVALID_ARGUMENT', 'spawnPolicy must be an object');
  if (policy.approve !== undefined && typeof policy.approve !== 'function') bad('approve must be a function');
  for (const key of ['maxRunningPerTask', 'maxRunningPerSessionKey'] as const) {
    const v = policy[key];
    if (v !== undefined && !(Number.isInteger(v) && v >= 1)) bad(`${key} must be a positive integer, got ${String(v)}`);
  }
  for (const key of ['workdirRoots', 'deniedEnv'] as const) {
    const v = policy[key];
    if (v !== undefined && !(Array.isArray(v) && v.every((x) => typeof x === 'string' && x !== ''))) bad(`${key} must be an array of non-empty strings`);
  }
  for (const root of policy.workdirRoots ?? []) {
    try {
      realpathSync(root);
    } catch {
      bad(`workdirRoots: ${JSON.stringify(root)} does not exist`);
    }
  }
}

/** Whether `name` matches an entry of a denylist (a name, or a prefix ending in `*`), case-insensitively. */
export function deniedBy(list: readonly string[], name: string): string | undefined {
  const upper = name.toUpperCase();
  return list.find((entry) => {
    const e = entry.toUpperCase();
    return e.endsWith('*') ? upper.startsWith(e.slice(0, -1)) : upper === e;
  });
}

/**
 * The environment rules (see the module docs): throws `SPAWN_REFUSED` when a model-supplied
 * spawn sets a denied variable (details: `names`, every one it set) or passes `allowEnv`.
 */
export function checkModelEnv(request: Pick<SpawnRequest, 'env' | 'allowEnv' | 'envSource'>, policy: SpawnPolicy | undefined): void {
  if (request.envSource !== 'model') return;
  const list = policy?.deniedEnv ?? DEFAULT_DENIED_ENV;
  const names = Object.keys(request.env).filter((n) => deniedBy(list, n) !== undefined);
  if (names.length > 0) {
    refuse('denied_env', `a model-supplied env may not set ${names.join(', ')} (loader and runtime variables run code in every program of the job)`, { names });
  }
  if (request.allowEnv.length > 0) {
    refuse('allow_env', `a model-supplied spawn may not pass host variables withheld as secrets (${request.allowEnv.join(', ')}); only the host may allow them`, {
      names: request.allowEnv,
    });
  }
}

/** Whether `dir` is `root` or below it (both already real paths). */
function within(root: string, dir: string): boolean {
  return dir === root || dir.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Throws `SPAWN_REFUSED` (rule `workdir_root`) unless `cwd`, with every symbolic link
 * resolved, is one of `roots` (resolved the same way) or below one. A directory that does
 * not exist is refused too (nothing to resolve). Returns the resolved path, which the job
 * must be started in (a link swapped after the check must not move it), or `undefined`
 * without roots.
 */
export function checkWorkdir(cwd: string, roots: readonly string[] | undefined): string | undefined {
  if (roots === undefined) return undefined;
  let real: string;
  try {
    real = realpathSync(resolvePath(cwd));
  } catch {
    refuse('workdir_root', `working directory ${cwd} cannot be resolved`, { cwd });
  }
  const realRoots = roots.flatMap((r) => {
    try {
      return [realpathSync(r)];
    } catch {
      return [];
    }
  });
  if (!realRoots.some((root) => within(root, real))) {
    refuse('workdir_root', `working directory ${cwd} (${real}) is outside the allowed roots ${realRoots.join(', ')}`, { cwd, resolved: real, roots: realRoots });
  }
  return real;
}

/** What the caps count: the owner task and session key of each running session. */
export interface RunningJob {
  taskId?: string;
  ownerTaskId?: string;
  sessionKey?: string;
}

/**
 * Throws `SPAWN_REFUSED` when starting one more job for the request's owner task or session
 * key would go over a cap. `running`: the registry's running sessions and the spawns being
 * started.
 */
export function checkCaps(request: Pick<SpawnRequest, 'taskId' | 'ownerTaskId' | 'sessionKey'>, running: Iterable<RunningJob>, policy: SpawnPolicy | undefined): void {
  const task = request.ownerTaskId ?? request.taskId;
  const perTask = policy?.maxRunningPerTask;
  const perKey = policy?.maxRunningPerSessionKey;
  if ((perTask === undefined || task === undefined) && (perKey === undefined || request.sessionKey === undefined)) return;
  let ofTask = 0;
  let ofKey = 0;
  for (const j of running) {
    if (task !== undefined && (j.taskId === task || j.ownerTaskId === task)) ofTask++;
    if (request.sessionKey !== undefined && j.sessionKey === request.sessionKey) ofKey++;
  }
  if (perTask !== undefined && task !== undefined && ofTask >= perTask) {
    refuse('max_running_per_task', `task ${JSON.stringify(task)} has ${ofTask} running jobs; the cap is ${perTask}`, { running: ofTask, cap: perTask });
  }
  if (perKey !== undefined && request.sessionKey !== undefined && ofKey >= perKey) {
    refuse('max_running_per_session_key', `session key ${JSON.stringify(request.sessionKey)} has ${ofKey} running jobs; the cap is ${perKey}`, {
      running: ofKey,
      cap: perKey,
    });
  }
}

/** Asks the approval hook; throws `SPAWN_REFUSED` (rule `approve`) on a refusal, a throw, or an answer of another shape. */
export async function askApproval(request: SpawnRequest, policy: SpawnPolicy | undefined): Promise<void> {
  if (!policy?.approve) return;
  let decision: unknown;
  try {
    decision = await policy.approve(request);
  } catch (err) {
    refuse('approve', `the approval hook failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const d = decision as Partial<{ allow: unknown; reason: unknown }> | null | undefined;
  if (d?.allow === true) return;
  if (d?.allow === false) refuse('approve', typeof d.reason === 'string' && d.reason !== '' ? d.reason : 'the host refused it');
  refuse('approve', 'the approval hook answered neither { allow: true } nor { allow: false, reason }');
}

/** An admitted spawn: `release` once the job runs or failed to start; `cwd`, with workdir roots, the resolved working directory to start it in. */
export interface Admitted {
  release: () => void;
  cwd?: string;
}

/**
 * A registry's spawn policy at run time: the rules in order (environment, working directory,
 * caps, approval) and the spawns admitted but not yet running, which the caps count too
 * (ten spawns of one task in one turn must not all pass a cap of one).
 */
export class SpawnGate {
  private readonly starting = new Set<RunningJob>();

  /** `running`: the registry's running sessions, read at each check. */
  constructor(
    private readonly policy: SpawnPolicy | undefined,
    private readonly running: () => Iterable<RunningJob>,
  ) {}

  /**
   * Admits a spawn or throws `SPAWN_REFUSED` (see the module docs). Resolves with the
   * function to call once the job runs or failed to start (it then counts as running, or
   * not at all). `sandbox`: the job runs in another environment (its cwd is not checked).
   */
  async admit(request: SpawnRequest, sandbox: boolean): Promise<Admitted> {
    checkModelEnv(request, this.policy);
    if (!sandbox) checkWorkdir(request.cwd, this.policy?.workdirRoots);
    const job: RunningJob = {
      ...(request.taskId !== undefined && { taskId: request.taskId }),
      ...(request.ownerTaskId !== undefined && { ownerTaskId: request.ownerTaskId }),
      ...(request.sessionKey !== undefined && { sessionKey: request.sessionKey }),
    };
    // Reserved before the (async) approval, so spawns waiting for it count against the caps.
    checkCaps(request, this.counted(), this.policy);
    this.starting.add(job);
    try {
      await askApproval(request, this.policy);
      // Checked again after the (async) approval, and the job starts in the resolved path.
      const cwd = sandbox ? undefined : checkWorkdir(request.cwd, this.policy?.workdirRoots);
      return { release: () => this.starting.delete(job), ...(cwd !== undefined && { cwd }) };
    } catch (err) {
      this.starting.delete(job);
      throw err;
    }
  }

  private *counted(): Iterable<RunningJob> {
    yield* this.running();
    yield* this.starting;
  }
}
