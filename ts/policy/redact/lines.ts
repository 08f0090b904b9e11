/**
 * Line-local rules found from an anchor: only the lines holding a match of the anchor are
 * read by the rule, so a rule costs one fast scan of a page that holds none.
 */

/**
 * Rewrites the lines of `text` that hold a match of `anchor` (a global regex): `rewrite` gets
 * the line (without its line break) and the index of its end, and returns its replacement,
 * undefined to keep it, or `{ text, end }` to replace the text up to `end` (a few lines more).
 */
export function rewriteLines(text: string, anchor: RegExp, rewrite: (line: string, end: number) => string | { text: string; end: number } | undefined): string {
  let out = '';
  let copied = 0;
  let scanned = 0;
  for (const m of text.matchAll(anchor)) {
    if (m.index < scanned) continue;
    const start = text.lastIndexOf('\n', m.index) + 1;
    const nl = text.indexOf('\n', m.index);
    const end = nl < 0 ? text.length : nl;
    scanned = end;
    const next = rewrite(text.slice(start, end), end);
    if (next === undefined) continue;
    out += text.slice(copied, start) + (typeof next === 'string' ? next : next.text);
    copied = scanned = typeof next === 'string' ? end : next.end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}
