// DESIGN section 8 (LLM tool), issue 17 item 4: a strict variant of each tool per provider,
// checked against each provider's documented rules, meta-validated by ajv, and taken by
// @openai/agents' strict conversion. The rules (ts/surfaces/providers/rules.ts) are written from:
// - OpenAI: https://platform.openai.com/docs/guides/structured-outputs#supported-schemas and
//   https://platform.openai.com/docs/guides/function-calling#strict-mode
// - Anthropic: https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations
//   and https://platform.claude.com/docs/en/agents-and-tools/tool-use/strict-tool-use
// - Gemini: https://ai.google.dev/api/caching#Schema and
//   https://ai.google.dev/gemini-api/docs/function-calling#function_declarations
import { Agent, type Model, type ModelRequest, type ModelResponse, run, tool, Usage } from '@openai/agents';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { handleToolCall, toolDefinitions, toolDefinitionsFor } from '../dist/index.mjs';
import { DIALECTS } from '../ts/surfaces/providers/dialect.js';
import { providerViolations } from '../ts/surfaces/providers/rules.js';
import { type JsonSchema, toStrictSchema } from '../ts/surfaces/providers/strictschema.js';
import { cleanupGroup, perTestRegistry } from './support.js';

const ctx = perTestRegistry();

const STRICT = ['openai-chat', 'openai-responses', 'anthropic', 'gemini'] as const;
type Strict = (typeof STRICT)[number];

/** The name and input schema of each tool of a provider's list, whatever its outer shape. */
function schemasOf(provider: Strict): [string, JsonSchema][] {
  return (toolDefinitionsFor(provider) as any[]).map((t) => {
    if (provider === 'openai-chat') return [t.function.name, t.function.parameters];
    if (provider === 'anthropic') return [t.name, t.input_schema];
    return [t.name, t.parameters];
  });
}

const draft7 = new Ajv({ strict: false });
const draft2020 = new Ajv2020({ strict: false });

/** Every optional field of a schema's base, null: what a strict OpenAI model sends for fields it does not use. */
function allNull(name: string, given: Record<string, unknown>): Record<string, unknown> {
  const base = toolDefinitions().find((t) => t.name === name)!.input_schema as any;
  return { ...Object.fromEntries(Object.keys(base.properties).map((k) => [k, null])), ...given };
}

describe('strict tool variants per provider', () => {
  it.each(STRICT)('%s: every tool passes the rules the provider documents, and has every base tool', (provider) => {
    const tools = toolDefinitionsFor(provider) as unknown[];
    expect(providerViolations(provider, tools)).toEqual([]);
    expect(schemasOf(provider).map(([n]) => n)).toEqual(toolDefinitions().map((t) => t.name));
  });

  it.each(STRICT)('%s: every variant is a valid draft-07 and 2020-12 JSON Schema', (provider) => {
    for (const [name, schema] of schemasOf(provider)) {
      expect(draft7.validateSchema(schema), `${name}: ${draft7.errorsText()}`).toBe(true);
      expect(draft2020.validateSchema(schema), `${name}: ${draft2020.errorsText()}`).toBe(true);
      // Compiling in ajv's strict mode also refuses unknown keywords and contradictory types.
      expect(() => new Ajv({ strict: true, allowUnionTypes: true }).compile(schema)).not.toThrow();
    }
  });

  it('the outer shapes are the ones each API takes', () => {
    const [chat] = toolDefinitionsFor('openai-chat');
    expect(Object.keys(chat!)).toEqual(['type', 'function']);
    expect(chat!.function).toMatchObject({ name: 'process_start', strict: true, parameters: { type: 'object', additionalProperties: false } });
    const [responses] = toolDefinitionsFor('openai-responses');
    expect(responses).toMatchObject({ type: 'function', name: 'process_start', strict: true });
    expect(toolDefinitionsFor('anthropic')[0]).toMatchObject({ name: 'process_start', strict: true, input_schema: { type: 'object' } });
    expect(Object.keys(toolDefinitionsFor('gemini')[0]!).sort()).toEqual(['description', 'name', 'parameters']);
    expect(toolDefinitionsFor('default')).toEqual(toolDefinitions());
    expect(() => toolDefinitionsFor('mistral' as never)).toThrow(/unknown provider "mistral"/);
    expect(() => toolDefinitionsFor('openai' as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', details: expect.objectContaining({ provider: 'openai' }) }));
  });

  it('the base schemas break exactly the rules the field report names (so the checks can fail)', () => {
    const base = toolDefinitions();
    const asChat = base.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.input_schema, strict: true } }));
    const openai = providerViolations('openai-chat', asChat).map((v) => `${v.path} ${v.rule}`);
    expect(openai).toContain('/properties/command the keyword "minLength"');
    expect(openai).toContain('/properties/env the keyword "propertyNames"');
    expect(openai).toContain('/properties/session_id a type union other than [T, "null"]');
    expect(openai).toContain('/properties/workdir a property not listed in required');
    const asAnthropic = base.map((t) => ({ ...t, strict: true }));
    const anthropic = providerViolations('anthropic', asAnthropic).map((v) => `${v.path} ${v.rule}`);
    expect(anthropic).toContain('/properties/timeout_ms the keyword "minimum"');
    expect(anthropic).toContain('/properties/timeout_ms the keyword "maximum"');
    expect(anthropic).toContain('/properties/command the keyword "minLength"');
    const asGemini = base.map((t) => ({ name: t.name, description: t.description, parameters: t.input_schema }));
    const gemini = providerViolations('gemini', asGemini).map((v) => `${v.path} ${v.rule}`);
    expect(gemini).toContain('/ the keyword "additionalProperties"');
    expect(gemini).toContain('/properties/session_id a type that is not one OpenAPI type');
  });

  it('a variant with a refused keyword put back, or the wrong outer shape, is caught', () => {
    const chat = structuredClone(toolDefinitionsFor('openai-chat')) as any[];
    chat[0].function.parameters.properties.command.minLength = 1;
    expect(providerViolations('openai-chat', chat)).toEqual([{ tool: 'process_start', path: '/properties/command', rule: 'the keyword "minLength"' }]);
    const anthropic = structuredClone(toolDefinitionsFor('anthropic')) as any[];
    anthropic[1].strict = false;
    anthropic[1].input_schema.properties.limit.maximum = 10;
    expect(providerViolations('anthropic', anthropic).map((v) => v.rule)).toEqual(['strict is not true', 'the keyword "maximum"']);
    expect(providerViolations('openai-responses', toolDefinitionsFor('openai-chat')).map((v) => v.rule)).toEqual([
      'the tool is not { type: "function", name, parameters }',
      'the tool is not { type: "function", name, parameters }',
    ]);
    const gemini = structuredClone(toolDefinitionsFor('gemini')) as any[];
    gemini[0].parameters.properties.env.items.additionalProperties = false;
    expect(providerViolations('gemini', gemini)).toEqual([{ tool: 'process_start', path: '/properties/env/items', rule: 'the keyword "additionalProperties"' }]);
  });

  it('refused constraints are said in the description; env is a list of name/value pairs; session_id is a string', () => {
    const [start, proc] = schemasOf('openai-responses').map(([, s]) => s as any);
    expect(start.properties.command.description).toMatch(/At least 1 character\.$/);
    expect(proc.properties.timeout_ms.description).toContain('From 1 to 86400000');
    expect(start.properties.env.anyOf[0]).toMatchObject({ type: 'array', items: { required: ['name', 'value'], properties: { name: { type: 'string' }, value: { type: 'string' } } } });
    expect(proc.properties.session_id.anyOf).toEqual([{ type: 'string' }, { type: 'null' }]);
    // Anthropic: optional stays optional (no union), within its limits.
    const [aStart] = schemasOf('anthropic').map(([, s]) => s as any);
    expect(aStart.required).toEqual(['command']);
    expect(aStart.properties.workdir).toEqual({ type: 'string', description: 'Working directory.' });
  });
});

describe('the transformer works on any zod-derived schema', () => {
  // Field kinds the base schemas may gain: nested optional objects, maps of numbers, enums,
  // literals, arrays of objects, nullable and defaulted fields, number unions.
  const future = z
    .object({
      mode: z.enum(['a', 'b']),
      kind: z.literal('x').optional(),
      limits: z.object({ cpu: z.number().min(0).max(4).optional(), note: z.string().max(20) }).strict().optional(),
      labels: z.record(z.string().regex(/^[a-z]+$/), z.number().int()).optional(),
      steps: z.array(z.object({ cmd: z.string().min(1), retries: z.number().int().nonnegative().default(0) }).strict()).min(1).max(5).optional(),
      id: z.union([z.string(), z.number()]).nullable(),
      ratio: z.union([z.number(), z.number().int()]).optional(),
    })
    .strict();
  const base = z.toJSONSchema(future, { io: 'input' }) as JsonSchema;

  it.each(['openai', 'anthropic', 'gemini'] as const)('%s: a schema with new field kinds converts and passes the rules', (provider) => {
    const schema = toStrictSchema(base, DIALECTS[provider]);
    const shaped =
      provider === 'openai'
        ? { type: 'function', name: 'future', description: 'd', parameters: schema, strict: true }
        : provider === 'anthropic'
          ? { name: 'future', description: 'd', input_schema: schema, strict: true }
          : { name: 'future', description: 'd', parameters: schema };
    expect(providerViolations(provider === 'openai' ? 'openai-responses' : provider, [shaped])).toEqual([]);
    expect(draft2020.validateSchema(schema)).toBe(true);
    expect(JSON.stringify(schema)).not.toContain('$schema');
    // The map of numbers became pairs whose value is an integer; its name pattern is in words.
    const labels = (schema as any).properties.labels;
    const pairs = labels.anyOf?.[0] ?? labels;
    expect(pairs.items.properties.value).toEqual({ type: 'integer' });
    expect(pairs.items.properties.name.description).toContain('^[a-z]+$');
  });

  it('OpenAI: the value a strict model sends (null for the unused) is valid against the variant', () => {
    const schema = toStrictSchema(base, DIALECTS.openai);
    const validate = new Ajv({ strict: false }).compile(schema);
    const sent = { mode: 'a', kind: null, limits: null, labels: [{ name: 'x', value: 2 }], steps: null, id: 'abc', ratio: null };
    expect(validate(sent), draft7.errorsText(validate.errors)).toBe(true);
    expect(validate({ ...sent, extra: 1 })).toBe(false);
  });

  it('Anthropic: past 24 optional parameters in a set, the rest are required and nullable, within 16 unions', () => {
    const wide = (n: number) => z.toJSONSchema(z.object(Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, z.string().optional()]))).strict()) as JsonSchema;
    const budget = { remaining: DIALECTS.anthropic.optionalBudget };
    const tools = [wide(20), wide(14)].map((s, i) => ({ name: `t${i}`, input_schema: toStrictSchema(s, DIALECTS.anthropic, budget), strict: true }));
    expect(providerViolations('anthropic', tools)).toEqual([]);
    expect((tools[1]!.input_schema.required as string[]).length).toBe(10);
    // One more than the union budget allows: the rule check says so.
    const budget2 = { remaining: DIALECTS.anthropic.optionalBudget };
    const tooMany = [wide(24), wide(17)].map((s, i) => ({ name: `t${i}`, input_schema: toStrictSchema(s, DIALECTS.anthropic, budget2), strict: true }));
    expect(providerViolations('anthropic', tooMany)).toEqual([{ tool: '*', path: '/', rule: '17 union-typed parameters (at most 16 per request)' }]);
  });

  it('a construct no strict dialect can express is an error naming its path', () => {
    const tuple = z.toJSONSchema(z.object({ pair: z.tuple([z.string(), z.number()]) }).strict()) as JsonSchema;
    expect(() => toStrictSchema(tuple, DIALECTS.openai)).toThrow(/\/properties\/pair: the keyword "prefixItems"/);
    const both: JsonSchema = { type: 'object', properties: { x: { allOf: [{ type: 'string' }, { minLength: 2 }] } }, required: ['x'] };
    expect(() => toStrictSchema(both, DIALECTS.anthropic)).toThrow(/\/properties\/x: the keyword "allOf"/);
    const node = z.object({ name: z.string(), get children() {
      return z.array(node).optional();
    } });
    expect(() => toStrictSchema(z.toJSONSchema(node) as JsonSchema, DIALECTS.openai)).toThrow(/\$ref/);
    expect(() => toStrictSchema({ type: 'string' }, DIALECTS.gemini)).toThrow(/root is not an object/);
  });
});

describe('@openai/agents takes the OpenAI variant as strict', () => {
  it('its strict conversion leaves the variant unchanged (it is already strict); the base changes and stays refused', () => {
    for (const def of toolDefinitionsFor('openai-responses')) {
      const t = tool({ name: def.name, description: def.description, parameters: def.parameters as any, strict: true, execute: async () => '' });
      expect(t.parameters).toEqual(def.parameters);
      expect(t.strict).toBe(true);
    }
    const converted = toolDefinitions().map((d) => {
      const t = tool({ name: d.name, description: d.description, parameters: d.input_schema as any, strict: true, execute: async () => '' });
      return { type: 'function', name: t.name, description: t.description, parameters: t.parameters, strict: true };
    });
    expect(providerViolations('openai-responses', converted).length).toBeGreaterThan(0);
  });

  it('a run with a model that calls `process` with nulls for the unused fields reaches the registry and returns its answer', async () => {
    const started = await handleToolCall(ctx.registry, 'process_start', { command: 'echo hi', task_id: 'agents' });
    const sessionId = (started as any).session_id as string;
    cleanupGroup((started as any).pid);
    const seen: ModelRequest[] = [];
    const model: Model = {
      async getResponse(request): Promise<ModelResponse> {
        seen.push(request);
        const usage = new Usage();
        if (seen.length === 1) {
          const args = allNull('process', { action: 'list', task_id: '' });
          return { usage, output: [{ type: 'function_call', callId: 'c1', name: 'process', arguments: JSON.stringify(args), status: 'completed' }] };
        }
        const result = (request.input as any[]).find((i) => i.type === 'function_call_result');
        return { usage, output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: JSON.stringify(result.output) }] }] };
      },
      getStreamedResponse() {
        throw new Error('not streamed in this test');
      },
    };
    const tools = toolDefinitionsFor('openai-responses').map((def) =>
      tool({ name: def.name, description: def.description, parameters: def.parameters as any, strict: true, execute: async (input) => JSON.stringify(await handleToolCall(ctx.registry, def.name, input)) }),
    );
    const result = await run(new Agent({ name: 'ops', instructions: 'Manage jobs.', model, tools }), 'What is running?');
    // What the SDK would send to OpenAI is our variant, strict.
    const sent = seen[0]!.tools.filter((t: any) => t.type === 'function');
    expect(providerViolations('openai-responses', sent.map((t: any) => ({ type: 'function', name: t.name, description: t.description, parameters: t.parameters, strict: t.strict })))).toEqual([]);
    expect(result.finalOutput).toContain(sessionId);
  });
});
