/** The platform's default state directory for procward. */
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * `$PROCWARD_STATE_DIR` if set; otherwise Linux and other Unixes:
 * `$XDG_STATE_HOME/procward` or `~/.local/state/procward`; macOS:
 * `~/Library/Application Support/procward`; Windows: `%LOCALAPPDATA%\procward`.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PROCWARD_STATE_DIR) return env.PROCWARD_STATE_DIR;
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'procward');
  if (process.platform === 'win32') return join(env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'procward');
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'procward');
}
