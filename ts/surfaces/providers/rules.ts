/**
 * Each provider's documented rules for strict tool schemas, written as checks:
 * {@link providerViolations} lists what a set of tool definitions breaks. They are written
 * from the providers' documentation, apart from the transformer, so a test can tell a
 * transformer bug from a rule change (and a host can check its own tools).
 */
import type { ToolProvider } from '../providers.js';

/** One broken rule: the tool, the JSON pointer of the node (`/properties/env`), and the rule in words. */
export interface Violation {
  tool: string;
  path: string;
  rule: string;
}

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

interface Rules {
  /** The keywords a node may have. */
  keywords: ReadonlySet<string>;
  /** Checks of one node beyond its keywords (its path relative to the tool's schema). */
  node(n: Node, path: string, report: (path: string, rule: string) => void): void;
}

/**
 * OpenAI strict mode (Chat Completions `strict: true`, Responses API default):
 * https://platform.openai.com/docs/guides/structured-outputs#supported-schemas and
 * https://platform.openai.com/docs/guides/function-calling#strict-mode — every object has
 * `additionalProperties: false` and lists every property in `required` (optional = a union
 * with null); string/number/array constraints are not supported for every model (fine-tuned
 * ones refuse them), so none are allowed here; a type is one type or `[T, "null"]`.
 * Limits (the older, smaller numbers, which every model meets): 100 object properties,
 * 5 levels of nesting, 500 enum values, 15 000 characters of names and enum values.
 */
const openai: Rules = {
  keywords: new Set(['type', 'description', 'title', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf', '$ref', '$defs']),
  node(n, path, report) {
    if (Array.isArray(n.type) && !(n.type.length === 2 && n.type.includes('null'))) report(path, 'a type union other than [T, "null"]');
    if (n.type === 'object' || isNode(n.properties)) {
      if (n.additionalProperties !== false) report(path, 'an object without additionalProperties: false');
      const props = isNode(n.properties) ? Object.keys(n.properties) : [];
      const required = new Set(Array.isArray(n.required) ? n.required : []);
      for (const p of props) if (!required.has(p)) report(`${path}/properties/${p}`, 'a property not listed in required');
    }
  },
};

/** String formats Anthropic strict mode supports. */
const ANTHROPIC_FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'uri', 'ipv4', 'ipv6', 'uuid']);

/**
 * Anthropic strict tool use:
 * https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations
 * — no numerical constraints (`minimum`, `maximum`, `multipleOf`), no string constraints
 * (`minLength`, `maxLength`), `minItems` only 0 or 1, `additionalProperties` only `false`
 * (and set on every object), enums of primitives, listed string formats. Per request: at
 * most 20 strict tools, 24 optional parameters and 16 union-typed parameters (`anyOf` or
 * type arrays), counted across all strict schemas.
 */
const anthropic: Rules = {
  keywords: new Set(['type', 'description', 'title', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf', 'allOf', '$ref', '$defs', 'definitions', 'default', 'format', 'pattern', 'minItems']),
  node(n, path, report) {
    if (Array.isArray(n.type) && n.type.some((t) => !JSON_TYPES.has(String(t)))) report(path, 'an unknown type');
    if ((n.type === 'object' || isNode(n.properties)) && n.additionalProperties !== false) report(path, 'an object without additionalProperties: false');
    if (n.minItems !== undefined && n.minItems !== 0 && n.minItems !== 1) report(path, 'minItems other than 0 or 1');
    if (n.format !== undefined && !ANTHROPIC_FORMATS.has(String(n.format))) report(path, `the unsupported format ${JSON.stringify(n.format)}`);
    if (Array.isArray(n.enum) && n.enum.some((v) => typeof v === 'object' && v !== null)) report(path, 'an enum of complex values');
  },
};

/**
 * Gemini function declarations: `parameters` is a Schema, "a select subset of an OpenAPI 3.0
 * schema object" (https://ai.google.dev/api/caching#Schema,
 * https://ai.google.dev/gemini-api/docs/function-calling#function_declarations): only its
 * listed fields (no `additionalProperties`, `$ref`, `oneOf`, `allOf`, `const`), one `type`
 * per node (no type arrays), enums of strings, string formats `enum` and `date-time` only,
 * property names of letters, digits and underscores (at most 64, not starting with a digit).
 */
const gemini: Rules = {
  keywords: new Set([
    'type',
    'format',
    'title',
    'description',
    'nullable',
    'enum',
    'maxItems',
    'minItems',
    'properties',
    'required',
    'minProperties',
    'maxProperties',
    'minLength',
    'maxLength',
    'pattern',
    'example',
    'anyOf',
    'propertyOrdering',
    'default',
    'items',
    'minimum',
    'maximum',
  ]),
  node(n, path, report) {
    if (n.type !== undefined && (typeof n.type !== 'string' || !JSON_TYPES.has(n.type.toLowerCase()) || n.type.toLowerCase() === 'null')) report(path, 'a type that is not one OpenAPI type');
    if (n.type === undefined && !Array.isArray(n.anyOf)) report(path, 'a node with neither type nor anyOf');
    if (Array.isArray(n.enum) && !n.enum.every((v) => typeof v === 'string')) report(path, 'an enum of non-strings');
    if (n.format !== undefined && String(n.type).toLowerCase() === 'string' && n.format !== 'enum' && n.format !== 'date-time') report(path, `the string format ${JSON.stringify(n.format)}`);
    if (isNode(n.properties)) for (const p of Object.keys(n.properties)) if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(p)) report(`${path}/properties/${p}`, 'a property name outside [A-Za-z_][A-Za-z0-9_]{0,63}');
  },
};

/** The sub-schemas of a node, with their pointers. */
function children(n: Node, path: string): [Node, string][] {
  const out: [Node, string][] = [];
  if (isNode(n.properties)) for (const [k, v] of Object.entries(n.properties)) if (isNode(v)) out.push([v, `${path}/properties/${k}`]);
  if (isNode(n.items)) out.push([n.items, `${path}/items`]);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    if (Array.isArray(n[key])) for (const [i, v] of n[key].entries()) if (isNode(v)) out.push([v, `${path}/${key}/${i}`]);
  }
  if (isNode(n.additionalProperties)) out.push([n.additionalProperties, `${path}/additionalProperties`]);
  for (const key of ['$defs', 'definitions'] as const) if (isNode(n[key])) for (const [k, v] of Object.entries(n[key])) if (isNode(v)) out.push([v, `${path}/${key}/${k}`]);
  return out;
}

/** Counts over one schema, for the per-schema and per-request limits. */
interface Tally {
  properties: number;
  depth: number;
  enumValues: number;
  chars: number;
  optional: number;
  unions: number;
}

function walk(n: Node, path: string, depth: number, rules: Rules, tally: Tally, report: (path: string, rule: string) => void): void {
  for (const key of Object.keys(n)) if (!rules.keywords.has(key)) report(path, `the keyword ${JSON.stringify(key)}`);
  if (Array.isArray(n.required) && isNode(n.properties)) {
    for (const r of n.required) if (!(String(r) in n.properties)) report(path, `required names ${JSON.stringify(r)}, which is not a property`);
  }
  rules.node(n, path, report);
  if (isNode(n.properties)) {
    const keys = Object.keys(n.properties);
    const required = new Set(Array.isArray(n.required) ? n.required : []);
    tally.properties += keys.length;
    tally.chars += keys.reduce((s, k) => s + k.length, 0);
    tally.optional += keys.filter((k) => !required.has(k)).length;
    tally.depth = Math.max(tally.depth, depth + 1);
  }
  if (Array.isArray(n.enum)) {
    tally.enumValues += n.enum.length;
    tally.chars += n.enum.reduce((s: number, v) => s + String(v).length, 0);
  }
  if (Array.isArray(n.anyOf) || (Array.isArray(n.type) && n.type.length > 1)) tally.unions += 1;
  const nested = isNode(n.properties) ? depth + 1 : depth;
  for (const [child, p] of children(n, path)) walk(child, p, nested, rules, tally, report);
}

const TOOL_NAME = {
  openai: /^[A-Za-z0-9_-]{1,64}$/,
  anthropic: /^[A-Za-z0-9_-]{1,64}$/,
  gemini: /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/,
};

/** The name, description, schema and strict flag of a tool in `provider`'s outer shape, or what is wrong with the shape. */
function unwrap(provider: Exclude<ToolProvider, 'default'>, t: unknown): { name: string; schema: unknown; strict: unknown; shape?: string } {
  const o = isNode(t) ? t : {};
  const shapeError = (want: string) => ({ name: String(o.name ?? '?'), schema: undefined, strict: undefined, shape: `not ${want}` });
  switch (provider) {
    case 'openai-chat': {
      const f = o.function;
      if (o.type !== 'function' || !isNode(f) || Object.keys(o).length !== 2) return shapeError('{ type: "function", function }');
      return { name: String(f.name), schema: f.parameters, strict: f.strict };
    }
    case 'openai-responses':
      if (o.type !== 'function' || 'function' in o) return shapeError('{ type: "function", name, parameters }');
      return { name: String(o.name), schema: o.parameters, strict: o.strict };
    case 'anthropic':
      if ('type' in o || 'parameters' in o) return shapeError('{ name, input_schema }');
      return { name: String(o.name), schema: o.input_schema, strict: o.strict };
    case 'gemini':
      if (Object.keys(o).some((k) => !['name', 'description', 'parameters'].includes(k))) return shapeError('{ name, description, parameters }');
      return { name: String(o.name), schema: o.parameters, strict: true };
  }
}

/**
 * The rules `tools` (as {@link toolDefinitionsFor} gives them for `provider`) break, empty
 * when none: the outer shape, `strict: true`, tool names, every schema node's keywords and
 * types, and the per-schema and per-request limits.
 */
export function providerViolations(provider: Exclude<ToolProvider, 'default'>, tools: readonly unknown[]): Violation[] {
  const out: Violation[] = [];
  const family = provider === 'openai-chat' || provider === 'openai-responses' ? 'openai' : provider;
  const rules = { openai, anthropic, gemini }[family];
  let optional = 0;
  let unions = 0;
  for (const t of tools) {
    const { name, schema, strict, shape } = unwrap(provider, t);
    const report = (path: string, rule: string) => out.push({ tool: name, path: path || '/', rule });
    if (shape !== undefined) {
      report('', `the tool is ${shape}`);
      continue;
    }
    if (!TOOL_NAME[family].test(name)) report('', `the tool name ${JSON.stringify(name)}`);
    if (strict !== true) report('', 'strict is not true');
    if (!isNode(schema) || schema.type !== 'object') {
      report('', 'the input schema is not an object schema');
      continue;
    }
    const tally: Tally = { properties: 0, depth: 0, enumValues: 0, chars: 0, optional: 0, unions: 0 };
    walk(schema, '', 0, rules, tally, report);
    if (family === 'openai') {
      if (tally.properties > 100) report('', `${tally.properties} object properties (at most 100)`);
      if (tally.depth > 5) report('', `${tally.depth} levels of nesting (at most 5)`);
      if (tally.enumValues > 500) report('', `${tally.enumValues} enum values (at most 500)`);
      if (tally.chars > 15_000) report('', `${tally.chars} characters of names and enum values (at most 15000)`);
    }
    optional += tally.optional;
    unions += tally.unions;
  }
  if (family === 'anthropic') {
    const all = (rule: string) => out.push({ tool: '*', path: '/', rule });
    if (tools.length > 20) all(`${tools.length} strict tools (at most 20 per request)`);
    if (optional > 24) all(`${optional} optional parameters (at most 24 per request)`);
    if (unions > 16) all(`${unions} union-typed parameters (at most 16 per request)`);
  }
  return out;
}
