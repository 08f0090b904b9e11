/**
 * procward's tools for LangChain.js (`@langchain/core` 1.x): `procward/langchain`.
 *
 * ```ts
 * import { ProcessRegistry } from 'procward';
 * import { procwardTools } from 'procward/langchain';
 *
 * const registry = await ProcessRegistry.open({ stateDir });
 * const tools = procwardTools(registry, { context: { taskId: 'build-42' } });
 * const model = chatModel.bindTools(tools);          // or createAgent({ model, tools })
 * // for each call in the AI message: messages.push(await byName[call.name].invoke(call));
 * ```
 *
 * `@langchain/core` is an optional peer dependency: importing this module without it
 * installed fails with Node's own "Cannot find package '@langchain/core'" error.
 */
import { type DynamicStructuredTool, tool } from '@langchain/core/tools';
import type { ProcessRegistry, ToolProvider, ToolResult } from 'procward';
import { type ProcwardToolsOptions, resultText, runTool, toolSpecs } from './neutraltools.js';

/** Options of {@link procwardTools}. */
export interface LangChainToolsOptions extends ProcwardToolsOptions {
  /**
   * Whose schema dialect the tools declare (see `toolDefinitionsFor`). Default `'default'`:
   * the full JSON Schema. With a strict model binding (`bindTools(tools, { strict: true })`
   * on ChatOpenAI) use `'openai-chat'`, with Gemini `'gemini'`. LangChain checks each call's
   * input against this schema before the tool runs, so a strict variant is also what lets
   * the null that strict models send for unused fields through.
   */
  provider?: ToolProvider;
}

/**
 * The tools `[process_start, process]` as LangChain structured tools (for `bindTools`, an
 * agent's `tools`, a `ToolNode`). Invoked with a tool call, each returns a `ToolMessage`
 * whose content is the result as JSON text (snake_case keys, output redacted and cut to the
 * call's `max_chars`) and whose `artifact` is the same result as an object. Failures of
 * procward are results (`{ error: { code, message } }`), never exceptions; LangChain itself
 * throws `ToolInputParsingException` (with the schema's complaint) for input that does not
 * match the declared schema. The run's abort signal (`config.signal`) ends a running `wait`
 * at once; LangChain then rejects the invocation with its abort error.
 */
export function procwardTools(registry: ProcessRegistry, options: LangChainToolsOptions = {}): DynamicStructuredTool[] {
  return toolSpecs(options.provider).map(
    (spec) =>
      tool(
        async (input: unknown, config): Promise<[string, ToolResult]> => {
          const result = await runTool(registry, spec.name, input, options, config?.signal);
          return [resultText(result), result];
        },
        {
          name: spec.name,
          description: spec.description,
          schema: spec.parameters,
          responseFormat: 'content_and_artifact',
          // The schema's own words for a refused input (which key, which rule), not only "did not match".
          verboseParsingErrors: true,
        },
      ) as DynamicStructuredTool,
  );
}
