/**
 * Password flags of command lines (what procward stores in checkpoint.json, session.json and
 * `list`). The line is split into shell words (quotes and backslashes respected) and
 * segments (`;`, `&&`, `||`, `|`, parentheses); each segment's program (after `VAR=value`
 * prefixes and wrappers such as `sudo`, `env`, `nohup`, `time`) picks its rules:
 *
 * - `VAR=value` prefixes and `export VAR=value` with a credential name: any literal value.
 * - Long flags named like a credential, `=` and space forms: `--password`, `--passwd`,
 *   `--token`, `--secret`, `--api-key`, `--client-secret`, `--http-password`, ... (not
 *   `--password-stdin`, `--token-file` and other flags *about* a credential).
 * - mysql/mariadb clients: `-p<pw>` (attached only: `-p pw` prompts and names a database).
 * - curl: `-u`/`--user`/`-U`/`--proxy-user` in every spelling (`-uu:p`, `-su u:p`,
 *   `--user=u:p`), the part after the first `:`.
 * - redis-cli `-a`, mongo/mongosh/mongodump `-p`, sshpass `-p`, ldap* `-w`, zip/unzip `-P`,
 *   7z `-p<pw>`, docker/podman/nerdctl/helm/buildah/skopeo/oras `login -p`, openssl `-k`,
 *   `-K` and `pass:` of `-pass`/`-passin`/`-passout`, keytool `-storepass`/`-keypass`,
 *   htpasswd `-b` (its last argument), smbclient `-U user%pw`.
 * - The same inside a command another runs: a client named later in the line (`docker exec
 *   db mysql -p…`, `ssh host curl -u …`) or a quoted word holding a command (`bash -c "…"`).
 */
import { isCredentialName } from './assignments.js';

interface Word {
  /** The word as written (quotes included). */
  raw: string;
  /** The word after quote removal. */
  value: string;
  start: number;
  end: number;
}

/** Splits `line` into segments of shell words. Best effort: an unclosed quote runs to the end. */
function segments(line: string): Word[][] {
  const out: Word[][] = [[]];
  let i = 0;
  while (i < line.length) {
    const c = line[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (';|&()\n'.includes(c)) {
      if ((out[out.length - 1] as Word[]).length) out.push([]);
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

/** Programs with rules of their own below (found after a wrapper or inside another command). */
const CLIENTS = new Set(
  'mysql mysqldump mysqladmin mysqlimport mysqlshow mysqlcheck mariadb mariadb-dump mariadb-admin curl wget redis-cli mongo mongosh mongodump mongorestore mongoexport mongoimport sshpass ldapsearch ldapadd ldapmodify ldapdelete ldappasswd ldapwhoami zip unzip 7z 7za 7zz smbclient openssl keytool htpasswd psql pg_dump'.split(' '),
);

const WRAPPERS = new Set(['sudo', 'env', 'nohup', 'time', 'exec', 'command', 'nice', 'ionice', 'timeout', 'stdbuf', 'xargs', 'doas', 'builtin']);
const ASSIGN = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s;

/** A range of the line to mask. */
interface Span {
  start: number;
  end: number;
  secret: string;
  /** What the span becomes (default: the mask of its text). */
  replacement?: string;
}

/** The span of `secret` at the end of `word` (the value part of `-pSECRET`, `--password=SECRET`). */
function tailOf(word: Word, secret: string): Span | undefined {
  if (secret === '') return undefined;
  const at = word.raw.lastIndexOf(secret);
  // Quotes or escapes inside the secret: mask the whole word after its flag.
  if (at < 0) return { start: word.start + Math.max(0, word.raw.length - secret.length - 2), end: word.end, secret };
  return { start: word.start + at, end: word.start + at + secret.length, secret };
}

function whole(word: Word | undefined): Span | undefined {
  if (!word || word.value === '' || /^\$\{?[A-Za-z_]\w*\}?$/.test(word.value)) return undefined;
  return tailOf(word, word.value);
}

/** The password of `user:password` (curl), or undefined without one. */
function afterColon(word: Word | undefined, value = word?.value): Span | undefined {
  if (!word || value === undefined) return undefined;
  const colon = value.indexOf(':');
  return colon < 0 ? undefined : word && tailOf(word, value.slice(colon + 1));
}

/** Spans to mask in one segment. */
function segmentSpans(words: Word[]): Span[] {
  const spans: (Span | undefined)[] = [];
  let i = 0;
  // Prefix assignments and wrappers.
  for (; i < words.length; i++) {
    const w = words[i] as Word;
    const a = ASSIGN.exec(w.value);
    if (a) {
      if (isCredentialName(a[1] as string)) spans.push(whole({ ...w, value: a[2] as string }));
      continue;
    }
    if (w.value === 'export' || w.value === 'declare' || w.value === 'local' || w.value === 'readonly') continue;
    if (WRAPPERS.has(w.value) || (words[i - 1] && WRAPPERS.has((words[i - 1] as Word).value) && w.value.startsWith('-'))) continue;
    break;
  }
  const prog = (words[i]?.value ?? '').replace(/^.*\//, '');
  const args = words.slice(i + 1);
  const sub = new Set(args.filter((w) => !w.value.startsWith('-')).map((w) => w.value));
  const next = (k: number) => args[k + 1];
  for (let k = 0; k < args.length; k++) {
    const w = args[k] as Word;
    const v = w.value;
    // A client run by another program (`docker exec db mysql -p…`, `ssh host curl -u …`,
    // `kubectl exec pod -- redis-cli -a …`): the rest is its command line.
    if (k > 0 && CLIENTS.has(v.replace(/^.*\//, ''))) {
      spans.push(...segmentSpans(args.slice(k)));
      break;
    }
    // export-style assignments after the program (`export A=1 B_TOKEN=x`).
    const a = ASSIGN.exec(v);
    if (a && isCredentialName(a[1] as string) && (prog === 'export' || prog === 'declare')) spans.push(whole({ ...w, value: a[2] as string }));
    const long = /^--([A-Za-z][\w-]*)(?:=(.*))?$/s.exec(v);
    if (long) {
      const name = long[1] as string;
      const isUser = /^(?:user|proxy-user)$/.test(name) && /^(?:curl|wget)$/.test(prog);
      if (isUser) spans.push(long[2] !== undefined ? afterColon(w, long[2]) : afterColon(next(k)));
      else if (isCredentialName(name) || /^(?:pass|password|passwd|pw|pwd|token|secret|api-?key|apikey)$/i.test(name)) {
        if (long[2] !== undefined) spans.push(tailOf(w, long[2]));
        else if (next(k) && !(next(k) as Word).value.startsWith('-')) spans.push(whole(next(k)));
      }
      continue;
    }
    if (!/^-[^-]/.test(v)) continue;
    const flags = v.slice(1);
    const attached = (letter: string): Span | undefined => {
      // `-pSECRET` or a cluster ending in the letter followed by the next word (`-su u:p`).
      const at = flags.indexOf(letter);
      if (at < 0 || !/^[A-Za-z]*$/.test(flags.slice(0, at))) return undefined;
      const rest = flags.slice(at + 1);
      return rest !== '' ? tailOf(w, rest) : whole(next(k));
    };
    switch (prog) {
      case 'mysql':
      case 'mysqldump':
      case 'mysqladmin':
      case 'mysqlimport':
      case 'mysqlshow':
      case 'mysqlcheck':
      case 'mariadb':
      case 'mariadb-dump':
      case 'mariadb-admin':
        if (flags.startsWith('p') && flags.length > 1) spans.push(tailOf(w, flags.slice(1)));
        break;
      case 'curl': {
        const at = flags.search(/[uU]/);
        // Only options without an argument may come before it in a cluster (`-sSfu`).
        if (at >= 0 && /^[sSfLkvIiNgGjJlnOqRZ]*$/.test(flags.slice(0, at))) {
          const rest = flags.slice(at + 1);
          spans.push(rest !== '' ? afterColon(w, rest) : afterColon(next(k)));
        }
        break;
      }
      case 'redis-cli':
        if (flags.startsWith('a')) spans.push(attached('a'));
        break;
      case 'mongo':
      case 'mongosh':
      case 'mongodump':
      case 'mongorestore':
      case 'mongoexport':
      case 'mongoimport':
      case 'sshpass':
        if (flags.startsWith('p')) spans.push(attached('p'));
        break;
      case 'ldapsearch':
      case 'ldapadd':
      case 'ldapmodify':
      case 'ldapdelete':
      case 'ldappasswd':
      case 'ldapwhoami':
        if (flags === 'w') spans.push(whole(next(k)));
        break;
      case 'zip':
      case 'unzip':
        if (flags === 'P') spans.push(whole(next(k)));
        break;
      case '7z':
      case '7za':
      case '7zz':
        if (flags.startsWith('p') && flags.length > 1) spans.push(tailOf(w, flags.slice(1)));
        break;
      case 'smbclient':
        if (flags === 'U') spans.push(afterColon(next(k), next(k)?.value.replace('%', ':')));
        break;
      case 'openssl':
        if (flags === 'k' || flags === 'K') spans.push(whole(next(k)));
        else if (/^(?:pass|passin|passout)$/.test(flags)) {
          const n = next(k);
          if (n?.value.startsWith('pass:')) spans.push(tailOf(n, n.value.slice(5)));
        }
        break;
      case 'keytool':
        if (/^(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass|password)$/.test(flags)) spans.push(whole(next(k)));
        break;
      case 'htpasswd':
        if (/^[a-zA-Z]*b[a-zA-Z]*$/.test(flags)) {
          // htpasswd -b[c] FILE USER PASSWORD, htpasswd -nb USER PASSWORD: the last argument.
          const positional = args.slice(k + 1).filter((x) => !x.value.startsWith('-'));
          spans.push(whole(positional[positional.length - 1]));
          k = args.length;
        }
        break;
      default:
        if (/^(?:docker|podman|nerdctl|helm|buildah|skopeo|oras|crane|regctl)$/.test(prog) && sub.has('login') && flags.startsWith('p')) spans.push(attached('p'));
        if ((prog === 'az' || prog === 'cf') && sub.has('login') && flags === 'p') spans.push(whole(next(k)));
    }
  }
  return spans.filter((s): s is Span => s !== undefined && s.end > s.start);
}

/** Masks the password flags and credential prefixes of a command line (see the module docs). */
export function maskCommandFlags(line: string, mask: (s: string) => string, depth = 0): string {
  const words = segments(line);
  const spans: Span[] = words.flatMap(segmentSpans);
  // A quoted word holding a command (`bash -c "mysql -p…"`, `ssh host 'curl -u …'`) is
  // masked as a command line of its own, a few levels deep.
  if (depth < 3) {
    for (const w of words.flat()) {
      const q = w.raw[0];
      if ((q !== '"' && q !== "'") || w.raw.length < 3 || w.raw[w.raw.length - 1] !== q || !/\s/.test(w.value)) continue;
      const inner = w.raw.slice(1, -1);
      const masked = maskCommandFlags(inner, mask, depth + 1);
      if (masked !== inner) spans.push({ start: w.start, end: w.end, secret: '', replacement: `${q}${masked}${q}` });
    }
  }
  spans.sort((a, b) => a.start - b.start);
  let out = '';
  let at = 0;
  for (const s of spans) {
    if (s.start < at) continue;
    out += line.slice(at, s.start) + (s.replacement ?? mask(line.slice(s.start, s.end)));
    at = s.end;
  }
  return out + line.slice(at);
}
