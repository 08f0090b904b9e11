/**
 * What each LLM provider's strict tool mode accepts of JSON Schema, as data: the keywords a
 * schema node may keep, how an optional field is spelt, whether objects must be closed.
 * The transformer (`strictschema.ts`) reads these; the documented rules the result is
 * checked against are in `rules.ts`.
 */

/** The providers with a strict variant. */
export type StrictProvider = 'openai' | 'anthropic' | 'gemini';

/**
 * How a field the base schema leaves optional is spelt in the variant:
 * - `nullable`: listed in `required`, and `null` is one of its values (OpenAI strict mode
 *   wants every property required).
 * - `omittable`: left out of `required`, no `null` branch (Gemini).
 * - `budget`: omittable while the tool set's optional-parameter budget lasts, nullable after
 *   (Anthropic caps both optional parameters and union-typed parameters per request).
 */
export type Optionality = 'nullable' | 'omittable' | 'budget';

export interface Dialect {
  provider: StrictProvider;
  optionality: Optionality;
  /** Every object gets `additionalProperties: false` (true) or loses the keyword (false). */
  closeObjects: boolean;
  /** Keywords a node may keep besides the structural ones the transformer writes itself. */
  keep: ReadonlySet<string>;
  /** String `format` values the provider accepts; any other format moves into the description. */
  formats: ReadonlySet<string>;
  /** Optional parameters a whole tool set may have before the rest become nullable (`budget` only). */
  optionalBudget: number;
}

/**
 * OpenAI structured outputs, as used by strict function calling in Chat Completions and
 * the Responses API (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas).
 * Kept to the subset every strict model takes, fine-tuned ones included: no string, number
 * or array constraints (they move into the description).
 */
const openai: Dialect = {
  provider: 'openai',
  optionality: 'nullable',
  closeObjects: true,
  keep: new Set(['description', 'enum']),
  formats: new Set(),
  optionalBudget: 0,
};

/**
 * Anthropic strict tool use (https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations):
 * no numeric or string-length constraints, `additionalProperties: false` on every object,
 * at most 24 optional and 16 union-typed parameters across the strict tools of a request.
 */
const anthropic: Dialect = {
  provider: 'anthropic',
  optionality: 'budget',
  closeObjects: true,
  keep: new Set(['description', 'enum']),
  formats: new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'uri', 'ipv4', 'ipv6', 'uuid']),
  optionalBudget: 24,
};

/**
 * Gemini function declarations: a subset of the OpenAPI 3.0 Schema object
 * (https://ai.google.dev/api/caching#Schema): one `type` per node, no
 * `additionalProperties`, string formats limited to `enum` and `date-time`.
 */
const gemini: Dialect = {
  provider: 'gemini',
  optionality: 'omittable',
  closeObjects: false,
  keep: new Set(['description', 'enum', 'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems']),
  formats: new Set(['date-time']),
  optionalBudget: 0,
};

export const DIALECTS: Readonly<Record<StrictProvider, Dialect>> = { openai, anthropic, gemini };
