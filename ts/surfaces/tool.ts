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
 * The schemas live in `toolschema.ts` (re-exported here).
 */
import { z } from 'zod';
import { type ProcwardErrorCode, ProcwardError } from '../errors.js';
import { checkStrict, didYouMean, type Shape } from '../optioncheck.js';
import { normalizeToolArgs } from './toolargs.js';
import { processInput, startInput } from './toolschema.js';

export { openAiTools, type ToolDefinition, toolDefinitions } from './toolschema.js';
import type { ProcessRegistry } from '../registry.js';
import type { KillResult, LogResult, PollResult, SessionSummary, Snake, WaitResult } from '../types.js';

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

/** Per-call options from the host or the MCP server (not from the model). */
export interface ToolCallOptions {
  /** Aborts a running `wait` (and any other waiting the call does): the call then ends with what it has. */
  signal?: AbortSignal;
  /** Called while a `wait` runs (about once a second), for MCP progress notifications. */
  onProgress?: (progress: { elapsedMs: number; message: string }) => void;
}

/**
 * Handles one tool call. Never throws: every failure is `{ error: { code, message } }`.
 */
export async function handleToolCall(
  registry: ProcessRegistry,
  name: string,
  input: unknown,
  context: ToolContext = {},
  _options: ToolCallOptions = {},
): Promise<ToolResult> {
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
  const input = startInput.parse(normalizeToolArgs('process_start', raw));
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
  const input = processInput.parse(normalizeToolArgs('process', raw));
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
