/**
 * The LLM tool surface: JSON Schemas and one handler for two tools.
 *
 * - `process_start` starts a background command.
 * - `process` manages sessions: actions `list`, `poll`, `log`, `wait`, `kill`, `write`,
 *   `submit`, `close`.
 *
 * Inputs and results use snake_case keys. Every output and command in a result is already
 * redacted by the registry. The handler never throws: unknown tools or actions, missing
 * ids and bad argument types come back as `{ error: { code, message } }`.
 *
 * The schemas are written once with zod and exported as JSON Schema (`z.toJSONSchema`).
 */
import { z } from 'zod';
import { type ProcwardErrorCode, ProcwardError } from '../errors.js';
import { checkStrict, didYouMean, type Shape } from '../optioncheck.js';
import { MAX_PAGE_BYTES, MIN_PAGE_BYTES } from '../output/paging.js';
import type { ProcessRegistry } from '../registry.js';
import type { KillResult, LogResult, PollResult, SessionSummary, Snake, WaitResult } from '../types.js';

const sessionId = z
  .union([z.string(), z.number()])
  .describe('Session id (proc_ + 12 hex) or a unique prefix of at least 4 hex characters.');

const processInput = z
  .object({
    action: z.enum(['list', 'poll', 'log', 'wait', 'kill', 'write', 'submit', 'close']).describe('What to do.'),
    session_id: sessionId.optional().describe('The session (every action but list).'),
    timeout_ms: z.number().int().min(1).max(86_400_000).optional().describe('wait: give up after this many milliseconds (default 30000, at most a day).'),
    offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe('log: first line, 0-based (default: the last `limit` lines).'),
    limit: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional().describe('log: number of lines (default 200).'),
    max_bytes: z
      .number()
      .int()
      .min(MIN_PAGE_BYTES)
      .max(MAX_PAGE_BYTES)
      .optional()
      .describe('log: byte cap of the page (default 1048576, at most 4 MiB); lines that do not fit are left out (see showing), a longer line is cut with a marker.'),
    grace_ms: z.number().int().min(0).max(3_600_000).optional().describe('kill: milliseconds between SIGTERM and SIGKILL (default 2000, at most an hour).'),
    data: z.string().optional().describe('write: raw text to send to stdin.'),
    text: z.string().optional().describe('submit: a line to send to stdin, followed by Enter.'),
    acknowledge: z.boolean().optional().describe('poll: also consume the completion notification.'),
    task_id: z.string().optional().describe('list: only this task.'),
    session_key: z.string().optional().describe('list: sessions of this conversation.'),
  })
  .strict();

const startInput = z
  .object({
    command: z.string().min(1).describe('Shell command, run as `bash -c <command>` in the background.'),
    workdir: z.string().optional().describe('Working directory.'),
    env: z.record(z.string(), z.string()).optional().describe('Extra environment variables.'),
    pty: z
      .union([z.boolean(), z.object({ cols: z.number().int().min(1), rows: z.number().int().min(1) }).strict()])
      .optional()
      .describe('Run under a pseudo-terminal (for interactive programs).'),
    stdin: z.boolean().optional().describe('Keep a stdin pipe open for write/submit/close.'),
    notify_on_complete: z.boolean().optional().describe('Queue a notification when the command ends.'),
    watch_patterns: z.array(z.string().min(1)).optional().describe('Regular expressions; a matching output line raises a notification.'),
    task_id: z.string().optional(),
    session_key: z.string().optional(),
  })
  .strict();

/** A tool definition in the plain `{ name, description, input_schema }` shape (Anthropic-style). */
export interface ToolDefinition {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema) as Record<string, unknown>;
  return rest;
}

/** The two tool definitions. */
export function toolDefinitions(): ToolDefinition[] {
  return [
    {
      name: 'process_start',
      description:
        'Start a shell command in the background (dev servers, builds, test runs). Returns its session_id at once; use the `process` tool to read its output, wait for it, or stop it.',
      input_schema: jsonSchema(startInput),
    },
    {
      name: 'process',
      description:
        'Manage background processes: list sessions; poll status and recent output; log (output lines, paged); wait for the end (with a timeout); kill the whole process tree; write/submit/close stdin.',
      input_schema: jsonSchema(processInput),
    },
  ];
}

/** The same tools in OpenAI's `{ type: 'function', function: { name, description, parameters } }` shape. */
export function openAiTools(): { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }[] {
  return toolDefinitions().map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.input_schema } }));
}

/** A failed tool call: procward's error code (or `UNKNOWN_TOOL`, or `ERROR` for a foreign error), its message and details. */
export interface ToolError {
  error: { code: ProcwardErrorCode | 'UNKNOWN_TOOL' | 'ERROR'; message: string; details?: Record<string, unknown> };
}

/**
 * A tool result: the registry's result with snake_case keys (a session's `id` is
 * `session_id`), one shape per action, or a {@link ToolError}. Narrow with `'error' in result`.
 */
export type ToolResult =
  | ToolError
  | { session_id: string; pid: number | null; status: SessionSummary['status']; command: string }
  | { sessions: Snake<SessionSummary>[] }
  | Snake<PollResult>
  | Snake<WaitResult>
  | Snake<LogResult>
  | Snake<KillResult>
  | { session_id: string; bytes: number }
  | { session_id: string; closed: true };

/** snake_case keys; a session's `id` is `session_id`, the name the model sends back. */
function snake(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snake);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k === 'id' && typeof v === 'string' && v.startsWith('proc_') ? 'session_id' : k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snake(v)]),
    );
  }
  return value;
}

function errorResult(code: ToolError['error']['code'], message: string): ToolResult {
  return { error: { code, message } };
}

/** zod's issues, an unknown key with the closest key of `schema` as a hint (`timeout` → `timeout_ms`). */
function describeIssues(err: z.ZodError, schema: z.ZodObject): string {
  const names = Object.keys(schema.shape);
  return err.issues
    .map((i) => {
      const where = i.path.join('.') || 'input';
      if (i.code !== 'unrecognized_keys' || i.path.length > 0) return `${where}: ${i.message}`;
      return `${where}: ${i.keys.map((k) => `unknown key \`${k}\`${didYouMean(k, names)}`).join(', ')}`;
    })
    .join('; ');
}

/** What a host applies to every call (the agent's task and conversation); it overrides the model's `task_id`/`session_key`. */
export interface ToolContext {
  taskId?: string;
  sessionKey?: string;
}

/** The host's context, strict: a misspelt key would silently widen what the agent may see. */
const toolContext = z.strictObject({ taskId: z.string().optional(), sessionKey: z.string().optional() } satisfies Shape<ToolContext>);

/**
 * Handles one tool call. Never throws: every failure is `{ error: { code, message } }`.
 */
export async function handleToolCall(registry: ProcessRegistry, name: string, input: unknown, context: ToolContext = {}): Promise<ToolResult> {
  try {
    checkStrict('tool context', toolContext, context);
    if (name === 'process_start') return snake(await start(registry, input, context)) as ToolResult;
    if (name === 'process') return snake(await manage(registry, input, context)) as ToolResult;
    return errorResult('UNKNOWN_TOOL', `unknown tool ${JSON.stringify(name)}; the tools are process_start and process`);
  } catch (err) {
    if (err instanceof z.ZodError) return errorResult('INVALID_ARGUMENT', describeIssues(err, name === 'process' ? processInput : startInput));
    const e = err as { code?: ProcwardErrorCode; message?: string; details?: Record<string, unknown> };
    return { error: { code: e.code ?? 'ERROR', message: e.message ?? String(err), ...(e.details && { details: snake(e.details) as Record<string, unknown> }) } };
  }
}

async function start(registry: ProcessRegistry, raw: unknown, ctx: ToolContext) {
  const input = startInput.parse(raw);
  const s = await registry.spawn(input.command, {
    ...(input.workdir !== undefined && { cwd: input.workdir }),
    ...(input.env !== undefined && { env: input.env }),
    ...(input.pty !== undefined && input.pty !== false && { pty: input.pty === true ? {} : input.pty }),
    ...(input.stdin !== undefined && { stdin: input.stdin }),
    ...(input.notify_on_complete !== undefined && { notifyOnComplete: input.notify_on_complete }),
    ...(input.watch_patterns !== undefined && { watchPatterns: input.watch_patterns }),
    // The host's context wins over the model's input: an agent cannot file a job under
    // another task or conversation.
    ...((ctx.taskId ?? input.task_id) !== undefined && { taskId: ctx.taskId ?? input.task_id }),
    ...((ctx.sessionKey ?? input.session_key) !== undefined && { sessionKey: ctx.sessionKey ?? input.session_key }),
  });
  return { sessionId: s.id, pid: s.pid, status: s.status, command: s.command };
}

async function manage(registry: ProcessRegistry, raw: unknown, ctx: ToolContext) {
  const input = processInput.parse(raw);
  if (input.action === 'list') {
    const taskId = ctx.taskId ?? input.task_id;
    const sessionKey = ctx.sessionKey ?? input.session_key;
    const sessions = await registry.list({ ...(taskId !== undefined && { taskId }), ...(sessionKey !== undefined && { sessionKey }) });
    return { sessions };
  }
  if (input.session_id === undefined) throw new ProcwardError('INVALID_ARGUMENT', `action ${input.action} needs session_id`);
  const id = String(input.session_id);
  switch (input.action) {
    case 'poll':
      return registry.poll(id, { acknowledge: input.acknowledge === true });
    case 'log':
      return registry.readLog(id, {
        ...(input.offset !== undefined && { offset: input.offset }),
        ...(input.limit !== undefined && { limit: input.limit }),
        ...(input.max_bytes !== undefined && { maxBytes: input.max_bytes }),
      });
    case 'wait':
      return registry.wait(id, { timeoutMs: input.timeout_ms ?? 30_000 });
    case 'kill':
      return registry.kill(id, input.grace_ms !== undefined ? { graceMs: input.grace_ms } : {});
    case 'write':
      if (input.data === undefined) throw new ProcwardError('INVALID_ARGUMENT', 'write needs data');
      return registry.write(id, input.data);
    case 'submit':
      if (input.text === undefined) throw new ProcwardError('INVALID_ARGUMENT', 'submit needs text');
      return registry.submit(id, input.text);
    case 'close':
      return registry.closeStdin(id);
  }
}
