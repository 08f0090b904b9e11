/**
 * What a job is started with: the command as the shell gets it, and the child's
 * environment.
 *
 * - The environment is the host's minus secret-looking variables (credential-like names
 *   and the known provider variables) and procward's own `PROCWARD_*` variables, plus what the caller passes explicitly, plus
 *   `PYTHONUNBUFFERED=1` and non-interactive pagers. A host variable the caller wants to
 *   pass through is named in `allowEnv`; a value set in `env` always reaches the job. The
 *   names withheld are reported (`withheldVariables`, a spawn's `withheldEnv`) so the person
 *   who expected `DATABASE_URL` in the job learns why it is empty.
 * - `A && B &` is rewritten to `A && { B & }` (see `shellCommand` and `./background.ts`).
 */
import { ProcwardError } from '../errors.js';
import { isMarkVariable } from '../session/mark.js';
import { backgroundRewrite, shellLanguage } from './background.js';
import { CREDENTIAL_NAME } from './redact.js';

/** Host variables never passed to jobs unless allowed, beyond the credential-like names. */
const PROVIDER_SECRETS = new Set([
  'OPENAI_API_KEY',
  'ANTHROPIC_API_KEY',
  'GITHUB_TOKEN',
  'GH_TOKEN',
  'GITLAB_TOKEN',
  'NPM_TOKEN',
  'NODE_AUTH_TOKEN',
  'HF_TOKEN',
  'HUGGING_FACE_HUB_TOKEN',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_ACCESS_KEY_ID',
  'GOOGLE_API_KEY',
  'GEMINI_API_KEY',
  'STRIPE_API_KEY',
  'SLACK_BOT_TOKEN',
  'DATABASE_URL',
]);

/** Whether a host variable is kept away from jobs by default. */
export function isSecretVariable(name: string): boolean {
  return PROVIDER_SECRETS.has(name.toUpperCase()) || CREDENTIAL_NAME.test(name);
}

/**
 * procward's own control variables (`PROCWARD_STATE_DIR`, `PROCWARD_NO_CGROUP`, ...) steer
 * the host, not its jobs: a job that inherited `PROCWARD_STATE_DIR` would know where the
 * records that decide what procward signals live, and a procward it runs would share them.
 */
function isControlVariable(name: string): boolean {
  return name.toUpperCase().startsWith('PROCWARD_');
}

/** Defaults that make jobs behave in the background (set unless the caller sets them). */
const JOB_DEFAULTS: Record<string, string> = { PYTHONUNBUFFERED: '1', PAGER: 'cat', GIT_PAGER: 'cat', MANPAGER: 'cat' };

/** Throws `INVALID_ARGUMENT` unless `command` is a non-empty string without NUL bytes. */
export function validateCommand(command: unknown): asserts command is string {
  if (typeof command !== 'string' || command.trim() === '') {
    throw new ProcwardError('INVALID_ARGUMENT', 'command must be a non-empty string');
  }
  if (command.includes('\0')) throw new ProcwardError('INVALID_ARGUMENT', 'command contains a NUL byte');
}

/**
 * The child's environment (see the module docs). Throws `INVALID_ARGUMENT` for a name that
 * is empty or contains `=` or NUL, or a value that is not a string or has a NUL.
 */
export function childEnvironment(host: NodeJS.ProcessEnv, extra: Record<string, string> = {}, allow: readonly string[] = []): Record<string, string> {
  for (const name of [...Object.keys(extra), ...allow]) {
    if (isMarkVariable(name)) throw new ProcwardError('INVALID_ARGUMENT', `${name} is the session's mark, which procward sets last on every job's environment: env and allowEnv can neither set nor remove it`);
  }
  for (const [name, value] of Object.entries(extra)) {
    if (name === '' || name.includes('=') || name.includes('\0')) {
      throw new ProcwardError('INVALID_ARGUMENT', `environment variable name ${JSON.stringify(name)} is empty or contains '=' or NUL`);
    }
    if (typeof value !== 'string' || value.includes('\0')) {
      throw new ProcwardError('INVALID_ARGUMENT', `environment variable ${name} must be a string without NUL bytes`);
    }
  }
  const allowed = new Set(allow);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(host)) {
    if (v !== undefined && (allowed.has(k) || !(isSecretVariable(k) || isControlVariable(k)))) env[k] = v;
  }
  return { ...env, ...JOB_DEFAULTS, ...extra };
}

/**
 * Names of the host's variables {@link childEnvironment} keeps from the job as secrets:
 * secret-looking (see {@link isSecretVariable}), not named in `allow` and not set in `extra`
 * (an explicit value always reaches the job). Sorted; names only, never values.
 */
export function withheldVariables(host: NodeJS.ProcessEnv, extra: Record<string, string> = {}, allow: readonly string[] = []): string[] {
  const allowed = new Set(allow);
  return Object.keys(host)
    .filter((k) => host[k] !== undefined && isSecretVariable(k) && !isControlVariable(k) && !allowed.has(k) && !Object.hasOwn(extra, k))
    .sort();
}

/**
 * The command as the shell gets it. When the command's last statement is an and-or list
 * run in the background (`A && B &`, `A || B &`, `A && B | C &`), only its last pipeline is
 * put in the background: `A && { B & }`. Otherwise the whole list runs in a background
 * subshell: the job "exits" 0 at once, a failing `A` (`cd /missing`) goes unnoticed, and
 * the subshell holds the output pipe. Everything else, a command the parser refuses, and
 * every command of a shell that is not bash or a POSIX sh (`shell`, the registry's
 * `shell` option; also every shell on Windows) is returned unchanged.
 */
export function shellCommand(command: string, shell?: string): string {
  const language = shellLanguage(shell);
  return (language && backgroundRewrite(command, language)) ?? command;
}
