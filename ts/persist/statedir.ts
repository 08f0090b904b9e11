/** The platform's default state directory for procward. */
import { homedir } from 'node:os';
import { join } from 'node:path';

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
