/**
 * Control characters in text that leaves for a model or a terminal: the C0 controls other
 * than TAB, LF and CR, and DEL. Some hosts' serialisers end a conversation on a NUL, and a
 * bell or shift-out garbles a terminal, so the plain view and every model-facing result
 * show each as `\xNN` (after redaction); the raw view of the library keeps the bytes.
 */

const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');

/** Whether UTF-16 code unit `c` is such a control. */
function isControl(c: number): boolean {
  return c <= 0x08 || c === 0x0b || c === 0x0c || (c >= 0x0e && c <= 0x1f) || c === 0x7f;
}

/** `text` with each control (see the module docs) as `\xNN`; the text itself when it has none. */
export function escapeControls(text: string): string {
  return CONTROL.test(text) ? text.replace(CONTROLS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`) : text;
}

/**
 * The last `maxChars` characters of `text` once escaped ({@link escapeControls}), cut before
 * an escape, never inside one.
 */
export function escapedTail(text: string, maxChars: number): string {
  if (!CONTROL.test(text)) return text.length > maxChars ? text.slice(text.length - maxChars) : text;
  let width = 0;
  let from = text.length;
  while (from > 0) {
    const w = isControl(text.charCodeAt(from - 1)) ? 4 : 1;
    if (width + w > maxChars) break;
    width += w;
    from--;
  }
  return escapeControls(text.slice(from));
}

/** `value` with every string in it escaped ({@link escapeControls}), arrays and plain objects walked. */
export function escapeStrings<T>(value: T): T {
  if (typeof value === 'string') return escapeControls(value) as T;
  if (Array.isArray(value)) return value.map(escapeStrings) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, escapeStrings(v)])) as T;
  return value;
}
