/**
 * Secrets a command line feeds to a program's standard input: a here-string or `echo SECRET |`
 * in front of a program that reads a secret there (`docker login --password-stdin`).
 */
import { literal, programIndex, type Segment, type Span, tailOf, type Word } from './shellwords.js';

/**
 * Whether the command reads a secret from its standard input: a `--password-stdin` or
 * `--with-token` flag, `--passphrase-fd 0`, openssl's `-passin stdin`, `chpasswd`, `passwd
 * --stdin`, `gh secret set`, `docker secret create NAME -`, `vault login -`.
 */
function readsSecretFromStdin(words: Word[]): boolean {
  const i = programIndex(words);
  const prog = (words[i]?.value ?? '').replace(/^.*\//, '');
  if (prog === 'chpasswd' || prog === 'chgpasswd') return true;
  const args = words.slice(i + 1).map((w) => w.value);
  const has = (...v: string[]) => v.every((x) => args.includes(x));
  if ((prog === 'gh' && has('secret', 'set')) || (prog === 'wrangler' && has('secret', 'put')) || (prog === 'passwd' && has('--stdin'))) return true;
  if (/^(?:docker|podman)$/.test(prog) && has('secret', 'create', '-')) return true;
  if (/^(?:vault|bao)$/.test(prog) && has('login', '-')) return true;
  return args.some(
    (a, k) =>
      /^--?[\w-]*(?:pass|passwd|password|token|secret|passphrase|key|pw|credentials?)[\w-]*-stdin$|^--with-token$|^--(?:passphrase|password|pin)-fd=0$/i.test(a) ||
      (/^--(?:passphrase|password|pin)-fd$/.test(a) && args[k + 1] === '0') ||
      (/^-(?:passin|pass|passout)$/.test(a) && /^(?:stdin|fd:0)$/.test(args[k + 1] ?? '')),
  );
}

/** The here-string words of a segment (`<<< WORD`, `<<<WORD`), literal ones only. */
function hereStrings(words: Word[]): Span[] {
  const spans: Span[] = [];
  words.forEach((w, j) => {
    if (w.value === '<<<') {
      const n = words[j + 1];
      if (n && literal(n)) spans.push(tailOf(n, n.value) as Span);
    } else if (w.value.startsWith('<<<') && literal({ ...w, value: w.value.slice(3) })) spans.push(tailOf(w, w.value.slice(3)) as Span);
  });
  return spans;
}

/**
 * Secrets given on standard input to a command that reads one there: a here-string
 * (`gh auth login --with-token <<< TOKEN`) and `echo SECRET | docker login --password-stdin`.
 */
export function stdinSpans(segs: Segment[]): Span[] {
  const spans: Span[] = [];
  segs.forEach((words, k) => {
    if (readsSecretFromStdin(words)) spans.push(...hereStrings(words));
    const next = segs[k + 1];
    if (!words.piped || !next || !readsSecretFromStdin(next)) return;
    // `cat <<< SECRET | docker login --password-stdin`
    spans.push(...hereStrings(words));
    const i = programIndex(words);
    const prog = words[i]?.value.replace(/^.*\//, '');
    if (prog !== 'echo' && prog !== 'printf') return;
    for (const w of words.slice(i + 1)) {
      if (w.value.startsWith('-') || (prog === 'printf' && w.value.includes('%')) || !literal(w)) continue;
      spans.push(tailOf(w, w.value) as Span);
    }
  });
  return spans.filter((s) => s !== undefined);
}
