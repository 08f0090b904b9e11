/**
 * procward's tools for the OpenAI Agents SDK (`@openai/agents`): `procward/openai-agents`.
 *
 * ```ts
 * import { Agent, run } from '@openai/agents';
 * import { ProcessRegistry } from 'procward';
 * import { procwardTools } from 'procward/openai-agents';
 *
 * const registry = await ProcessRegistry.open({ stateDir });
 * const agent = new Agent({ name: 'ops', instructions: '...', tools: procwardTools(registry, { context: { taskId: 'build-42' } }) });
 * const result = await run(agent, 'Start the dev server and tell me its port', { signal });
 * ```
 *
 * `@openai/agents` is an optional peer dependency: importing this module without it
 * installed fails with Node's own "Cannot find package '@openai/agents'" error.
 */
import { type FunctionTool, tool } from '@openai/agents';
import type { ProcessRegistry } from 'procward';
import { type ProcwardToolsOptions, resultText, runTool, toolSpecs } from './neutraltools.js';

/** Options of {@link procwardTools}. */
export type OpenAiAgentsToolsOptions = ProcwardToolsOptions;

/** The parameters type the SDK's `tool()` takes for a strict tool declared in JSON Schema. */
type StrictParameters = Extract<Parameters<typeof tool>[0], { strict?: true }>['parameters'];

/**
 * The tools `[process_start, process]` as the SDK's function tools, declared with the
 * OpenAI Responses strict variant of the schemas (`strict: true`: every field is sent,
 * null for the unused ones; `env` as `{ name, value }` pairs), which the SDK passes to the
 * model unchanged. Each call runs against `registry` (see `handleToolCall`) and returns the
 * result as JSON text (snake_case keys, output redacted and cut to the call's `max_chars`);
 * procward's failures are results (`{ error: { code, message } }`), never exceptions. The
 * run's abort signal (`run(agent, input, { signal })`, or a tool timeout) ends a running
 * `wait` at once; the job keeps running.
 */
export function procwardTools(registry: ProcessRegistry, options: OpenAiAgentsToolsOptions = {}): FunctionTool[] {
  return toolSpecs('openai-responses').map(
    (spec) =>
      tool({
        name: spec.name,
        description: spec.description,
        parameters: spec.parameters as StrictParameters,
        strict: true,
        execute: async (input, _runContext, details) => resultText(await runTool(registry, spec.name, input, options, details?.signal)),
      }) as FunctionTool,
  );
}
