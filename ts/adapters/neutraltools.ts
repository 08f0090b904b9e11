/**
 * What the framework adapters (`procward/ai-sdk`, `procward/langchain`,
 * `procward/openai-agents`) share: the two tools in one neutral shape, and one call into
 * {@link handleToolCall}.
 *
 * The adapters import the library as `procward` (the package's own name), never by a
 * relative path: their bundles then load the same `dist/index.*` as the application, so
 * the registry the application opened and the handler the adapter calls are one copy (the
 * bundle stays small, and a class check or a module-level table is never split in two).
 */
import { handleToolCall, type ProcessRegistry, type ToolCallOptions, type ToolContext, type ToolProvider, type ToolResult, toolDefinitionsFor } from 'procward';

/** The names of procward's tools, as the model sees them. */
export type ProcwardToolName = 'process_start' | 'process';

/** What every adapter takes besides the registry. */
export interface ProcwardToolsOptions {
  /**
   * The host's context for every call: `taskId` and `sessionKey` file new jobs and limit
   * what the model may see and act on (other sessions are `UNKNOWN_SESSION`);
   * `notifications: false` keeps pending events out of results. Default `{}`: unscoped.
   */
  context?: ToolContext;
  /**
   * Called about once a second while a `wait` (or `process_start` with `yield_ms`) runs.
   * Without it, one call waits at most 50 s and then answers "still running, call again"
   * (so a model's 10-minute `timeout_ms` cannot hold an agent loop that long in one step);
   * with it, a wait lasts the whole `timeout_ms` the model asked for.
   */
  onProgress?: ToolCallOptions['onProgress'];
}

/** One tool in a neutral shape: its name, description, JSON Schema of its input, and whether it is a provider's strict variant. */
export interface ToolSpec {
  name: ProcwardToolName;
  description: string;
  parameters: Record<string, unknown>;
  /** `true` for the OpenAI and Anthropic strict variants (every field present, unused ones null). */
  strict: boolean;
}

/**
 * The two tools with the input schema of `provider` (see `toolDefinitionsFor`):
 * `'default'` is the full JSON Schema (optional fields may be left out); `'openai-chat'`,
 * `'openai-responses'` and `'anthropic'` are strict (unused fields are sent as null, `env`
 * as `{ name, value }` pairs); `'gemini'` has no `additionalProperties` and no type unions.
 * Throws a `TypeError` for another provider name.
 */
export function toolSpecs(provider: ToolProvider = 'default'): ToolSpec[] {
  switch (provider) {
    case 'default':
      return toolDefinitionsFor('default').map((t) => spec(t.name, t.description, t.input_schema, false));
    case 'openai-chat':
      return toolDefinitionsFor('openai-chat').map((t) => spec(t.function.name, t.function.description, t.function.parameters, true));
    case 'openai-responses':
      return toolDefinitionsFor('openai-responses').map((t) => spec(t.name, t.description, t.parameters, true));
    case 'anthropic':
      return toolDefinitionsFor('anthropic').map((t) => spec(t.name, t.description, t.input_schema, true));
    case 'gemini':
      return toolDefinitionsFor('gemini').map((t) => spec(t.name, t.description, t.parameters, false));
    default:
      throw new TypeError(`unknown provider ${JSON.stringify(provider)}; the providers are default, openai-chat, openai-responses, anthropic, gemini`);
  }
}

function spec(name: string, description: string, parameters: Record<string, unknown>, strict: boolean): ToolSpec {
  if (name !== 'process_start' && name !== 'process') throw new Error(`procward defines a tool ${JSON.stringify(name)} the adapters do not know`);
  return { name, description, parameters, strict };
}

/**
 * Runs one tool call of the model through {@link handleToolCall}: never throws, a failure
 * is `{ error: { code, message } }` for the model to read. `signal` is the framework's
 * abort signal for this call (an aborted `wait` returns at once with `aborted: true`).
 */
export function runTool(registry: ProcessRegistry, name: ProcwardToolName, input: unknown, options: ProcwardToolsOptions, signal?: AbortSignal): Promise<ToolResult> {
  return handleToolCall(registry, name, input, options.context ?? {}, {
    ...(signal && { signal }),
    ...(options.onProgress && { onProgress: options.onProgress }),
  });
}

/** A tool result as the text a model reads: JSON, with control characters escaped (job output is untrusted). */
export function resultText(result: ToolResult): string {
  return JSON.stringify(result);
}
