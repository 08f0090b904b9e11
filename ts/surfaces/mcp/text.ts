/**
 * Text the MCP server puts where a client shows it as is (resource titles and
 * descriptions, log messages): commands and output lines are written by the job or the
 * model, so control characters (C0, DEL, C1: a terminal escape, a bell, a line break in a
 * title) are shown escaped (`\x1b`), and long text is cut with a note of how much.
 */

/** `text` on one line: control characters escaped as `\xNN`, cut after `max` characters with a note. */
export function oneLine(text: string, max: number): string {
  const shown = text.length > max ? text.slice(0, max) : text;
  const escaped = shown.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return text.length > max ? `${escaped}… [${text.length - max} characters cut]` : escaped;
}
