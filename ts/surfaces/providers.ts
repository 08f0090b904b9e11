/**
 * The tool definitions in the shape and strict dialect each LLM provider takes:
 * {@link toolDefinitionsFor}. Built from the live base schemas (`tool/schema.ts`) by the
 * generic transformer (`strictschema.ts`), so they follow every field added there.
 */
import { ProcwardError } from '../errors.js';
import { type ToolDefinition, toolDefinitions } from './tool/schema.js';
import { DIALECTS, type StrictProvider } from './providers/dialect.js';
import { type JsonSchema, type OptionalBudget, toStrictSchema } from './providers/strictschema.js';

export type { StrictProvider } from './providers/dialect.js';
export type { JsonSchema } from './providers/strictschema.js';

/** The targets of {@link toolDefinitionsFor}. */
export type ToolProvider = 'openai-chat' | 'openai-responses' | 'anthropic' | 'gemini' | 'default';

/** OpenAI Chat Completions: an entry of `tools`. */
export interface OpenAiChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema; strict: true };
}

/** OpenAI Responses API: an entry of `tools`. */
export interface OpenAiResponsesTool {
  type: 'function';
  name: string;
  description: string;
  parameters: JsonSchema;
  strict: true;
}

/** Anthropic Messages API: an entry of `tools`. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: JsonSchema;
  strict: true;
}

/** Gemini: an entry of `tools[].functionDeclarations`. */
export interface GeminiFunctionDeclaration {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** What {@link toolDefinitionsFor} returns for each provider. */
export interface ProviderToolDefinitions {
  'openai-chat': OpenAiChatTool[];
  'openai-responses': OpenAiResponsesTool[];
  anthropic: AnthropicTool[];
  gemini: GeminiFunctionDeclaration[];
  default: ToolDefinition[];
}

/** Said once per tool in dialects where unused fields are required and nullable. */
const NULL_MEANS_UNSET = ' Send null for every field that does not apply.';

/** The base tool definitions with their input schemas in `provider`'s strict dialect (one budget for the set). */
function strictTools(provider: StrictProvider): ToolDefinition[] {
  const dialect = DIALECTS[provider];
  const budget: OptionalBudget = { remaining: dialect.optionalBudget };
  return toolDefinitions().map((t) => {
    const input_schema = toStrictSchema(t.input_schema, dialect, budget);
    const nullable = JSON.stringify(input_schema).includes('{"type":"null"}');
    return { name: t.name, description: nullable ? `${t.description}${NULL_MEANS_UNSET}` : t.description, input_schema };
  });
}

/**
 * The tools (`process_start`, `process`) for one provider, strict where it has a strict mode:
 *
 * - `openai-chat`: `{ type: 'function', function: { name, description, parameters, strict: true } }`
 * - `openai-responses`: `{ type: 'function', name, description, parameters, strict: true }`
 * - `anthropic`: `{ name, description, input_schema, strict: true }`
 * - `gemini`: function declarations `{ name, description, parameters }`
 * - `default`: the base `{ name, description, input_schema }` (not strict, full JSON Schema)
 *
 * In the strict variants: every optional field is nullable and required (OpenAI), omitted
 * (Gemini) or either within Anthropic's per-request limits; `env` is a list of
 * `{ name, value }` pairs; `session_id` is a string; constraints a provider refuses are in
 * the descriptions. `handleToolCall` reads what models send for all of them (null for an
 * unused field, env pairs, numeric strings). Throws only if the base schema gained a
 * construct no strict dialect can express (an `Error` naming its path); an unknown provider
 * is `INVALID_ARGUMENT` (details: `provider`, `allowed`).
 */
export function toolDefinitionsFor<P extends ToolProvider>(provider: P): ProviderToolDefinitions[P];
export function toolDefinitionsFor(provider: ToolProvider): ProviderToolDefinitions[ToolProvider] {
  switch (provider) {
    case 'openai-chat':
      return strictTools('openai').map((t): OpenAiChatTool => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.input_schema, strict: true } }));
    case 'openai-responses':
      return strictTools('openai').map((t): OpenAiResponsesTool => ({ type: 'function', name: t.name, description: t.description, parameters: t.input_schema, strict: true }));
    case 'anthropic':
      return strictTools('anthropic').map((t): AnthropicTool => ({ ...t, strict: true }));
    case 'gemini':
      return strictTools('gemini').map((t): GeminiFunctionDeclaration => ({ name: t.name, description: t.description, parameters: t.input_schema }));
    case 'default':
      return toolDefinitions();
    default:
      throw new ProcwardError('INVALID_ARGUMENT', `unknown provider ${JSON.stringify(provider)}; the providers are openai-chat, openai-responses, anthropic, gemini, default`, {
        provider,
        allowed: ['openai-chat', 'openai-responses', 'anthropic', 'gemini', 'default'],
      });
  }
}
