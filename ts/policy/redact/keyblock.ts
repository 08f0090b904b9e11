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
// What may follow a marker on its line: blanks, colour codes (`grep --color`), and the line
// ends `cat -A` prints (`^M` for a carriage return, `$` for the line end).
const TRAILER = /(?:[ \t]|\u001b\[[0-?]*[ -/]*[@-~]|\^M|\$(?=\r?\n|$))*/y;

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

/**
 * Masks every private-key block of `text` (see the module docs). `startsInside`: the text
 * begins inside a block whose BEGIN came before it.
 */
export function maskKeyBlocks(text: string, startsInside = false): string {
  if (!startsInside && !text.includes(NEEDLE)) return text;
  let out = '';
  let open = startsInside ? 0 : -1;
  let copied = 0;
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
      // The block starts at the beginning of its line when it opened before the text.
      out += text.slice(copied, from) + maskLines(text.slice(from, m.end));
      copied = m.end;
      open = -1;
    }
  }
  if (open >= 0) {
    out += text.slice(copied, open) + maskLines(text.slice(open));
    copied = text.length;
  }
  return out + text.slice(copied);
}

// A trailing `$` or `^M$` is how `cat -A` shows the line end.
const KEY_LINE = /^[A-Za-z0-9+/]{60,76}={0,2}(?:\r|\^M)?\$?$/;

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

  /** Whether text starting right after the dropped text (`next`: its first characters) starts inside a block. */
  insideBefore(next: string): boolean {
    if (this.carry === '') return this.state;
    return insideKeyBlockAt(this.carry + next.slice(0, 64), this.carry.length, this.state);
  }
}
