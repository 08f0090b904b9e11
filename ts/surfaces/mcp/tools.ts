/**
 * The MCP server's tools: the library's `process` tool split by what an action does to the
 * machine, so an MCP client can tell the safe calls from the others by their annotations.
 *
 * - `process_start` starts a command (it can do anything: destructive, open world).
 * - `process_read` runs the actions that only look: `list`, `poll`, `log`, `wait`,
 *   `notifications` (and `screen` when the tool has it). `readOnlyHint: true`. They do
 *   change procward's own bookkeeping: a result delivers the pending events of its scope
 *   once, and `wait` or `poll` with `acknowledge` consume a completion event.
 * - `process_control` runs every other action of `process` (`kill`, `write`, `submit`,
 *   `close`, and any action added later: a new action is taken for one that acts until it
 *   is listed as read-only here). `destructiveHint: true`.
 *
 * Input schemas are derived from the library's `process` schema (`tool/schema.ts`), so a
 * property added there appears here: each tool lists the action names
 * it runs and the properties whose description does not name only the other tool's actions
 * before its first colon.
 * The library's tool surface (`toolDefinitions`, `handleToolCall`) keeps its single
 * `process` tool; only the MCP surface splits it.
 */
import { READ_ACTIONS } from '../tool/names.js';
import { toolDefinitions } from '../tool/schema.js';
import { outputSchemas } from './outputschema.js';

/** The MCP tool names. */
export type McpToolName = 'process_start' | 'process_read' | 'process_control';

/** An MCP `Tool` as `tools/list` returns it. */
export interface McpTool {
  name: McpToolName;
  title: string;
  description: string;
  inputSchema: { type: 'object'; properties?: Record<string, object>; required?: string[]; [key: string]: unknown };
  outputSchema: { type: 'object'; [key: string]: unknown };
  annotations: { title: string; readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint: boolean };
}

type JsonObject = Record<string, unknown>;

/** The library's `process` schema, made once (it is fixed for the life of the process); callers get a copy. */
let processSchemaOnce: JsonObject | undefined;

function processSchema(): JsonObject {
  if (!processSchemaOnce) {
    const def = toolDefinitions().find((t) => t.name === 'process');
    if (!def) throw new Error('the library has no process tool');
    processSchemaOnce = def.input_schema;
  }
  return structuredClone(processSchemaOnce);
}

/** The action names of the library's `process` schema. */
export function processActions(): string[] {
  const action = (processSchema().properties as JsonObject | undefined)?.action as { enum?: unknown } | undefined;
  return Array.isArray(action?.enum) ? action.enum.filter((a): a is string => typeof a === 'string') : [];
}

/** The actions each split tool runs, from the library's action list. */
export function actionsOf(tool: 'process_read' | 'process_control'): string[] {
  return processActions().filter((a) => READ_ACTIONS.includes(a) === (tool === 'process_read'));
}

/**
 * The actions a property's description names before its first colon (`'log: byte cap ...'`,
 * `'poll/log/wait: ...'`, `'log (and poll/wait with a cursor): ...'`), or null when it names
 * none (the property is then kept in both tools).
 */
function actionsNamedBy(description: unknown, known: string[]): string[] | null {
  if (typeof description !== 'string') return null;
  const colon = description.indexOf(':');
  if (colon < 0 || colon > 80) return null;
  const prefix = description.slice(0, colon);
  if (prefix.includes('.')) return null;
  const names = (prefix.match(/[a-z_]+/g) ?? []).filter((w) => known.includes(w));
  return names.length > 0 ? names : null;
}

function splitSchema(tool: 'process_read' | 'process_control'): McpTool['inputSchema'] {
  const schema = processSchema();
  const mine = actionsOf(tool);
  const known = processActions();
  const properties = { ...((schema.properties as Record<string, JsonObject> | undefined) ?? {}) };
  for (const [key, prop] of Object.entries(properties)) {
    if (key === 'action') {
      // The library's description names every action; this tool runs only its own.
      properties[key] = { ...prop, enum: mine, description: `What to do: ${mine.join(', ')}.` };
      continue;
    }
    const named = actionsNamedBy(prop.description, known);
    if (named && !named.some((a) => mine.includes(a))) delete properties[key];
  }
  const required = Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === 'string' && k in properties) : undefined;
  return { ...schema, type: 'object', properties, ...(required && { required }) };
}

function startSchema(): McpTool['inputSchema'] {
  const def = toolDefinitions().find((t) => t.name === 'process_start');
  if (!def) throw new Error('the library has no process_start tool');
  return { ...structuredClone(def.input_schema), type: 'object' };
}

/** What each action does, for the split tools' descriptions (an action missing here is named only). */
const ACTION_SENTENCES: Record<string, string> = {
  list: 'list: the sessions you may see',
  poll: 'poll: status and recent output',
  log: "log: output lines (paged; pass back the last result's cursor, when it has one, for only new output)",
  wait: 'wait: until the job ends or timeout_ms passes (a result still running means: call wait again)',
  screen: "screen: a PTY session's screen as text",
  notifications: 'notifications: pending completion and watch-pattern events',
  kill: 'kill: end the whole process tree (SIGTERM, then SIGKILL after grace_ms)',
  signal: 'signal: send one signal to the job, without escalation',
  write: 'write: raw text to stdin',
  submit: 'submit: a line followed by Enter',
  close: 'close: end of input',
};

function actionGuide(actions: string[]): string {
  return `Actions: ${actions.join(', ')}. ${actions
    .map((a) => ACTION_SENTENCES[a])
    .filter((t): t is string => t !== undefined)
    .join('; ')}.`;
}

/** The three MCP tools, schemas derived from the library's tool definitions now. */
export function mcpTools(): McpTool[] {
  const read = actionsOf('process_read');
  const control = actionsOf('process_control');
  const startDescription = toolDefinitions().find((t) => t.name === 'process_start')?.description ?? '';
  return [
    {
      name: 'process_start',
      title: 'Start a background command',
      // The library's text points at its single `process` tool, which MCP splits in two.
      description: `${startDescription.replace(/;? use the `process` tool[^.]*\./, '.')} Read it with process_read; stop it or talk to its stdin with process_control.`,
      inputSchema: startSchema(),
      outputSchema: outputSchemas.process_start,
      annotations: { title: 'Start a background command', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    },
    {
      name: 'process_read',
      title: 'Read background processes',
      description: `Look at background sessions without acting on them. ${actionGuide(read)}`,
      inputSchema: splitSchema('process_read'),
      outputSchema: outputSchemas.process_read,
      annotations: { title: 'Read background processes', readOnlyHint: true, openWorldHint: false },
    },
    {
      name: 'process_control',
      title: 'Control background processes',
      description: `Act on a background session. ${actionGuide(control)} Stdin needs a job started with stdin or pty.`,
      inputSchema: splitSchema('process_control'),
      outputSchema: outputSchemas.process_control,
      annotations: { title: 'Control background processes', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
  ];
}

/**
 * Which library tool call an MCP call is: `process_start` as is; `process_read` and
 * `process_control` become `process` once their `action` is one of theirs. Returns an
 * error message for a call this server does not run (unknown tool, an action of the other
 * tool), so a read-only tool can never kill.
 */
export function routeCall(
  name: string,
  args: unknown,
): { tool: 'process_start' | 'process'; action?: string } | { code: 'UNKNOWN_TOOL' | 'INVALID_ARGUMENT'; error: string } {
  if (name === 'process_start') return { tool: 'process_start' };
  if (name !== 'process_read' && name !== 'process_control') {
    return { code: 'UNKNOWN_TOOL', error: `unknown tool ${JSON.stringify(name.slice(0, 100))}; the tools are process_start, process_read and process_control` };
  }
  const action = args && typeof args === 'object' && !Array.isArray(args) ? (args as JsonObject).action : undefined;
  const mine = actionsOf(name);
  if (typeof action !== 'string' || !mine.includes(action)) {
    const other = name === 'process_read' ? 'process_control' : 'process_read';
    const hint = typeof action === 'string' && actionsOf(other).includes(action) ? `; ${action} is an action of ${other}` : '';
    const shown = action === undefined ? 'no action' : `action ${JSON.stringify(String(action).slice(0, 100))}`;
    return { code: 'INVALID_ARGUMENT', error: `${name} got ${shown}: its actions are ${mine.join(', ')}${hint}` };
  }
  return { tool: 'process', action };
}
