/** The options every command takes. */
import type { Command } from 'commander';

export function common(cmd: Command): Command {
  return cmd.option('--state-dir <dir>', 'state directory (default: $PROCWARD_STATE_DIR or the platform state dir)').option('--json', 'print JSON');
}
