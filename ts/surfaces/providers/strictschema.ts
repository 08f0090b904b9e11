/**
 * The transformer from a tool's base JSON Schema (as `z.toJSONSchema` writes it) to one
 * provider's strict dialect (`dialect.ts`). It works on any schema zod derives from the
 * tool inputs, so fields added to the base schema get their strict form without a change
 * here; a construct no strict dialect can express is an error naming its path.
 *
 * What it does, per node:
 * - optional fields: required and nullable (OpenAI), omitted from `required` (Gemini), or
 *   either within a per-tool-set budget (Anthropic), see {@link Optionality};
 * - objects closed with `additionalProperties: false` (OpenAI, Anthropic) or with the
 *   keyword removed (Gemini);
 * - maps (`{ type: object, additionalProperties: T }`, zod's `z.record`) become lists of
 *   `{ name, value }` pairs; the handler (`tool/args.ts`) turns them back;
 * - type unions (`["string", "number"]`) become `string` (the handler reads numeric
 *   strings); `const` becomes a one-value `enum`, `oneOf` becomes `anyOf`;
 * - constraint keywords the dialect refuses move into the description in words.
 */
import { CONSTRAINT_KEYWORDS, constraintWords, withWords } from './constraints.js';
import type { Dialect } from './dialect.js';

/** A JSON Schema node. */
export type JsonSchema = Record<string, unknown>;

/** How many more optional parameters a tool set may have omittable (Anthropic's budget); shared by the tools of one set. */
export interface OptionalBudget {
  remaining: number;
}

/** Keywords dropped without a word: they document, they do not constrain. */
const ANNOTATIONS = new Set(['$schema', '$id', 'title', 'examples', '$comment', 'readOnly', 'writeOnly', 'deprecated']);

/** Keywords the transformer reads and rewrites itself. */
const STRUCTURE = new Set(['type', 'properties', 'required', 'additionalProperties', 'propertyNames', 'items', 'anyOf', 'oneOf', 'const', 'enum', 'description']);

const NULL_TYPE: JsonSchema = { type: 'null' };

/** What the pair list of a map is called in descriptions. */
const PAIRS_WORDS = 'a list of {name, value} pairs, each name at most once';

interface Converted {
  schema: JsonSchema;
  /** The base node accepts `null` (its null branch is gone from `schema`). */
  nullable: boolean;
}

const isNode = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);

function fail(path: string, what: string, dialect: Dialect): never {
  throw new Error(`tool schema ${path || '/'}: ${what}; ${dialect.provider} strict mode cannot express it`);
}

/**
 * `schema` (an object schema: a tool's input) in `dialect`'s strict form. `budget` is shared
 * by the tools of one set (see {@link OptionalBudget}); by default this schema has the whole
 * budget. Throws an `Error` naming the path of a node the dialect cannot express (`allOf`,
 * `$ref`, tuples, a node with no type). Never changes `schema`.
 */
export function toStrictSchema(schema: JsonSchema, dialect: Dialect, budget: OptionalBudget = { remaining: dialect.optionalBudget }): JsonSchema {
  const { schema: out } = convert(schema, dialect, budget, '');
  if (out.type !== 'object') fail('', 'the root is not an object', dialect);
  return out;
}

/** One of several types, for a provider that takes one: a string carries every scalar (the handler reads numeric strings). */
function collapseTypes(types: string[], path: string, dialect: Dialect): string {
  if (types.length === 1) return types[0]!;
  if (types.includes('string')) return 'string';
  if (types.every((t) => t === 'number' || t === 'integer')) return 'number';
  return fail(path, `the type union ${JSON.stringify(types)}`, dialect);
}

/** The node's type with `null` taken out; `nullable` says whether it was there. */
function baseType(node: JsonSchema, path: string, dialect: Dialect): { type: string | undefined; nullable: boolean } {
  const t = node.type;
  if (t === undefined) {
    const values = Array.isArray(node.enum) ? node.enum : 'const' in node ? [node.const] : undefined;
    if (values?.every((v) => typeof v === 'string' || v === null)) return { type: 'string', nullable: values.includes(null) };
    return { type: undefined, nullable: false };
  }
  const types = (Array.isArray(t) ? t : [t]).map(String);
  const rest = types.filter((x) => x !== 'null');
  if (rest.length === 0) fail(path, 'a field that can only be null', dialect);
  return { type: collapseTypes(rest, path, dialect), nullable: rest.length < types.length };
}

/** `schema` that also accepts null, in the dialect's spelling. */
function nullableOf(schema: JsonSchema, dialect: Dialect): JsonSchema {
  if (dialect.provider === 'gemini') return { ...schema, nullable: true };
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: [...schema.anyOf, NULL_TYPE] };
  const { description, ...inner } = schema;
  return { ...(description !== undefined && { description }), anyOf: [inner, NULL_TYPE] };
}

/** `{ type: object, additionalProperties: T }` with no properties: a map from names to T. */
function isMap(node: JsonSchema): boolean {
  return node.properties === undefined && (isNode(node.additionalProperties) || isNode(node.propertyNames));
}

function mapAsPairs(node: JsonSchema, dialect: Dialect, budget: OptionalBudget, path: string, words: string[]): JsonSchema {
  const names = isNode(node.propertyNames) ? convert({ type: 'string', ...node.propertyNames }, dialect, budget, `${path}/propertyNames`).schema : { type: 'string' };
  const values = isNode(node.additionalProperties) ? convert(node.additionalProperties, dialect, budget, `${path}/additionalProperties`) : undefined;
  if (values === undefined) fail(path, 'a map whose values have no schema', dialect);
  const pair: JsonSchema = {
    type: 'object',
    properties: { name: names, value: values.nullable ? nullableOf(values.schema, dialect) : values.schema },
    required: ['name', 'value'],
    ...(dialect.closeObjects && { additionalProperties: false }),
  };
  const description = withWords(node.description, [PAIRS_WORDS, ...words]);
  return { type: 'array', ...(description !== undefined && { description }), items: pair };
}

function convertObject(node: JsonSchema, dialect: Dialect, budget: OptionalBudget, path: string): JsonSchema {
  const source = isNode(node.properties) ? node.properties : {};
  const baseRequired = new Set(Array.isArray(node.required) ? node.required.map(String) : []);
  const properties: JsonSchema = {};
  const required: string[] = [];
  for (const [name, child] of Object.entries(source)) {
    const c = convert(child, dialect, budget, `${path}/properties/${name}`);
    if (baseRequired.has(name)) {
      // Required in the base: stays required; a null the base accepts stays accepted.
      properties[name] = c.nullable ? nullableOf(c.schema, dialect) : c.schema;
      required.push(name);
      continue;
    }
    const omit = dialect.optionality === 'omittable' || (dialect.optionality === 'budget' && budget.remaining > 0);
    if (omit) {
      if (dialect.optionality === 'budget') budget.remaining -= 1;
      properties[name] = c.schema;
    } else {
      properties[name] = nullableOf(c.schema, dialect);
      required.push(name);
    }
  }
  return { properties, required, ...(dialect.closeObjects && { additionalProperties: false }) };
}

function convertBranches(node: JsonSchema, dialect: Dialect, budget: OptionalBudget, path: string): { branches: JsonSchema[]; nullable: boolean } {
  const key = Array.isArray(node.anyOf) ? 'anyOf' : 'oneOf';
  if (Array.isArray(node.anyOf) && Array.isArray(node.oneOf)) fail(path, 'both anyOf and oneOf', dialect);
  const branches: JsonSchema[] = [];
  let nullable = false;
  for (const [i, branch] of (node[key] as unknown[]).entries()) {
    if (isNode(branch) && branch.type === 'null' && Object.keys(branch).length === 1) {
      nullable = true;
      continue;
    }
    const c = convert(branch, dialect, budget, `${path}/${key}/${i}`);
    nullable ||= c.nullable;
    branches.push(c.schema);
  }
  if (branches.length === 0) fail(path, 'a union of nothing but null', dialect);
  return { branches, nullable };
}

/** The keywords outside {@link STRUCTURE}: kept, put into words, dropped (annotations), or refused. */
function otherKeywords(node: JsonSchema, dialect: Dialect, path: string): { kept: JsonSchema; words: string[] } {
  const kept: JsonSchema = {};
  const removed: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (STRUCTURE.has(key) || ANNOTATIONS.has(key)) continue;
    if (key === 'format' && typeof value === 'string' && dialect.formats.has(value)) kept[key] = value;
    else if (key !== 'format' && dialect.keep.has(key) && !(typeof value === 'number' && Math.abs(value) >= Number.MAX_SAFE_INTEGER)) kept[key] = value;
    else if (CONSTRAINT_KEYWORDS.has(key)) removed[key] = value;
    else fail(path, `the keyword ${JSON.stringify(key)}`, dialect);
  }
  return { kept, words: constraintWords(removed) };
}

/** The `enum` of a node for the dialect, or words for values it cannot list (Gemini lists strings only). */
function enumOf(values: unknown[], dialect: Dialect, words: string[]): unknown[] | undefined {
  const listed = values.filter((v) => v !== null);
  if (dialect.provider === 'gemini' && !listed.every((v) => typeof v === 'string')) {
    words.push(`one of ${listed.map((v) => JSON.stringify(v)).join(', ')}`);
    return undefined;
  }
  return listed;
}

function convert(node: unknown, dialect: Dialect, budget: OptionalBudget, path: string): Converted {
  if (!isNode(node)) return fail(path, `the schema ${JSON.stringify(node)}`, dialect);
  const { kept, words } = otherKeywords(node, dialect, path);
  if (Array.isArray(node.anyOf) || Array.isArray(node.oneOf)) {
    const { branches, nullable } = convertBranches(node, dialect, budget, path);
    const description = withWords(node.description, words);
    if (branches.length === 1) {
      const only = branches[0]!;
      const merged = description === undefined ? only : { ...only, description };
      return { schema: { ...merged, ...kept }, nullable };
    }
    return { schema: { ...(description !== undefined && { description }), anyOf: branches, ...kept }, nullable };
  }
  const { type, nullable: typeNullable } = baseType(node, path, dialect);
  if (type === undefined) return fail(path, 'a node with no type', dialect);
  let nullable = typeNullable;
  if (type === 'object' && isMap(node)) return { schema: mapAsPairs(node, dialect, budget, path, words), nullable };
  const schema: JsonSchema = { type };
  const values = Array.isArray(node.enum) ? node.enum : 'const' in node ? [node.const] : undefined;
  if (values !== undefined) {
    nullable ||= values.includes(null);
    const listed = enumOf(values, dialect, words);
    if (listed !== undefined) schema.enum = listed;
  }
  const description = withWords(node.description, words);
  if (description !== undefined) schema.description = description;
  if (type === 'object') Object.assign(schema, convertObject(node, dialect, budget, path));
  if (type === 'array') {
    if (!isNode(node.items)) fail(path, node.items === undefined ? 'an array with no item schema' : 'a tuple', dialect);
    const items = convert(node.items, dialect, budget, `${path}/items`);
    schema.items = items.nullable ? nullableOf(items.schema, dialect) : items.schema;
  }
  return { schema: { ...schema, ...kept }, nullable };
}
