/**
 * Bounds on the entries a checkpoint keeps without understanding them (a newer version's,
 * or damaged ones): they are written back untouched on every write, so one entry nested
 * 5000 deep would make every write overflow the stack (`JSON.stringify` recurses), and a
 * huge one would slow every write. The walk here is iterative: it never recurses itself.
 */

/** Deepest nesting (arrays and objects) of a kept entry. */
export const MAX_KEPT_DEPTH = 64;
/** Largest kept entry, counted as string characters plus 8 per value: 1 MiB. */
export const MAX_KEPT_SIZE = 1024 * 1024;

/** Why `raw` is too deep or too large to keep, or `null` when it fits the bounds above. */
export function outOfBounds(raw: unknown): string | null {
  const stack: [unknown, number][] = [[raw, 1]];
  let size = 0;
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    size += typeof value === 'string' ? value.length + 8 : 8;
    if (size > MAX_KEPT_SIZE) return `larger than ${MAX_KEPT_SIZE} characters`;
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_KEPT_DEPTH) return `nested deeper than ${MAX_KEPT_DEPTH} levels`;
    const children = Array.isArray(value) ? value : Object.entries(value as object).flat();
    for (const child of children) stack.push([child, depth + 1]);
  }
  return null;
}
