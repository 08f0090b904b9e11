/**
 * The MCP `instructions` (sent at initialization): how an agent uses the tools, in a few
 * lines. Options are named only when the library's tool schemas have them, so the text
 * never promises an argument the tools refuse.
 */
import { toolDefinitions } from '../tool/schema.js';

function has(tool: string, key: string): boolean {
  const def = toolDefinitions().find((t) => t.name === tool);
  const props = def?.input_schema.properties;
  return typeof props === 'object' && props !== null && key in props;
}

/** The instructions text. */
export function mcpInstructions(): string {
  const yieldMs = has('process_start', 'yield_ms') ? ' With yield_ms it waits that long and returns a quick command\'s exit code and output at once.' : '';
  const cursor = has('process', 'cursor') ? ' poll, log and wait results carry a cursor: pass it back to get only the output since.' : '';
  const budget = has('process', 'max_chars') ? ' (max_chars)' : '';
  return [
    'procward runs shell commands in the background and tracks them as sessions (session_id: proc_ + 12 hex).',
    `1. process_start runs a command and returns its session_id at once (dev servers, builds, test runs).${yieldMs}`,
    `2. process_read looks without acting: poll (status and recent output), log (output lines), wait (until the job ends; a result with process_running true means: call wait again), list (your sessions), notifications (completion and watch-pattern events; results also carry pending ones).${cursor}`,
    '3. process_control acts: kill ends the whole process tree (SIGTERM, then SIGKILL after grace_ms); write, submit and close talk to the stdin of a job started with stdin or pty.',
    `Output is redacted (secrets masked) and cut to a budget${budget}. Job logs are also resources: procward://sessions/<session_id>/log.`,
  ].join('\n');
}
