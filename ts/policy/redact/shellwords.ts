/**
 * Shell words of a command line, as the command-line redaction reads them: words with their
 * positions (quotes and backslashes removed from the value), segments split at `;`, `&&`,
 * `||`, `|` and parentheses, the program of a segment, and the spans of a word to mask.
 */

export interface Word {
  /** The word as written (quotes included). */
  raw: string;
  /** The word after quote removal. */
  value: string;
  start: number;
  end: number;
}

/** The words of one simple command; `piped`: its output is the next segment's input (`a | b`). */
export type Segment = Word[] & { piped?: boolean };

/** Splits `line` into segments of shell words. Best effort: an unclosed quote runs to the end. */
export function segments(line: string): Segment[] {
  const out: Segment[] = [[]];
  let i = 0;
  while (i < line.length) {
    const c = line[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (';|&()\n'.includes(c)) {
      const last = out[out.length - 1] as Segment;
      if (c === '|' && line[i + 1] !== '|' && line[i - 1] !== '|') last.piped = true;
      if (last.length) out.push([]);
      i++;
      continue;
    }
    const start = i;
    let value = '';
    while (i < line.length && !/[\s;|&()]/.test(line[i] as string)) {
      const ch = line[i] as string;
      if (ch === '\\' && i + 1 < line.length) {
        value += line[i + 1];
        i += 2;
      } else if (ch === "'" || ch === '"') {
        const close = line.indexOf(ch, i + 1);
        const stop = close < 0 ? line.length : close;
        value += line.slice(i + 1, stop);
        i = stop + 1;
      } else {
        value += ch;
        i++;
      }
    }
    (out[out.length - 1] as Word[]).push({ raw: line.slice(start, Math.min(i, line.length)), value, start, end: Math.min(i, line.length) });
  }
  return out.filter((s) => s.length);
}

/** Index of the segment's program: after `VAR=value` prefixes, `export` and wrappers such as `sudo`. */
export function programIndex(words: Word[]): number {
  let i = 0;
  for (; i < words.length; i++) {
    const w = words[i] as Word;
    if (ASSIGN.test(w.value) || w.value === 'export' || w.value === 'declare' || w.value === 'local' || w.value === 'readonly') continue;
    if (WRAPPERS.has(w.value) || (words[i - 1] && WRAPPERS.has((words[i - 1] as Word).value) && w.value.startsWith('-'))) continue;
    break;
  }
  return i;
}

// `+` and `$`: a shell trace (`set -x`) or a prompt shown in output.
export const WRAPPERS = new Set(['+', '++', '$', 'sudo', 'env', 'nohup', 'time', 'exec', 'command', 'nice', 'ionice', 'timeout', 'stdbuf', 'xargs', 'doas', 'builtin']);
export const ASSIGN = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s;

/** A range of the line to mask. */
export interface Span {
  start: number;
  end: number;
  secret: string;
  /** What the span becomes (default: the mask of its text). */
  replacement?: string;
}

/** The span of `secret` at the end of `word` (the value part of `-pSECRET`, `--password=SECRET`). */
export function tailOf(word: Word, secret: string): Span | undefined {
  if (secret === '') return undefined;
  const at = word.raw.lastIndexOf(secret);
  // Quotes or escapes inside the secret: mask the whole word after its flag.
  if (at < 0) return { start: word.start + Math.max(0, word.raw.length - secret.length - 2), end: word.end, secret };
  return { start: word.start + at, end: word.start + at + secret.length, secret };
}

export function whole(word: Word | undefined): Span | undefined {
  if (!word || word.value === '' || /^\$\{?[A-Za-z_]\w*\}?$/.test(word.value)) return undefined;
  return tailOf(word, word.value);
}

/** The password of `user:password` (curl), or undefined without one. */
export function afterColon(word: Word | undefined, value = word?.value): Span | undefined {
  if (!word || value === undefined) return undefined;
  const colon = value.indexOf(':');
  return colon < 0 ? undefined : word && tailOf(word, value.slice(colon + 1));
}

/** The part of `user:password` or `user,password` after the user (lftp, httpie-style user flags). */
export function afterUser(word: Word | undefined, value = word?.value): Span | undefined {
  if (!word || value === undefined) return undefined;
  const m = /^[\w.@%+-]+[:,](.+)$/.exec(value);
  if (!m || /^\d+$/.test(m[1] as string) || (m[1] as string).startsWith('/')) return undefined;
  return tailOf(word, m[1] as string);
}

/** A literal word (not `$VAR`, not `$(…)`). */
export function literal(w: Word): boolean {
  return w.value !== '' && !/^\$/.test(w.value) && !w.raw.startsWith('"$');
}
