/**
 * The tolerant reading of tool arguments, before zod checks them against the base schema:
 * what models send under the strict variants (`providers/`) or out of habit is turned into
 * what the base schema means, and nothing else is touched. Driven by the live base JSON
 * Schema of each tool, so fields added there are read the same way.
 *
 * - `null` for an optional field the base schema does not let be null: absent. A strict
 *   model sends null for every field it does not use.
 * - `""` for an optional field that names something (`session_id`, `task_id`,
 *   `session_key`, any `*_id`/`*_key`/`*_name`, `workdir`, `cursor`, `filter`, `signal`)
 *   or for an optional number or boolean: absent. A blank name or number is a placeholder;
 *   `list` with `task_id: ""` lists what no filter lists. A blank `data` or `text` stays
 *   (writing nothing, or submitting just Enter, are real requests); a blank required field
 *   (`command`) stays, for zod to refuse.
 * - `0` is never a placeholder: `offset: 0` is the first line, `grace_ms: 0` kills at once.
 * - A numeric string for an integer field (`"200"`, `"-1"`): that integer, when it is an
 *   exact safe integer written in decimal digits. `"1e3"`, `"1.0"`, `" 5"` and `"0x10"`
 *   stay strings (and zod refuses them): a model that means an integer writes its digits.
 *   For a number field, a decimal (`"2.5"`). `"true"`/`"false"` for a boolean field.
 * - A list of `{ name, value }` pairs where the base schema has a map (`env`): that map;
 *   a name given twice, a blank name, `__proto__` (which zod's record check would drop
 *   silently, pairs or map) or a pair of another shape is an `INVALID_ARGUMENT` error. Number and boolean values (`PORT: 8080`) become strings, in pairs and in maps.
 * - Arguments given as a JSON string (OpenAI's `arguments`): parsed first.
 * - Unknown keys are kept, for zod's strict check and its "did you mean" hint.
 *
 * The input is never changed; a new object is returned.
 */
import { ProcwardError } from '../../errors.js';
import { toolDefinitions } from './schema.js';

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Optional string fields where a blank means "not given". */
const BLANK_IS_UNSET = new Set(['workdir', 'cwd', 'cursor', 'filter', 'signal']);
const isNameLike = (key: string) => BLANK_IS_UNSET.has(key) || /(^|_)(id|key|name)$/.test(key);

const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?\d+(\.\d+)?$/;

/** Marks a field to leave out. */
const ABSENT = Symbol('absent');

let schemas: Map<string, Node> | undefined;

/** The base input schema of each tool, read once. */
function baseSchema(tool: string): Node | undefined {
  schemas ??= new Map(toolDefinitions().map((t) => [t.name, t.input_schema]));
  return schemas.get(tool);
}

/** The JSON types a node accepts (through `anyOf`/`oneOf` branches too). */
function typesOf(s: Node): Set<string> {
  const out = new Set<string>();
  for (const t of Array.isArray(s.type) ? s.type : [s.type]) if (typeof t === 'string') out.add(t);
  for (const key of ['anyOf', 'oneOf'] as const) if (Array.isArray(s[key])) for (const b of s[key]) if (isNode(b)) for (const t of typesOf(b)) out.add(t);
  if (Array.isArray(s.enum) && s.enum.includes(null)) out.add('null');
  return out;
}

/** The branch of `s` that describes objects of this kind: itself, or its first object branch. */
function objectBranch(s: Node, map: boolean): Node | undefined {
  const fits = (n: Node) => n.type === 'object' && (map ? isMapNode(n) : isNode(n.properties));
  if (fits(s)) return s;
  for (const key of ['anyOf', 'oneOf'] as const) if (Array.isArray(s[key])) for (const b of s[key]) if (isNode(b) && fits(b)) return b;
  return undefined;
}

const isMapNode = (n: Node) => n.properties === undefined && isNode(n.additionalProperties);

function invalid(message: string, option: string): never {
  throw new ProcwardError('INVALID_ARGUMENT', message, { option });
}

/**
 * `__proto__` as a map key: zod's record check drops it without a word (to keep prototypes
 * safe), so the job would silently miss it. Refused instead, naming it.
 */
function refuseProtoKey(name: string, where: string, option: string): void {
  if (name === '__proto__') invalid(`${where}: "__proto__" cannot be a name here (it would be dropped)`, option);
}

/** A map value as the map's value schema takes it: numbers and booleans as strings when it takes strings. */
function mapValue(v: unknown, valueSchema: Node): unknown {
  const types = typesOf(valueSchema);
  if ((typeof v === 'number' || typeof v === 'boolean') && types.has('string') && !types.has(typeof v)) return String(v);
  return v;
}

/** `[{ name, value }, ...]` as the map it lists. */
function pairsToMap(pairs: unknown[], valueSchema: Node, path: string): Node {
  const out: Node = {};
  const seen = new Map<string, number>();
  pairs.forEach((pair, i) => {
    const where = `${path}[${i}]`;
    if (!isNode(pair) || Object.keys(pair).some((k) => k !== 'name' && k !== 'value') || !('name' in pair) || !('value' in pair)) {
      invalid(`${where}: expected a {name, value} pair`, path);
    }
    const { name, value } = pair;
    if (typeof name !== 'string' || name === '') invalid(`${where}.name: expected a non-empty string`, path);
    refuseProtoKey(name, `${where}.name`, path);
    const first = seen.get(name);
    if (first !== undefined) invalid(`${path}: the name ${JSON.stringify(name)} is given twice (${path}[${first}] and ${where})`, path);
    seen.set(name, i);
    // defineProperty, not assignment: no name reaches a setter on Object.prototype.
    Object.defineProperty(out, name, { value: mapValue(value, valueSchema), enumerable: true, writable: true, configurable: true });
  });
  return out;
}

function normalizeValue(v: unknown, s: Node, key: string, optional: boolean, path: string): unknown {
  const types = typesOf(s);
  if (v === null) return optional && !types.has('null') ? ABSENT : v;
  if (v === '' && optional && !types.has('null') && (isNameLike(key) || !types.has('string'))) return ABSENT;
  if (typeof v === 'string' && !types.has('string')) {
    if (types.has('integer') && INTEGER.test(v) && Number.isSafeInteger(Number(v))) return Number(v);
    if (types.has('number') && DECIMAL.test(v) && Number.isFinite(Number(v))) return Number(v);
    if (types.has('boolean') && (v === 'true' || v === 'false')) return v === 'true';
    return v;
  }
  if (Array.isArray(v)) {
    const map = objectBranch(s, true);
    if (map !== undefined && !types.has('array')) return pairsToMap(v, map.additionalProperties as Node, path);
    const items = s.items;
    return isNode(items) ? v.map((item, i) => normalizeValue(item, items, key, false, `${path}[${i}]`)) : v;
  }
  if (isNode(v)) {
    const map = objectBranch(s, true);
    if (map !== undefined) {
      const out: Node = {};
      for (const [k, x] of Object.entries(v)) {
        refuseProtoKey(k, `${path}.${k}`, path);
        Object.defineProperty(out, k, { value: mapValue(x, map.additionalProperties as Node), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    const obj = objectBranch(s, false);
    return obj === undefined ? v : normalizeObject(v, obj, path);
  }
  return v;
}

function normalizeObject(value: Node, schema: Node, path: string): Node {
  const properties = isNode(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const out: Node = {};
  for (const [key, v] of Object.entries(value)) {
    const s = Object.hasOwn(properties, key) ? properties[key] : undefined;
    const where = path === '' ? key : `${path}.${key}`;
    const next = isNode(s) ? normalizeValue(v, s, key, !required.has(key), where) : v;
    if (next !== ABSENT) Object.defineProperty(out, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * The arguments of a call to `tool` as the base schema means them (see the module's
 * rules), for zod to check next. Arguments of an unknown tool, or that are not an object,
 * come back as given (zod or the handler refuses them). Throws `INVALID_ARGUMENT` for a
 * JSON string that does not parse and for `{ name, value }` pairs that do not make a map
 * (`details.option` names the field).
 */
export function normalizeToolArgs(tool: string, raw: unknown): unknown {
  let args = raw;
  if (typeof raw === 'string') {
    try {
      args = JSON.parse(raw);
    } catch (err) {
      invalid(`the arguments are a string that is not JSON (${(err as Error).message})`, 'input');
    }
  }
  const schema = baseSchema(tool);
  if (schema === undefined || !isNode(args)) return args;
  return normalizeObject(args, schema, '');
}
