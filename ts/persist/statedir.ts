/** Where procward's state directory is by default, and whether a state directory can be trusted. */
import { lstatSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ProcwardError } from '../errors.js';

/**
 * `$PROCWARD_STATE_DIR` if set; otherwise Linux and other Unixes:
 * `$XDG_STATE_HOME/procward` or `~/.local/state/procward`; macOS:
 * `~/Library/Application Support/procward`; Windows: `%LOCALAPPDATA%\procward`.
 *
 * The same trust rule holds as for any `stateDir`: opening a registry on it creates it 0700
 * when it is missing and refuses it (`STATE_DIR_UNTRUSTED`) when it is a symlink, owned by
 * another user, or writable by its group or others. Jobs never inherit `PROCWARD_STATE_DIR`.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PROCWARD_STATE_DIR) return env.PROCWARD_STATE_DIR;
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'procward');
  if (process.platform === 'win32') return join(env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'procward');
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'procward');
}

/**
 * Creates the state directory (0700) if it is missing, and checks that it can be trusted:
 * a real directory (not a symlink), owned by the effective user, neither group- nor
 * world-writable. An existing directory is never chmodded: changing the mode of someone
 * else's directory would not make its contents ours.
 *
 * Errors: `INVALID_ARGUMENT` for an empty or non-string path; `STATE_DIR_UNTRUSTED` for a
 * symlink, a non-directory, another owner, or a group- or world-writable mode.
 */
export function ensureStateDir(dir: string): void {
  if (typeof dir !== 'string' || dir === '') throw new ProcwardError('INVALID_ARGUMENT', `stateDir must be a non-empty path, got ${JSON.stringify(dir)}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // A missing parent is created for the user (0700 too); an existing path is checked below.
    if (code === 'ENOENT') mkdirSync(dir, { recursive: true, mode: 0o700 });
    else if (code !== 'EEXIST') throw err;
  }
  assertTrustedDir(dir);
}

/**
 * Throws `STATE_DIR_UNTRUSTED` unless `dir` is a directory only the effective user may write
 * (see {@link ensureStateDir}); `what` names it in the message.
 */
export function assertTrustedDir(dir: string, what = 'state directory'): void {
  const st = lstatSync(dir);
  const refuse = (why: string) => {
    throw new ProcwardError('STATE_DIR_UNTRUSTED', `${what} ${dir} ${why}; refusing to use it`, { path: dir });
  };
  if (st.isSymbolicLink()) refuse('is a symlink');
  if (!st.isDirectory()) refuse('is not a directory');
  const euid = process.geteuid?.();
  if (euid !== undefined && st.uid !== euid) refuse(`is owned by uid ${st.uid}, not by the effective user (uid ${euid})`);
  if (process.platform !== 'win32' && (st.mode & 0o022) !== 0) refuse(`is writable by its group or by others (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')})`);
}
