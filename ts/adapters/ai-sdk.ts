/**
 * procward's tools for the Vercel AI SDK (`ai`, version 5 or later): `procward/ai-sdk`.
 *
 * ```ts
 * import { generateText, stepCountIs } from 'ai';
 * import { ProcessRegistry } from 'procward';
 * import { procwardTools } from 'procward/ai-sdk';
 *
 * const registry = await ProcessRegistry.open({ stateDir });
 * const { text } = await generateText({
 *   model, prompt: 'Run the tests', stopWhen: stepCountIs(8), abortSignal,
 *   tools: procwardTools(registry, { context: { taskId: 'build-42' } }),
 * });
 * ```
 *
 * `ai` is an optional peer dependency: importing this module without it installed fails
 * with Node's own "Cannot find package 'ai'" error.
 */
import { jsonSchema, type Tool, tool } from 'ai';
import type { ProcessRegistry, ToolProvider, ToolResult } from 'procward';
import { type ProcwardToolName, type ProcwardToolsOptions, runTool, toolSpecs } from './neutraltools.js';

/** Options of {@link procwardTools}. */
export interface AiSdkToolsOptions extends ProcwardToolsOptions {
  /**
   * Whose schema dialect the tools declare (see `toolDefinitionsFor`). Default `'default'`:
   * the full JSON Schema, which the AI SDK's providers take in their default, non-strict
   * mode. `'openai-chat'`, `'openai-responses'` or `'anthropic'` declare that provider's
   * strict variant and set the tool's `strict: true`; `'gemini'` drops what Gemini refuses.
   */
  provider?: ToolProvider;
}

/**
 * The tool set `{ process_start, process }` for `generateText`/`streamText`'s `tools`.
 * Each `execute` runs the call against `registry` (see `handleToolCall`) and returns its
 * result object (snake_case keys, output redacted and cut to the call's `max_chars`), or
 * `{ error: { code, message } }`: it never throws, so the model reads every failure. The AI
 * SDK's `abortSignal` reaches the wait: aborting the generation ends a running `wait` at
 * once (the job keeps running; the result says `aborted: true`). The input is not
 * validated by the SDK: the handler checks it, reads what strict models send (null for
 * unused fields, numeric strings) and names the closest key for a misspelt one.
 */
export function procwardTools(registry: ProcessRegistry, options: AiSdkToolsOptions = {}): Record<ProcwardToolName, Tool<unknown, ToolResult>> {
  const tools = {} as Record<ProcwardToolName, Tool<unknown, ToolResult>>;
  for (const spec of toolSpecs(options.provider)) {
    tools[spec.name] = tool<unknown, ToolResult>({
      description: spec.description,
      // No `validate`: the AI SDK passes the model's input through as it came.
      inputSchema: jsonSchema<unknown>(spec.parameters as Parameters<typeof jsonSchema>[0]),
      ...(spec.strict && { strict: true }),
      execute: (input, { abortSignal }) => runTool(registry, spec.name, input, options, abortSignal),
    });
  }
  return tools;
}
