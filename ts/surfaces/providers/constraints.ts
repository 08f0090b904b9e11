/**
 * Constraint keywords a provider refuses (`minLength`, `minimum`, `pattern`, ...), said in
 * words instead, so the model still reads them in the description. The handler's own
 * validation (zod, on the base schema) keeps enforcing them.
 */

/** The constraint keywords this module can put into words. */
export const CONSTRAINT_KEYWORDS: ReadonlySet<string> = new Set([
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'default',
]);

/** A bound this large says "no bound" (zod writes `Number.MAX_SAFE_INTEGER` for `.int()`). */
function isNoBound(v: unknown): boolean {
  return typeof v === 'number' && Math.abs(v) >= Number.MAX_SAFE_INTEGER;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The range of a number, in words: `from 1 to 10`, `at least 0`, `at most 5`, `above 0`. */
function rangeWords(c: Record<string, unknown>): string[] {
  const low = isNoBound(c.minimum) ? undefined : c.minimum;
  const high = isNoBound(c.maximum) ? undefined : c.maximum;
  const out: string[] = [];
  if (low !== undefined && high !== undefined) out.push(`from ${low} to ${high}`);
  else if (low !== undefined) out.push(`at least ${low}`);
  else if (high !== undefined) out.push(`at most ${high}`);
  if (c.exclusiveMinimum !== undefined) out.push(`above ${c.exclusiveMinimum}`);
  if (c.exclusiveMaximum !== undefined) out.push(`below ${c.exclusiveMaximum}`);
  if (c.multipleOf !== undefined) out.push(`a multiple of ${c.multipleOf}`);
  return out;
}

/**
 * The constraints of `removed` (keyword → value, only keywords of
 * {@link CONSTRAINT_KEYWORDS}) in words, e.g. `["from 1 to 86400000", "at least 1 character"]`.
 */
export function constraintWords(removed: Record<string, unknown>): string[] {
  const out = rangeWords(removed);
  const { minLength, maxLength, pattern, format, minItems, maxItems, uniqueItems, minProperties, maxProperties } = removed;
  if (typeof minLength === 'number' && minLength > 0) out.push(`at least ${plural(minLength, 'character')}`);
  if (typeof maxLength === 'number') out.push(`at most ${plural(maxLength, 'character')}`);
  if (typeof pattern === 'string') out.push(`matching the regular expression ${JSON.stringify(pattern)}`);
  if (typeof format === 'string') out.push(`format ${format}`);
  if (typeof minItems === 'number' && minItems > 0) out.push(`at least ${plural(minItems, 'item')}`);
  if (typeof maxItems === 'number') out.push(`at most ${plural(maxItems, 'item')}`);
  if (uniqueItems === true) out.push('no duplicates');
  if (typeof minProperties === 'number' && minProperties > 0) out.push(`at least ${plural(minProperties, 'entry', 'entries')}`);
  if (typeof maxProperties === 'number') out.push(`at most ${plural(maxProperties, 'entry', 'entries')}`);
  if (removed.default !== undefined) out.push(`default ${JSON.stringify(removed.default)}`);
  return out;
}

/** `description` followed by `words` as one sentence: `Working directory. At least 1 character.` */
export function withWords(description: unknown, words: readonly string[]): string | undefined {
  const base = typeof description === 'string' ? description.trim() : '';
  if (words.length === 0) return base === '' ? undefined : base;
  const sentence = words.join(', ');
  const said = `${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}.`;
  return base === '' ? said : `${base} ${said}`;
}
