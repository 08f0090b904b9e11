/**
 * Private-key blocks, masked whole whatever their size and wherever a text starts.
 *
 * A block opens at a `-----BEGIN … PRIVATE KEY-----` (or `… PRIVATE KEY BLOCK-----`) marker
 * that ends its line (a line break, a JSON-escaped `\n`, or the end of the text): a marker
 * quoted in prose or code (`startsWith('-----BEGIN RSA PRIVATE KEY-----')`) is not a key. It
 * closes at the next END marker that ends its line or its quoted string, or at the end of
 * the text.
 *
 * A text can start inside a block: a tail whose front was dropped, a page of a log, a
 * preview window. Then the caller passes `startsInside` (the state where the text begins,
 * tracked by whoever dropped or skipped the bytes before it: the native tail, the log pager,
 * the preview cut). Without it, an END marker with no BEGIN before it still masks everything
 * up to it. Masking keeps the line structure (each line of a block becomes
 * {@link KEY_MASK}), so line numbers of pages stay those of the log.
 */

/** What each line of a masked private-key block becomes. */
export const KEY_MASK = '[REDACTED PRIVATE KEY]';

const NEEDLE = 'PRIVATE KEY';
// PEM and OpenPGP armour (`-----BEGIN RSA PRIVATE KEY-----`) and the SSH2 / RFC 4716 form
// (`---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`).
const BEGIN = /-{4,5} ?BEGIN [A-Z0-9 ]{0,40}$/;
const END = /-{4,5} ?END [A-Z0-9 ]{0,40}$/;
const CLOSE = /^(?: BLOCK)? ?-{4,5}/;
/**
 * Characters a terminal shows as nothing: C0 controls other than line breaks and ESC, DEL,
 * and the zero-width format characters (U+200B-U+200D, U+2060, U+FEFF). A job can print
 * them around or inside a key's lines; a person still sees the key, so redaction must too.
 */
export const INVISIBLE = '\u0000-\u0008\u000b\u000c\u000e-\u001a\u001c-\u001f\u007f\u200b-\u200d\u2060\ufeff';
const HAS_INVISIBLE = new RegExp(`[${INVISIBLE}]`);
const ALL_INVISIBLE = new RegExp(`[${INVISIBLE}]`, 'g');

/**
 * Whether invisible characters may hide a marker in `text`: it holds some, and a marker's
 * `KEY` or its dashes (a job splitting both is not printing a key by accident). The test
 * for invisible characters costs about 4 ms per MB, so it runs only then.
 */
function mayHideMarker(text: string): boolean {
  return (text.includes('KEY') || text.includes('----')) && HAS_INVISIBLE.test(text);
}
// What may follow a marker on its line: blanks, invisible characters, colour codes (`grep
// --color`), and the line ends `cat -A` prints (`^M` for a carriage return, `$` for the line end).
const TRAILER = new RegExp(`(?:[ \\t${INVISIBLE}]|\\u001b\\[[0-?]*[ -/]*[@-~]|\\^M|\\$(?=\\r?\\n|$))*`, 'y');

interface Marker {
  kind: 'begin' | 'end';
  /** Index of the marker's first `-`. */
  start: number;
  /** Index just after the marker. */
  end: number;
}

/** The marker whose `PRIVATE KEY` needle sits at `at`, or undefined for prose. */
function markerAt(text: string, at: number): Marker | undefined {
  const before = text.slice(Math.max(0, at - 50), at);
  const close = CLOSE.exec(text.slice(at + NEEDLE.length, at + NEEDLE.length + 11));
  if (!close) return undefined;
  const end = at + NEEDLE.length + close[0].length;
  const b = BEGIN.exec(before);
  // A marker ends its line (an END also its quoted string: `…\n-----END PRIVATE KEY-----"`);
  // trailing blanks and colour codes (`grep --color`) do not count.
  TRAILER.lastIndex = end;
  const after = end + (TRAILER.exec(text)?.[0].length ?? 0);
  const next = text[after];
  const endsLine = next === undefined || next === '\n' || next === '\r' || text.startsWith('\\n', after);
  if (b) return endsLine ? { kind: 'begin', start: at - b[0].length, end } : undefined;
  const e = END.exec(before);
  if (!e || !(endsLine || next === '"' || next === "'")) return undefined;
  return { kind: 'end', start: at - e[0].length, end };
}

/** Markers in `text` from `from`, in order. */
function* markers(text: string, from = 0): Generator<Marker> {
  let at = text.indexOf(NEEDLE, from);
  while (at >= 0) {
    const m = markerAt(text, at);
    if (m) yield m;
    at = text.indexOf(NEEDLE, at + NEEDLE.length);
  }
}

/**
 * Whether position `pos` of `text` is inside a private-key block, given the state at the
 * text's start. One backward search: the last marker starting before `pos` decides.
 */
export function insideKeyBlockAt(text: string, pos: number, startsInside = false): boolean {
  if (!mayHideMarker(text)) return lastMarkerOpens(text, pos, startsInside);
  // Seen as a person sees it: without the invisible characters (see maskKeyBlocks).
  const visiblePos = text.slice(0, pos).replace(ALL_INVISIBLE, '').length;
  return lastMarkerOpens(text.replace(ALL_INVISIBLE, ''), visiblePos, startsInside);
}

function lastMarkerOpens(text: string, pos: number, startsInside: boolean): boolean {
  let at = text.lastIndexOf(NEEDLE, pos + 50);
  while (at >= 0) {
    const m = markerAt(text, at);
    if (m && m.start < pos) return m.kind === 'begin';
    at = at === 0 ? -1 : text.lastIndexOf(NEEDLE, at - 1);
  }
  return startsInside;
}

/** `span` with every line replaced by {@link KEY_MASK} (line breaks kept). */
function maskLines(span: string): string {
  return span.replace(/[^\n]+/g, KEY_MASK);
}

/** The ranges of `text` that private-key blocks cover, in order (see {@link maskKeyBlocks}). */
function blockRanges(text: string, startsInside: boolean): [number, number][] {
  const ranges: [number, number][] = [];
  let open = startsInside ? 0 : -1;
  let first = true;
  for (const m of markers(text)) {
    const wasFirst = first;
    first = false;
    if (m.kind === 'begin' && open < 0) {
      open = m.start;
    } else if (m.kind === 'end') {
      // An END before any BEGIN: the text started inside the block.
      const from = open >= 0 ? open : wasFirst ? 0 : -1;
      if (from < 0) continue;
      ranges.push([from, m.end]);
      open = -1;
    }
  }
  if (open >= 0) ranges.push([open, text.length]);
  return ranges;
}

/**
 * {@link blockRanges} of a text holding invisible characters: found in the text without
 * them (a NUL inside `-----BEGIN RSA PRIVATE KEY-----` or at the end of every key line hides
 * nothing from a person), mapped back to positions of `text`.
 */
function rangesSeenThroughInvisible(text: string, visible: string, startsInside: boolean): [number, number][] {
  // kept[i]: where the i-th visible character sits in `text`.
  const kept = new Uint32Array(visible.length);
  for (let i = 0, k = 0; i < text.length; i++) if (!isInvisible(text.charCodeAt(i))) kept[k++] = i;
  const at = (i: number) => (i >= visible.length ? text.length : (kept[i] as number));
  // A block takes the invisible characters between its last character and what follows.
  return blockRanges(visible, startsInside).map(([a, b]) => [at(a), at(b)]);
}

function isInvisible(c: number): boolean {
  return (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x1b) || c === 0x7f || (c >= 0x200b && c <= 0x200d) || c === 0x2060 || c === 0xfeff;
}

/**
 * Masks every private-key block of `text` (see the module docs). `startsInside`: the text
 * begins inside a block whose BEGIN came before it.
 */
export function maskKeyBlocks(text: string, startsInside = false): string {
  const visible = mayHideMarker(text) ? text.replace(ALL_INVISIBLE, '') : text;
  if (!startsInside && !visible.includes(NEEDLE)) return text;
  const ranges = visible === text ? blockRanges(text, startsInside) : rangesSeenThroughInvisible(text, visible, startsInside);
  let out = '';
  let copied = 0;
  for (const [from, to] of ranges) {
    out += text.slice(copied, from) + maskLines(text.slice(from, to));
    copied = to;
  }
  return out + text.slice(copied);
}

// A trailing `$` or `^M$` is how `cat -A` shows the line end; invisible characters around it.
const KEY_LINE = new RegExp(`^[${INVISIBLE}]*[A-Za-z0-9+/]{60,76}={0,2}[${INVISIBLE}]*(?:\\r|\\^M)?\\$?[${INVISIBLE}]*$`);

/**
 * Whether one line, seen alone (a watch-pattern hit), looks like a line of key material: 60–76
 * base64 characters. Masked whole ({@link KEY_MASK}): alone, nothing tells whether its block
 * was a private key's.
 */
export function isKeyMaterialLine(line: string): boolean {
  return KEY_LINE.test(line);
}

/**
 * Whether `text`, whose start is not known to be inside or outside a block (the last bytes
 * of a log), begins with key material: after its first (possibly cut) line, two or more
 * full lines of 60–76 base64 characters, and no marker before them. Such text is masked
 * up to its END line; a base64 body of a certificate is masked too (a false positive, on
 * purpose).
 */
export function leadsWithKeyMaterial(text: string): boolean {
  const lines = text.split('\n', 4).slice(1, 3);
  return lines.length === 2 && lines.every((l) => KEY_LINE.test(l));
}

/**
 * The key-block state across text that is dropped in pieces (the front of a tail), for
 * {@link maskKeyBlocks}' `startsInside` at whatever follows. Keeps the last 64 characters
 * dropped so a marker split between the dropped text and the kept text is still seen.
 */
export class KeyBlockTracker {
  private state = false;
  private carry = '';

  /** Records `text` as dropped (it came right after what was dropped before). */
  drop(text: string): void {
    if (text === '') return;
    const all = this.carry + text;
    const cut = Math.max(0, all.length - 64);
    this.state = insideKeyBlockAt(all, cut, this.state);
    this.carry = all.slice(cut);
  }

  /**
   * Drops `lines` (each followed by a line break) and says of each whether it is part of a
   * private-key block: its BEGIN or END line, or a line between them. Text with no marker
   * outside a block costs one search.
   */
  linesInside(lines: string[]): boolean[] {
    if (!this.insideBefore('') && !(this.carry + lines.join('\n')).includes(NEEDLE)) {
      this.drop(lines.map((l) => `${l}\n`).join(''));
      return lines.map(() => false);
    }
    return lines.map((l) => {
      const before = this.insideBefore(l);
      this.drop(`${l}\n`);
      return before || this.insideBefore('');
    });
  }

  /** Whether text starting right after the dropped text (`next`: its first characters) starts inside a block. */
  insideBefore(next: string): boolean {
    if (this.carry === '') return this.state;
    return insideKeyBlockAt(this.carry + next.slice(0, 64), this.carry.length, this.state);
  }
}
