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

/** The words of one simple command; `piped`: its output is the next segment's input (`a | b`). */
type Segment = Word[] & { piped?: boolean };

/** Splits `line` into segments of shell words. Best effort: an unclosed quote runs to the end. */
function segments(line: string): Segment[] {
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
function programIndex(words: Word[]): number {
  let i = 0;
  for (; i < words.length; i++) {
    const w = words[i] as Word;
    if (ASSIGN.test(w.value) || w.value === 'export' || w.value === 'declare' || w.value === 'local' || w.value === 'readonly') continue;
    if (WRAPPERS.has(w.value) || (words[i - 1] && WRAPPERS.has((words[i - 1] as Word).value) && w.value.startsWith('-'))) continue;
    break;
  }
  return i;
}

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

/** A literal word (not `$VAR`, not `$(…)`). */
function literal(w: Word): boolean {
  return w.value !== '' && !/^\$/.test(w.value) && !w.raw.startsWith('"$');
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
function stdinSpans(segs: Segment[]): Span[] {
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

/** Programs whose `-u`/`--user` names a local user or `uid:gid`, never `user:password`. */
const LOCAL_USER = new Set('docker podman nerdctl kubectl sudo su ps pgrep pkill top htop runuser chroot setpriv crontab systemctl journalctl loginctl useradd usermod id who lsof fuser find chown install'.split(' '));

/** Methods `--auth` may name (`--auth basic`), as opposed to a credential (`--auth TOKEN`). */
const AUTH_METHOD = /^(?:none|basic|digest|ntlm|negotiate|bearer|ldap|oauth2?|oidc|token|password|kerberos|krb5|gssapi|anonymous|any|anyauth|true|false|sigv4|aws|iam|jwt|mtls|tls|x509|saml|github|google|azure|gcp|local|pam|radius|sso|api-?key|key|cert|userpass|approle|k8s|kubernetes|scram-sha-(?:1|256)|md5|plain|login|cram-md5|xoauth2|trust|peer|ident)$/i;

/** The part of `user:password` or `user,password` after the user (lftp, httpie-style user flags). */
function afterUser(word: Word | undefined, value = word?.value): Span | undefined {
  if (!word || value === undefined) return undefined;
  const m = /^[\w.@%+-]+[:,](.+)$/.exec(value);
  if (!m || /^\d+$/.test(m[1] as string) || (m[1] as string).startsWith('/')) return undefined;
  return tailOf(word, m[1] as string);
}

/** The first word after `verb` that is not a flag or `key=value` (`vault login TOKEN`). */
function positionalAfter(args: Word[], verb: string, nth = 0): Word | undefined {
  const at = args.findIndex((w) => w.value === verb);
  if (at < 0) return undefined;
  return args.slice(at + 1).filter((w) => !w.value.startsWith('-') && !w.value.includes('='))[nth];
}

/** Programs with rules of their own below (found after a wrapper or inside another command). */
const CLIENTS = new Set(
  'mysql mysqldump mysqladmin mysqlimport mysqlshow mysqlcheck mariadb mariadb-dump mariadb-admin curl wget redis-cli mongo mongosh mongodump mongorestore mongoexport mongoimport sshpass ldapsearch ldapadd ldapmodify ldapdelete ldappasswd ldapwhoami zip unzip 7z 7za 7zz smbclient openssl keytool htpasswd psql pg_dump sqlcmd bcp osql ssh-keygen lftp gpg vault bao snyk ngrok'.split(' '),
);

// `+` and `$`: a shell trace (`set -x`) or a prompt shown in output.
const WRAPPERS = new Set(['+', '++', '$', 'sudo', 'env', 'nohup', 'time', 'exec', 'command', 'nice', 'ionice', 'timeout', 'stdbuf', 'xargs', 'doas', 'builtin']);
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
function segmentSpans(words: Word[], depth = 0): Span[] {
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
  // A line of output may start with a flag (a usage text, a wrapped command): no program.
  const flagFirst = words[i]?.value.startsWith('-') === true;
  const prog = flagFirst ? '' : (words[i]?.value ?? '').replace(/^.*\//, '');
  const args = words.slice(flagFirst ? i : i + 1);
  const sub = new Set(args.filter((w) => !w.value.startsWith('-')).map((w) => w.value));
  const next = (k: number) => args[k + 1];
  // A token given as the argument of a login verb.
  if ((prog === 'vault' || prog === 'bao') && sub.has('login')) {
    const t = positionalAfter(args, 'login');
    if (t && t.value !== '-') spans.push(whole(t));
  }
  if (prog === 'snyk' && sub.has('auth')) spans.push(whole(positionalAfter(args, 'auth')));
  if (prog === 'ngrok') spans.push(whole(positionalAfter(args, 'authtoken') ?? positionalAfter(args, 'add-authtoken')));
  if (prog === 'cf' && sub.has('auth')) spans.push(whole(positionalAfter(args, 'auth', 1)));
  for (let k = 0; k < args.length; k++) {
    const w = args[k] as Word;
    const v = w.value;
    // A client run by another program (`docker exec db mysql -p…`, `ssh host curl -u …`,
    // `kubectl exec pod -- redis-cli -a …`): the rest is its command line.
    // A few levels: output can name a client thousands of times on one line.
    if (depth < 4 && CLIENTS.has(v.replace(/^.*\//, ''))) {
      spans.push(...segmentSpans(args.slice(k), depth + 1));
      break;
    }
    // export-style assignments after the program (`export A=1 B_TOKEN=x`).
    const a = ASSIGN.exec(v);
    if (a && isCredentialName(a[1] as string) && (prog === 'export' || prog === 'declare')) spans.push(whole({ ...w, value: a[2] as string }));
    const long = /^--([A-Za-z][\w-]*)(?:=(.*))?$/s.exec(v);
    if (long) {
      const name = long[1] as string;
      const isUser = /^(?:user|proxy-user)$/.test(name) && /^(?:curl|wget)$/.test(prog);
      const value = long[2] ?? next(k)?.value;
      const valueWord = long[2] !== undefined ? w : next(k);
      if (isUser) spans.push(long[2] !== undefined ? afterColon(w, long[2]) : afterColon(next(k)));
      else if (/^(?:user|username|login)$/.test(name) && !LOCAL_USER.has(prog)) spans.push(afterUser(valueWord, value));
      else if (name === 'auth' && value !== undefined && !value.startsWith('-') && !AUTH_METHOD.test(value)) spans.push(long[2] !== undefined ? tailOf(w, long[2]) : whole(next(k)));
      else if (name === 'with-token') continue;
      else if (isCredentialName(name) || /^(?:pass|password|passwd|pw|pwd|token|secret|api-?key|apikey)$/i.test(name)) {
        if (long[2] !== undefined) spans.push(tailOf(w, long[2]));
        else if (next(k) && !/^[-<>]/.test((next(k) as Word).value)) spans.push(whole(next(k)));
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
      case 'sqlcmd':
      case 'bcp':
      case 'osql':
        if (flags === 'P') spans.push(whole(next(k)));
        break;
      case '7z':
      case '7za':
      case '7zz':
        if (flags.startsWith('p') && flags.length > 1) spans.push(tailOf(w, flags.slice(1)));
        break;
      case 'ssh-keygen':
        // -N new passphrase, -P old passphrase.
        if (flags === 'N' || flags === 'P') spans.push(whole(next(k)));
        break;
      case 'lftp':
        if (flags === 'u') spans.push(afterUser(next(k)));
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
        // `-u user:password` or `-u user,password` of any client but those naming a local user.
        if (flags === 'u' && !LOCAL_USER.has(prog)) spans.push(afterUser(next(k)));
    }
  }
  return spans.filter((s): s is Span => s !== undefined && s.end > s.start);
}

// What a usage text shows where a value goes: `--password PASSWORD`, `<token>`, `[key]`.
const PLACEHOLDER = /^(?:[A-Z][A-Z0-9_-]*|<[^<>]*>|\[[^\]]*\]|\{[^{}]*\}|\.\.\.)$/;

/**
 * Masks the password flags and credential prefixes of a command line (see the module docs).
 * `output`: the line was found in output, where usage texts show placeholders as values.
 */
export function maskCommandFlags(line: string, mask: (s: string) => string, depth = 0, output = false): string {
  const words = segments(line);
  let spans: Span[] = [...words.flatMap((w) => segmentSpans(w)), ...stdinSpans(words)];
  if (output) spans = spans.filter((s) => !PLACEHOLDER.test(line.slice(s.start, s.end)));
  // A quoted word holding a command (`bash -c "mysql -p…"`, `ssh host 'curl -u …'`) is
  // masked as a command line of its own, a few levels deep.
  if (depth < 3) {
    for (const w of words.flat()) {
      const q = w.raw[0];
      if ((q !== '"' && q !== "'") || w.raw.length < 3 || w.raw[w.raw.length - 1] !== q || !/\s/.test(w.value)) continue;
      const inner = w.raw.slice(1, -1);
      const masked = maskCommandFlags(inner, mask, depth + 1, output);
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

/** Clients whose password flags are also masked where a command line shows up in output. */
const OUTPUT_CLIENTS = [...CLIENTS, 'docker', 'podman', 'helm', 'az', 'cf', 'chpasswd'];
const CLIENT_WORD = new RegExp(`(?<![\\w-])(?:${OUTPUT_CLIENTS.map((c) => c.replace(/-/g, '\\-')).join('|')})(?![\\w-])`);
const CREDENTIAL_FLAG = /(?<!\S)--?[\w-]*(?:pass|token|secret|api-?key|auth|cred)[\w-]*(?=[=\s])/i;
// What a command line carrying a secret holds besides the client's name: a flag, a
// here-string, or a login verb (`vault login TOKEN`).
const ANCHORS = [' -', '\t-', '\n-', '<<<', 'login ', 'auth'];

/** Longest part of an output line parsed as a command: parsing costs about 0.25 ms per KB. */
const MAX_COMMAND_CHARS = 64 * 1024;

/**
 * `line` masked as a command. A line longer than {@link MAX_COMMAND_CHARS} is parsed from its
 * first client on, up to that length (a job printing megabytes of client names on one line
 * would otherwise make every page cost seconds); flags past it are not masked.
 */
function maskLongLine(line: string, client: number, mask: (s: string) => string): string {
  if (line.length <= MAX_COMMAND_CHARS) return maskCommandFlags(line, mask, 0, true);
  const cut = line.lastIndexOf(' ', client + MAX_COMMAND_CHARS);
  const end = cut > client ? cut : client + MAX_COMMAND_CHARS;
  return line.slice(0, client) + maskCommandFlags(line.slice(client, end), mask, 0, true) + line.slice(end);
}

/**
 * Masks password flags in the lines of output that show a command line naming a client (a
 * shell trace `+ mysql -p…`, `ps` output, a script's echo): each such line is masked as a
 * command (see {@link maskCommandFlags}). Lines are found from rare anchors (` -`, `<<<`,
 * `login `, `auth`), so most of a log is scanned, not parsed.
 */
export function maskCommandsInOutput(text: string, mask: (s: string) => string): string {
  const starts = new Set<number>(text.startsWith('-') ? [0] : []);
  for (const needle of ANCHORS) {
    for (let at = text.indexOf(needle); at >= 0; ) {
      // A `\n-` anchor: the line starts after its line break.
      const start = text[at] === '\n' ? at + 1 : text.lastIndexOf('\n', at) + 1;
      starts.add(start);
      const nl = text.indexOf('\n', at);
      at = nl < 0 ? -1 : text.indexOf(needle, nl + 1);
    }
  }
  if (starts.size === 0) return text;
  let out = '';
  let copied = 0;
  for (const start of [...starts].sort((a, b) => a - b)) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    const line = text.slice(start, end);
    // A client's name, or a credential-named flag of any program (`./deploy --password …`).
    const client = CLIENT_WORD.exec(line) ?? CREDENTIAL_FLAG.exec(line);
    if (!client) continue;
    out += text.slice(copied, start) + maskLongLine(line, client.index, mask);
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}
