/**
 * The environments a CLI invocation knows: the host's environments file
 * (`$PROCWARD_ENVIRONMENTS`, else `$XDG_CONFIG_HOME/procward/environments.json`, default
 * `~/.config/procward/environments.json`; see `remote/configfile.ts`). `start --in NAME`
 * runs a job in one of them; every other command loads them too, so a fresh invocation
 * follows, reads and kills a session in an environment by the name it recorded.
 */
import { existsSync, lstatSync } from 'node:fs';
import type { Command } from 'commander';
import type { ExecutionEnvironment } from '../../remote/environments.js';
import { common } from './commonoptions.js';
import { table } from './format.js';
import { type Common, note, print } from './output.js';

/**
 * The file's environments, built. `required` (`start --in`): a file that cannot be read or
 * trusted (missing when named, owned by another user, group/world-writable, not of the
 * schema) is the command's error, `INVALID_ARGUMENT` naming the file. Otherwise it is a
 * warning and the command goes on without environments (sessions in them are listed, but
 * not followed or killed by this invocation).
 */
export async function hostEnvironments(required: boolean): Promise<Record<string, ExecutionEnvironment> | undefined> {
  const { loadEnvironments } = await import('../../remote/configfile.js');
  try {
    return loadEnvironments();
  } catch (err) {
    if (required) throw err;
    const hint = environmentsHint(err);
    note(`procward: warning: ${(err as Error).message}; sessions in its environments cannot be reached by this command${hint ? ` (${hint})` : ''}`);
    return undefined;
  }
}

/**
 * `--in NAME` checked against the file before anything starts: an unknown name is
 * `INVALID_ARGUMENT` naming the file and the environments it configures (names only).
 */
export async function environmentNamed(name: string, envs: Record<string, ExecutionEnvironment>): Promise<void> {
  if (Object.hasOwn(envs, name)) return;
  const { environmentsConfigPath } = await import('../../remote/configfile.js');
  const names = Object.keys(envs).sort();
  const path = environmentsConfigPath();
  const known = names.length > 0 ? `is not in ${path}; the configured environments are: ${names.join(', ')}` : `is not configured: ${path} names no environments or does not exist`;
  throw Object.assign(new Error(`environment ${JSON.stringify(name)} ${known}`), {
    code: 'INVALID_ARGUMENT',
    details: { environment: name, configured: names, path },
  });
}

/** Closes what the environments hold open (an SSH control connection); a failure is a warning. */
export async function closeEnvironments(envs: Record<string, ExecutionEnvironment> | undefined): Promise<void> {
  await Promise.all(Object.values(envs ?? {}).map((e) => e.close().catch((err: unknown) => note(`procward: warning: closing an environment: ${(err as Error).message}`))));
}

/** Where `environments --help` shows the file's format; the hints of the file's errors point here. */
const FORMAT_HINT = 'see procward environments --help';

/** The file's format, for `environments --help`: one environment of each kind (the example is a valid file, tested). */
export const ENVIRONMENTS_FILE_HELP = `
The environments file: JSON at $PROCWARD_ENVIRONMENTS, else at
$XDG_CONFIG_HOME/procward/environments.json (default ~/.config/procward/...),
owned by you and writable by no one else (chmod 600). Names: letters, digits, _ . -
  {"environments": {
    "web":   {"kind": "docker", "container": "web-1", "engine": "podman"},
    "build": {"kind": "ssh", "host": "build.internal", "user": "ci", "identityFile": "~/.ssh/ci_ed25519"},
    "api":   {"kind": "kubectl", "pod": "api-0", "namespace": "prod"},
    "here":  {"kind": "local"}}}
Unknown keys are refused; no secrets (an SSH key is the path to its file).
Then: procward start --in web -- make test`;

/**
 * What to do about an error of the environments file (`err` as `readEnvironmentsConfig` or
 * {@link environmentNamed} throw it: `INVALID_ARGUMENT` with `details.path`): `run chmod 600
 * FILE` when the file is writable by its group or others, else where its format is shown.
 * Null for any other error.
 */
export function environmentsHint(err: unknown): string | null {
  const e = err as { code?: unknown; message?: unknown; details?: { path?: unknown } };
  const path = e?.details?.path;
  if (e?.code !== 'INVALID_ARGUMENT' || typeof path !== 'string' || typeof e.message !== 'string') return null;
  if (!e.message.startsWith('environments file ') && !e.message.startsWith('environment ')) return null;
  try {
    if ((lstatSync(path).mode & 0o022) !== 0) return `run chmod 600 ${path}`;
  } catch {
    // Missing or unreadable: its format is the hint.
  }
  return FORMAT_HINT;
}

export function registerEnvironments(program: Command): void {
  common(program.command('environments'))
    .description('list the environments of the environments file (name and kind) that start --in NAME can run a job in')
    .addHelpText('after', ENVIRONMENTS_FILE_HELP)
    .action(async (opts: Common) => {
      const { environmentsConfigPath, readEnvironmentsConfig } = await import('../../remote/configfile.js');
      const found = readEnvironmentsConfig();
      const path = environmentsConfigPath();
      const rows = Object.entries(found).map(([name, d]) => ({ name, kind: d.kind }));
      const none = `no environments: ${path} ${existsSync(path) ? 'names none' : 'does not exist'} (its format: procward environments --help)`;
      const text = rows.length > 0 ? table([{ header: 'NAME' }, { header: 'KIND' }], rows.map((r) => [r.name, r.kind])) : none;
      await print(opts, { path, environments: rows }, text);
    });
}
