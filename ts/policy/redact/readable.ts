/**
 * The readable view of output: what a person sees on a terminal, for redaction. A job can
 * hide a credential name from a pattern without hiding it from a reader: `DB_PASS\e[0mWORD=`
 * (an escape sequence inside the name), `DB_PASSWORX\bD=` (a backspace that overwrites),
 * `DB_PASS\u200bWORD=` (a zero-width character), `DB_PASSWORD\uff1d` (a fullwidth `=`).
 * Redaction matches the readable view of every line that holds such characters, and a line
 * whose readable view holds a secret comes out as its masked readable view (its escapes are
 * lost, never the mask).
 *
 * Line breaks, tabs, carriage returns and NUL (`env -0`'s separator) are kept: the rules
 * already read them, and pages keep the log's line numbers.
 */

// Variation selectors combine with the character before them (a class of them beside other
// characters reads as misleading, so they are kept apart).
const VARIATION = String.raw`[\ufe00-\ufe0f]`;
// Astral characters that draw nothing, as surrogate pairs: tags (U+E0000–E007F), variation
// selectors 17–256 (U+E0100–E01EF), musical symbol format controls (U+1D173–1D17A), shorthand
// format controls (U+1BCA0–1BCA3), Egyptian hieroglyph format controls (U+13430–1343F).
const ASTRAL_INVISIBLE = String.raw`\udb40[\udc00-\udc7f\udd00-\uddef]|\ud834[\udd73-\udd7a]|\ud82f[\udca0-\udca3]|\ud80d[\udc30-\udc3f]`;
// Escape sequences (CSI, OSC, two-byte), C0/C1 controls but tab, LF, CR and NUL, DEL, NBSP,
// soft hyphen, the combining grapheme joiner, wide and zero-width spaces, bidirectional
// controls, word joiners, BOM, and characters NFKC folds to ASCII: super- and subscripts,
// letterlike and enclosed forms, small and fullwidth forms, mathematical letters (`𝐏𝐀𝐒𝐒`).
// Not `…` (U+2026): masks hold it.
const HIDING = new RegExp(
  String.raw`[\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\xa0\xad\u061c\u115f\u1160\u17b4\u17b5\u180e\u2000-\u200f\u202a-\u202f\u205f-\u206f\u2070-\u209f\u2100-\u214f\u2460-\u24ff\u3000\u3164\ufe50-\ufe6f\ufeff\uff00-\uffef]|\u034f|\ud835[\udc00-\udfff]|${VARIATION}|${ASTRAL_INVISIBLE}|[\u0600-\u0605\u2800\ufff9-\ufffb]`,
);
const ESCAPES = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b\n]*(?:\u0007|\u001b\\)?|\u001b[P^_X][^\u001b\n]*(?:\u001b\\)?|\u001b[ -/]*[0-~]|\u009b[0-?]*[ -/]*[@-~]/g;
const INVISIBLE = new RegExp(String.raw`[\x01-\x07\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufeff\uffa0\u0600-\u0605\u2800\ufff9-\ufffb]|\u034f|${VARIATION}|${ASTRAL_INVISIBLE}`, 'g');

/** Whether `text` holds a character that hides or disguises what a reader sees. */
export function hasHidingCharacters(text: string): boolean {
  return HIDING.test(text);
}

// Colour and cursor codes (CSI): they carry no text, so a line holding nothing else shows all
// its text in its readable view.
const CSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u009b[0-?]*[ -/]*[@-~]/g;

/** One line as a terminal shows it: escapes removed, backspaces applied, invisibles dropped, compatibility forms folded (NFKC). */
export function readableLine(line: string): string {
  let s = line.replace(ESCAPES, '');
  if (s.includes('\b')) {
    // A backspace moves the cursor back one column and the next character overwrites it.
    const kept: string[] = [];
    for (const c of s) {
      if (c === '\b') kept.pop();
      else kept.push(c);
    }
    s = kept.join('');
  }
  s = s.replace(INVISIBLE, '');
  return /[^\x00-\x7f]/.test(s) ? s.normalize('NFKC') : s;
}

/**
 * `core` applied to the readable view of `text` (see the module docs). A line whose readable
 * view `core` changes comes out as that masked view. A line holding only colour codes shows
 * all its text in its readable view, and comes out as written when that view holds no
 * secret. Other lines with hiding characters (a title, a backspace, an invisible character)
 * can carry text a reader does not see, so they are also masked as written. `core` keeps the
 * number of lines (every rule masks within a line, key blocks keep their line breaks); if it
 * ever does not, the whole masked readable view is returned.
 */
export function redactReadable(text: string, core: (t: string) => string): string {
  if (!HIDING.test(text)) return core(text);
  const lines = text.split('\n');
  const stripped = text.replace(CSI, '');
  if (!HIDING.test(stripped)) {
    // Colour codes only (the common case): one pass over the text without them.
    const masked = core(stripped);
    if (masked === stripped) return text;
    const r = stripped.split('\n');
    const m = masked.split('\n');
    return m.length !== lines.length ? masked : lines.map((l, i) => (m[i] === r[i] ? l : (m[i] as string))).join('\n');
  }
  // Opaque: a line whose readable view differs by more than its colour codes.
  let opaque = false;
  let changed = false;
  const readable = lines.map((l) => {
    if (!HIDING.test(l)) return l;
    const plain = l.replace(CSI, '');
    const r = HIDING.test(plain) ? readableLine(plain) : plain;
    if (r !== plain) opaque = true;
    if (r !== l) changed = true;
    return r;
  });
  // Typographic characters that read as themselves (`—`, `“`): the text as written.
  if (!changed) return core(text);
  const masked = core(readable.join('\n')).split('\n');
  if (masked.length !== lines.length) return masked.join('\n');
  const raw = opaque ? core(text).split('\n') : undefined;
  if (raw && raw.length !== lines.length) return masked.join('\n');
  return lines
    .map((l, i) => {
      const r = readable[i] as string;
      const m = masked[i] as string;
      if (r === l || m !== r) return m;
      return raw ? (raw[i] as string) : l;
    })
    .join('\n');
}
