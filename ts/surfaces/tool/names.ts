/**
 * Which tool runs an action, on each surface: the one source of the tool names that
 * results' hints give the model. The library (and its adapters) has one `process` tool for
 * every action; MCP splits it into `process_read` (the actions that only look) and
 * `process_control` (the others). A hint such as "call process action=wait" would name a
 * tool an MCP client does not have, so hints are written with {@link callOf}.
 */

/** The tool names a call's hints use: the library's (`process`) or MCP's (`process_read`/`process_control`). Default `library`. */
export type ToolSurface = 'library' | 'mcp';

/** Actions of `process` that change nothing outside procward's bookkeeping: MCP's `process_read` runs them. */
export const READ_ACTIONS: readonly string[] = ['list', 'poll', 'log', 'wait', 'notifications', 'screen'];

/** The tool that runs `action` on `surface`: `process`, or on MCP `process_read` / `process_control`. */
export function toolOf(action: string, surface: ToolSurface): string {
  if (surface === 'library') return 'process';
  return READ_ACTIONS.includes(action) ? 'process_read' : 'process_control';
}

/** `a`, `a or b`, `a, b or c`. */
function either(words: string[]): string {
  return words.length < 2 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;
}

/**
 * The call that runs one of `actions`, as a hint names it: `process action=wait, poll or
 * log` (library), `process_read action=wait, poll or log` (MCP); actions of both MCP tools
 * are grouped by tool (`process_read action=poll or process_control action=kill`).
 */
export function callOf(actions: string[], surface: ToolSurface): string {
  const byTool = new Map<string, string[]>();
  for (const a of actions) byTool.set(toolOf(a, surface), [...(byTool.get(toolOf(a, surface)) ?? []), a]);
  return either([...byTool].map(([tool, names]) => `${tool} action=${either(names)}`));
}
