/**
 * The LLM tool surface: JSON Schemas and one handler for two tools.
 *
 * - `process_start` starts a background command (with `yield_ms`, its result inline when it
 *   ends that soon).
 * - `process` manages sessions: actions `list`, `poll`, `log`, `wait`, `kill`, `signal`,
 *   `write`, `submit`, `close`, `screen`, `notifications`.
 *
 * Inputs and results use snake_case keys. Every output and command in a result is already
 * redacted by the registry, whole, before this surface cuts or filters it. Output is cut to
 * a character budget (`budget.ts`), read after a cursor (`cursor.ts`,
 * `output.ts`) and filtered by a linear-time regex (`filter.ts`); every result
 * carries the pending events of its scope (`notify.ts`); a call with a context acts
 * only on the sessions that context sees (`scope.ts`); waits follow the host's abort
 * signal and progress (`wait.ts`). The handler never throws: unknown tools or actions,
 * missing ids and bad argument types come back as `{ error: { code, message } }`.
 *
 * The schemas live in `schema.ts` (re-exported here).
 */
import { z } from 'zod';
import { type ProcwardErrorCode, ProcwardError } from '../../errors.js';
import { checkStrict, didYouMean, type Shape } from '../../optioncheck.js';
import { normalizeToolArgs } from './args.js';
import { processInput, startInput } from './schema.js';

export { openAiTools, type ToolDefinition, toolDefinitions } from './schema.js';
export type * from './result.js';
import type { ProcessRegistry } from '../../registry.js';
import type { SessionSummary } from '../../types.js';
import { DEFAULT_MAX_CHARS, fitText, newestFitting } from './budget.js';
import { compileFilter } from './filter.js';
import { takeNotifications } from './notify.js';
import type { ToolError, ToolResult, ToolSuccess } from './result.js';
import { readOutput, type ToolOutput } from './output.js';
import { escapeStrings } from '../../output/controls.js';
import { type Access, ToolScope } from './scope.js';
import { callOf, type ToolSurface } from './names.js';
import { waitForHost } from './wait.js';

/** A result as the handler builds it, before it is typed as a {@link ToolSuccess}. */
type Building = Record<string, unknown>;

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
  /** The agent's task: the call sees this task's sessions (and, with `sessionKey`, its conversation's, read-only). */
  taskId?: string;
  /** The conversation: the call sees the sessions with this key. */
  sessionKey?: string;
  /** `false`: results do not carry pending notifications (the host drains them itself). Default true. */
  notifications?: boolean;
}

/** The host's context, strict: a misspelt key would silently widen what the agent may see. */
const toolContext = z.strictObject({
  taskId: z.string().optional(),
  sessionKey: z.string().optional(),
  notifications: z.boolean().optional(),
} satisfies Shape<ToolContext>);

/** Per-call options from the host or the MCP server (not from the model). */
export interface ToolCallOptions {
  /** Aborts a running `wait` (and `yield_ms`): the call then returns at once with the job still running and `aborted: true`. */
  signal?: AbortSignal;
  /**
   * Called about once a second while a `wait` (or `yield_ms`) runs, for MCP progress
   * notifications: milliseconds waited, the wait's whole length, a line for people. With
   * it, a wait lasts its whole `timeout_ms`; without it, at most 50 s (see `wait.ts`).
   */
  onProgress?: (progress: { elapsedMs: number; totalMs: number; message: string }) => void;
  /**
   * Whose tool names the hints in results use (`note`s such as "call process action=wait"):
   * `library` (default: `process_start` and `process`, as {@link toolDefinitions} defines
   * them) or `mcp` (`process_read` and `process_control`, as the MCP server splits them).
   */
  surface?: ToolSurface;
}

/** What an action returns before notifications are added: its result, its budget, and whether it delivered events itself. */
interface Done {
  result: object;
  maxChars: number;
  delivered?: true;
}

/**
 * Handles one tool call. Never throws: every failure is `{ error: { code, message } }`.
 * `context` scopes the call (see {@link ToolContext}); `options` carry the host's abort
 * signal and progress callback.
 */
export async function handleToolCall(
  registry: ProcessRegistry,
  name: string,
  input: unknown,
  context: ToolContext = {},
  options: ToolCallOptions = {},
): Promise<ToolResult> {
  // Every string a model reads carries no C0 control but TAB, LF and CR, nor DEL (a NUL
  // ends some hosts' conversations): each as `\xNN`, the raw view's colours included.
  return escapeStrings(await handle(registry, name, input, context, options));
}

async function handle(registry: ProcessRegistry, name: string, input: unknown, context: ToolContext, options: ToolCallOptions): Promise<ToolResult> {
  try {
    checkStrict('tool context', toolContext, context);
    let done: Done;
    if (name === 'process_start') done = await start(registry, input, context, options);
    else if (name === 'process') done = await manage(registry, input, context, options);
    else return errorResult('UNKNOWN_TOOL', `unknown tool ${JSON.stringify(name)}; the tools are process_start and process`);
    const result = snake(done.result) as Building;
    if (!done.delivered && context.notifications !== false) await attachNotifications(registry, context, result, done.maxChars);
    // Built from the registry's typed results by `snake`, whose output TypeScript cannot follow.
    return result as unknown as ToolSuccess;
  } catch (err) {
    if (err instanceof z.ZodError) return errorResult('INVALID_ARGUMENT', describeIssues(err, name === 'process' ? processInput : startInput));
    const e = err as { code?: ProcwardErrorCode; message?: string; details?: Record<string, unknown> };
    return { error: { code: e.code ?? 'ERROR', message: e.message ?? String(err), ...(e.details && { details: snake(e.details) as Record<string, unknown> }) } };
  }
}

/**
 * The scope's pending events taken before a read: reading a session's output to its end
 * after it exited consumes its completion (DESIGN section 7), which would otherwise be lost
 * to the model as an event. `{}` when the host drains events itself.
 */
async function eventsFirst(registry: ProcessRegistry, ctx: ToolContext, maxChars: number): Promise<Record<string, unknown>> {
  if (ctx.notifications === false) return {};
  const result: Building = {};
  await attachNotifications(registry, ctx, result, Math.min(maxChars, 4000));
  return result;
}

/**
 * Adds the scope's pending events to a result, in the room its output left (at least 2500
 * characters, one completion event, or the whole budget when it is smaller). A failure to
 * take them leaves them queued.
 */
async function attachNotifications(registry: ProcessRegistry, ctx: ToolContext, result: Building, maxChars: number): Promise<void> {
  const used = [result.text, result.output, result.output_preview].reduce<number>((n, v) => n + (typeof v === 'string' ? v.length : 0), 0);
  try {
    const { events, pending } = await takeNotifications(registry, await ToolScope.of(registry, ctx), Math.max(Math.min(maxChars, 2500), maxChars - used));
    if (events.length > 0) result.notifications = events;
    if (pending > 0) result.notifications_pending = pending;
  } catch {
    // A closed registry or a failed checkpoint write: the events stay queued for the next call.
  }
}

/** The output fields a result carries when it returns output (`output`, not `text`, beside a poll's fields). */
function outputFields(out: ToolOutput, key: 'text' | 'output'): Record<string, unknown> {
  const { session_id: _id, status: _status, text, ...rest } = out;
  return { [key]: text, ...rest };
}

async function start(registry: ProcessRegistry, raw: unknown, ctx: ToolContext, options: ToolCallOptions): Promise<Done> {
  const input = startInput.parse(normalizeToolArgs('process_start', raw));
  const maxChars = input.max_chars ?? DEFAULT_MAX_CHARS;
  const s = await registry.spawn(input.command, {
    ...(input.workdir !== undefined && { cwd: input.workdir }),
    ...(input.env !== undefined && { env: input.env }),
    ...(input.pty !== undefined && input.pty !== false && { pty: input.pty === true ? {} : input.pty }),
    ...(input.stdin !== undefined && { stdin: input.stdin }),
    ...(input.notify_on_complete !== undefined && { notifyOnComplete: input.notify_on_complete }),
    ...(input.watch_patterns !== undefined && { watchPatterns: input.watch_patterns }),
    ...(input.timeout_ms !== undefined && { timeoutMs: input.timeout_ms }),
    // A name only: the host's configuration (RegistryOptions.environments) says what it is.
    ...(input.environment !== undefined && { environment: input.environment }),
    // The model writes `env`: loader and runtime variables (LD_PRELOAD, NODE_OPTIONS, ...) are refused.
    envSource: 'model',
    ...filing(ctx, input),
  }).catch(noEnvironments);
  // Where the PID lives: `sandbox` (the far side of a configured environment, named) or `host`.
  const where = { pidScope: s.pidScope ?? 'host', ...(s.environment !== undefined && { environment: s.environment }) };
  const started = { sessionId: s.id, pid: s.pid, status: s.status, command: s.command, ...where, ...(s.withheldEnv.length > 0 && { withheldEnv: s.withheldEnv }) };
  if (!input.yield_ms) return { result: started, maxChars };
  // The job's own end, inline: the wait consumes its completion (this result delivers it).
  const { result: w, aborted } = await waitForHost(registry, s.id, input.yield_ms, options);
  const surface = options.surface ?? 'library';
  const out = await readOutput(registry, s.id, { from: 'start', maxChars, readOn: callOf(['log'], surface) });
  const ended = w.status === 'exited' ? { exitCode: w.exitCode, signal: w.signal, reason: w.reason } : {};
  const note = w.status === 'running' ? `still running after ${aborted ? 'the call was aborted' : `${input.yield_ms} ms`}: call ${callOf(['wait', 'poll', 'log'], surface)} with this session_id and cursor` : undefined;
  return { result: { ...started, status: w.status, ...ended, ...outputFields(out, 'output'), ...(aborted && { aborted: true }), ...(note && { note: out.note ? `${note}; ${out.note}` : note }) }, maxChars };
}

/**
 * An unknown environment on a host whose registry was given none (`details.configured`
 * empty): the host never passed its environments (a library host that did not load its
 * file), which is what the message says, rather than that the file names none. Other
 * errors as they are.
 */
function noEnvironments(err: unknown): never {
  const e = err as { code?: unknown; details?: { environment?: unknown; configured?: unknown } };
  if (e?.code !== 'INVALID_ARGUMENT' || typeof e.details?.environment !== 'string' || !Array.isArray(e.details.configured) || e.details.configured.length > 0) throw err;
  const why = 'this host passed no environments to procward (a library host passes them: ProcessRegistry.open({ environments: loadEnvironments() }); procward mcp passes those of its environments file, procward environments --help)';
  throw new ProcwardError('INVALID_ARGUMENT', `environment ${JSON.stringify(e.details.environment)} is not configured: ${why}`, e.details);
}

/**
 * The task and conversation a call files a job under (start) or lists (list). A host
 * context that names either decides both: the model cannot fill in the other (a context of
 * one conversation listing another task's sessions, or a task filing a job under another
 * conversation). Without a context, the model's `task_id`/`session_key`.
 */
function filing(ctx: ToolContext, input: { task_id?: string | undefined; session_key?: string | undefined }): { taskId?: string; sessionKey?: string } {
  const scoped = ctx.taskId !== undefined || ctx.sessionKey !== undefined;
  const taskId = scoped ? ctx.taskId : input.task_id;
  const sessionKey = scoped ? ctx.sessionKey : input.session_key;
  return { ...(taskId !== undefined && { taskId }), ...(sessionKey !== undefined && { sessionKey }) };
}

/** Actions that only read a session; the others act on it. */
const READS: ReadonlySet<string> = new Set(['poll', 'log', 'wait', 'screen']);

async function manage(registry: ProcessRegistry, raw: unknown, ctx: ToolContext, options: ToolCallOptions): Promise<Done> {
  const input = processInput.parse(normalizeToolArgs('process', raw));
  const maxChars = input.max_chars ?? DEFAULT_MAX_CHARS;
  if (input.action === 'list') {
    const all: SessionSummary[] = await registry.list(filing(ctx, input));
    // The newest sessions that fit the budget (snake_case adds an underscore to at most 20 keys).
    const { kept, omitted } = newestFitting(all, maxChars, 20);
    const note = omitted > 0 ? `${omitted} older sessions left out to fit max_chars; ${all.length - omitted} newest shown` : undefined;
    return { result: { sessions: kept, ...(omitted > 0 && { sessionsOmitted: omitted, note }) }, maxChars };
  }
  if (input.action === 'notifications') {
    const { events, pending } = await takeNotifications(registry, await ToolScope.of(registry, ctx), maxChars);
    return { result: { notifications: events, ...(pending > 0 && { notificationsPending: pending }) }, maxChars, delivered: true };
  }
  if (input.session_id === undefined) throw new ProcwardError('INVALID_ARGUMENT', `action ${input.action} needs session_id`);
  const access: Access = READS.has(input.action) ? 'read' : 'act';
  const surface = options.surface ?? 'library';
  const id = (await ToolScope.of(registry, ctx)).resolve(String(input.session_id), access, surface);
  if (input.filter !== undefined && input.action !== 'log' && input.cursor === undefined) {
    throw new ProcwardError('INVALID_ARGUMENT', `filter applies to log, or to ${input.action} with a cursor`);
  }
  const filter = input.filter !== undefined ? compileFilter(input.filter) : undefined;
  const since = async (sessionId: string) =>
    input.cursor === undefined ? {} : outputFields(await readOutput(registry, sessionId, { from: { cursor: input.cursor }, maxChars, readOn: callOf(['log'], surface), ...(filter && { filter }) }), 'output');
  const endCursor = async (sessionId: string) => ({ cursor: (await readOutput(registry, sessionId, { from: { limit: 1 }, maxChars })).cursor });
  switch (input.action) {
    case 'poll': {
      const events = await eventsFirst(registry, ctx, maxChars);
      const polled = await registry.poll(id, { acknowledge: input.acknowledge === true });
      if (input.cursor === undefined) {
        // A poll does not consume the completion: a host that drains events itself gets no
        // end cursor for an ended session (reading to the end would consume it).
        const keep = polled.status === 'exited' && ctx.notifications === false;
        return { result: { ...polled, ...(keep ? {} : await endCursor(polled.id)), ...events }, maxChars, delivered: true };
      }
      const { outputPreview: _preview, ...rest } = polled;
      return { result: { ...rest, ...(await since(polled.id)), ...events }, maxChars, delivered: true };
    }
    case 'log': {
      if (input.cursor !== undefined && (input.offset !== undefined || input.limit !== undefined)) {
        throw new ProcwardError('INVALID_ARGUMENT', 'log takes either a cursor or offset/limit, not both');
      }
      const from = input.cursor !== undefined ? { cursor: input.cursor } : { ...(input.offset !== undefined && { offset: input.offset }), ...(input.limit !== undefined && { limit: input.limit }) };
      const events = await eventsFirst(registry, ctx, maxChars);
      const out = await readOutput(registry, id, { from, maxChars, ...(input.max_bytes !== undefined && { maxBytes: input.max_bytes }), ...(filter && { filter }) });
      return { result: { ...out, ...events }, maxChars, delivered: true };
    }
    case 'wait': {
      const { result: w, aborted, clamped } = await waitForHost(registry, id, input.timeout_ms ?? 30_000, options);
      const note = aborted
        ? 'the call was aborted; the job is still running: call wait again'
        : clamped
          ? 'still running, call again: a wait lasts at most 50 s when the host takes no progress notifications'
          : w.processRunning
            ? 'still running after timeout_ms: call wait again, or poll'
            : undefined;
      const { outputPreview, ...rest } = w;
      const output = input.cursor === undefined ? { outputPreview, ...(await endCursor(w.id)) } : await since(w.id);
      return { result: { ...rest, ...output, ...(aborted && { aborted: true }), ...(note && { note }) }, maxChars };
    }
    case 'kill':
      return { result: await killForHost(registry, id, input.grace_ms, options.signal, surface), maxChars };
    case 'signal':
      if (input.signal === undefined) throw new ProcwardError('INVALID_ARGUMENT', 'signal needs signal (a name such as SIGINT)');
      return { result: await registry.signal(id, input.signal), maxChars };
    case 'screen': {
      // Up to 512 × 256 cells: the rows as one text, within the budget like all output.
      const { lines, ...screen } = await registry.screen(id);
      const fitted = fitText(lines.join('\n'), maxChars, 0);
      return { result: { ...screen, text: fitted.text, ...(fitted.omitted && { truncated: fitted.omitted }) }, maxChars };
    }
    case 'write':
      if (input.data === undefined) throw new ProcwardError('INVALID_ARGUMENT', 'write needs data');
      return { result: await registry.write(id, input.data), maxChars };
    case 'submit':
      // No text is Enter alone (issue 28, kind 12): what a model means by "press Enter".
      return { result: await registry.submit(id, input.text ?? ''), maxChars };
    case 'close':
      return { result: await registry.closeStdin(id), maxChars };
  }
}

/**
 * The kill of a tool call. The host's abort signal ends the CALL, not the kill: a grace
 * period may last up to an hour, and a cancelled MCP request must not hold its call open
 * that long. On abort the result says the kill is under way (`aborted: true`, the
 * session's status now); the registry goes on with it in the background (SIGKILL still
 * follows the grace period) and publishes the end as any kill does. Errors: those of
 * `registry.kill` that come before the abort.
 */
async function killForHost(registry: ProcessRegistry, id: string, graceMs: number | undefined, signal: AbortSignal | undefined, surface: ToolSurface): Promise<object> {
  const killing = registry.kill(id, graceMs !== undefined ? { graceMs } : {});
  if (!signal) return await killing;
  // The kill may fail after the call returned: nobody waits for it then.
  killing.catch(() => {});
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const first = await Promise.race([killing, aborted]);
    if (first !== 'aborted') return first;
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
  const now = await registry.poll(id);
  const under = now.status === 'running' ? 'SIGKILL follows the grace period for what outlives SIGTERM' : 'the job has ended';
  return { id, status: now.status, aborted: true, note: `the call was aborted; the kill goes on in the background (${under}): call ${callOf(['poll', 'wait'], surface)} for its end` };
}

