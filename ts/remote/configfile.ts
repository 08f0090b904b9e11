/**
 * Environments named in a configuration file, for the surfaces (CLI `--in NAME`, the LLM
 * tool, MCP): the host's file says what each name is; a model or a tool call only ever
 * picks a name. The file holds no secrets (no password or key material: an SSH identity is
 * a path to a key file, and the schema refuses unknown keys), and is trusted only when the
 * effective user owns it and no one else may write it, since an SSH option or an engine
 * binary in it decides what runs on this host.
 *
 * Format (JSON), at `PROCWARD_ENVIRONMENTS` or `$XDG_CONFIG_HOME/procward/environments.json`
 * (default `~/.config/procward/environments.json`):
 *
 * ```json
 * { "environments": {
 *     "build": { "kind": "ssh", "host": "build.internal", "user": "ci", "identityFile": "~/.ssh/ci_ed25519" },
 *     "web":   { "kind": "docker", "container": "web-1", "engine": "podman" },
 *     "api":   { "kind": "kubectl", "pod": "api-0", "namespace": "prod" } } }
 * ```
 */
import { lstatSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { ProcwardError } from '../errors.js';
import type { EnvironmentDescription, ExecutionEnvironment } from './commandenv.js';
import { environmentFrom } from './environments.js';

/** A value handed to a client program as an argument: never one it would read as an option. */
const argument = (what: string) =>
  z
    .string()
    .min(1)
    .max(1024)
    .refine((v) => !v.startsWith('-'), `${what} must not start with "-" (a client would read it as an option)`)
    .refine((v) => !/[\0\n\r]/.test(v), `${what} must not contain NUL or line breaks`);

/** What a caller may name: plain enough to pass through a CLI flag or a tool argument unquoted. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const tmpDir = z.string().min(1).max(1024).startsWith('/').optional();

const schema = z.strictObject({
  environments: z.record(
    z.string(),
    z.discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('local'), tmpDir }),
      z.strictObject({
        kind: z.literal('ssh'),
        host: argument('host'),
        user: argument('user').optional(),
        port: z.number().int().min(1).max(65535).optional(),
        identityFile: z.string().min(1).max(4096).optional(),
        options: z.array(argument('an ssh option')).max(64).optional(),
        tmpDir,
      }),
      z.strictObject({ kind: z.literal('docker'), container: argument('container'), engine: argument('engine').optional(), host: argument('engine host').optional(), user: argument('user').optional(), tmpDir }),
      z.strictObject({
        kind: z.literal('kubectl'),
        pod: argument('pod'),
        container: argument('container').optional(),
        namespace: argument('namespace').optional(),
        context: argument('context').optional(),
        tmpDir,
      }),
    ]),
  ),
});

/** Where the environments file is: `PROCWARD_ENVIRONMENTS`, else `$XDG_CONFIG_HOME/procward/environments.json` (default `~/.config/...`). */
export function environmentsConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PROCWARD_ENVIRONMENTS) return resolve(env.PROCWARD_ENVIRONMENTS);
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'procward', 'environments.json');
}

/** `~/x` in a path of the file (an identity file) is the user's home. */
function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? join(homedir(), p.slice(1)) : p;
}

/**
 * Reads and checks the environments file: the descriptions by name (nothing is connected).
 * `path` defaults to {@link environmentsConfigPath}. A missing file at the default place
 * means no environments (`{}`); a missing file that was named (argument or
 * `PROCWARD_ENVIRONMENTS`) is an error. Errors (`INVALID_ARGUMENT`, naming the file): not a
 * regular file, owned by another user or writable by its group or others, not JSON, or not
 * of the schema (the first problem, with its place: `environments.build.port`).
 */
export function readEnvironmentsConfig(opts: { path?: string; env?: NodeJS.ProcessEnv } = {}): Record<string, EnvironmentDescription> {
  const env = opts.env ?? process.env;
  const named = opts.path !== undefined || Boolean(env.PROCWARD_ENVIRONMENTS);
  const path = opts.path !== undefined ? resolve(opts.path) : environmentsConfigPath(env);
  const refuse = (why: string): never => {
    throw new ProcwardError('INVALID_ARGUMENT', `environments file ${path}: ${why}`, { path });
  };
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !named) return {};
    return refuse((err as Error).message);
  }
  if (!st.isFile()) refuse('is not a regular file (a symlink or a directory is refused)');
  if (process.platform !== 'win32') {
    if (typeof process.geteuid === 'function' && st.uid !== process.geteuid()) refuse(`is owned by uid ${st.uid}, not by this user`);
    if ((st.mode & 0o022) !== 0) refuse(`is writable by its group or by others (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')})`);
  }
  if (st.size > 1024 * 1024) refuse('is over 1 MiB');
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    return refuse(`is not JSON: ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0] as z.core.$ZodIssue;
    return refuse(`${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`);
  }
  const out: Record<string, EnvironmentDescription> = {};
  for (const [name, d] of Object.entries(parsed.data.environments)) {
    if (!NAME.test(name)) refuse(`environment name ${JSON.stringify(name)}: a name is 1-64 letters, digits, "_", "." or "-", starting with a letter or digit`);
    const desc = { ...d } as EnvironmentDescription;
    if (desc.kind === 'ssh' && desc.identityFile !== undefined) desc.identityFile = expandHome(desc.identityFile);
    out[name] = desc;
  }
  return out;
}

/**
 * The environments of the file, built and ready for `RegistryOptions.environments` (see
 * {@link readEnvironmentsConfig} for where the file is and its errors). Close them
 * (`close()`) with the registry: SSH environments hold a control connection.
 */
export function loadEnvironments(opts: { path?: string; env?: NodeJS.ProcessEnv } = {}): Record<string, ExecutionEnvironment> {
  return Object.fromEntries(Object.entries(readEnvironmentsConfig(opts)).map(([name, d]) => [name, environmentFrom(d)]));
}
