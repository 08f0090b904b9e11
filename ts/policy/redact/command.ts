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
import { isCredentialName, notASecret } from './assignments.js';
import { CLIENTS, LOCAL_USER, shortFlagSpans } from './clientflags.js';
import { ASSIGN, afterColon, afterUser, segments, type Span, tailOf, type Word, WRAPPERS, whole } from './shellwords.js';
import { stdinSpans } from './stdinsecrets.js';

/** Methods `--auth` may name (`--auth basic`), as opposed to a credential (`--auth TOKEN`). */
const AUTH_METHOD = /^(?:none|basic|digest|ntlm|negotiate|bearer|ldap|oauth2?|oidc|token|password|kerberos|krb5|gssapi|anonymous|any|anyauth|true|false|sigv4|aws|iam|jwt|mtls|tls|x509|saml|github|google|azure|gcp|local|pam|radius|sso|api-?key|key|cert|userpass|approle|k8s|kubernetes|scram-sha-(?:1|256)|md5|plain|login|cram-md5|xoauth2|trust|peer|ident)$/i;

/** Sub-commands that set a named setting from the next word (`config set NAME VALUE`). */
const CONFIG_VERBS = ['config', 'configure', 'set'];
/** `NAME=value` where NAME may be dotted (`auth.rootPassword=…`). */
const ASSIGN_DOTTED = /^([A-Za-z_][\w.-]*)=(.+)$/s;

/** Whether a setting's name (`github.token`, `//host/:_authToken`, `pypi-token.pypi`) has a credential-named part. */
function settingNamesCredential(name: string): boolean {
  return name.split(/[.:/]+/).some((part) => part !== '' && isCredentialName(part));
}

/** The first word after `verb` that is not a flag or `key=value` (`vault login TOKEN`). */
function positionalAfter(args: Word[], verb: string, nth = 0): Word | undefined {
  const at = args.findIndex((w) => w.value === verb);
  if (at < 0) return undefined;
  return args.slice(at + 1).filter((w) => !w.value.startsWith('-') && !w.value.includes('='))[nth];
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
  // A setting's name comes after its config verb (`gh secret set NAME`: `secret` is the command).
  const at = args.findIndex((w) => CONFIG_VERBS.includes(w.value));
  const configVerbAt = at < 0 ? args.length : at;
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
      // `gh secret set NAME --body VALUE`.
      else if (name === 'body' && prog === 'gh' && sub.has('secret')) spans.push(long[2] !== undefined ? tailOf(w, long[2]) : whole(next(k)));
      // A credential assignment as a flag's value: `--from-literal=password=…`, `--set a.password=…`.
      else if (value !== undefined && long[2] !== undefined && ASSIGN_DOTTED.test(value)) {
        const [, key, v] = ASSIGN_DOTTED.exec(value) as RegExpExecArray;
        if (isCredentialName(key as string) && !notASecret(v as string, true)) spans.push(tailOf(w, v as string));
      }
      else if (isCredentialName(name) || /^(?:pass|password|passwd|pw|pwd|token|secret|api-?key|apikey)$/i.test(name)) {
        if (long[2] !== undefined) spans.push(tailOf(w, long[2]));
        else if (next(k) && !/^[-<>]/.test((next(k) as Word).value)) spans.push(whole(next(k)));
      }
      continue;
    }
    // Java and Gradle properties: `-Djavax.net.ssl.keyStorePassword=…`, `-PsigningPassword=…`.
    const property = /^-[DP]([A-Za-z_][\w.-]*)=(.+)$/s.exec(v);
    if (property && settingNamesCredential(property[1] as string) && !notASecret(property[2] as string, true)) {
      spans.push(tailOf(w, property[2] as string));
      continue;
    }
    if (!/^-[^-]/.test(v)) {
      // `aws configure set aws_secret_access_key VALUE`, `git config github.token VALUE`,
      // `npm config set //host/:_authToken VALUE`: a credential-named setting of a config verb.
      const value = next(k);
      if (k > configVerbAt && !v.includes('=') && settingNamesCredential(v) && value && !value.value.startsWith('-') && !notASecret(value.value, true)) {
        spans.push(whole(value));
        k++;
      }
      continue;
    }
    const found = shortFlagSpans({ prog, word: w, flags: v.slice(1), args, k, sub });
    spans.push(...found.spans);
    if (found.last) break;
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
// A flag word (`--db-password=`, `-Djavax.net.ssl.keyStorePassword=`), then whether it names a
// credential: two steps, since one pattern with a credential word between two `[\w-]*` runs
// backtracks quadratically on a long word of flag characters.
const FLAG_WORD = /(?<!\S)--?[\w.-]+(?=[=\s])/g;
const CREDENTIAL_WORD = /pass|token|secret|api-?key|auth|cred/i;
// A config verb's setting (`aws configure set NAME VALUE`, `git config NAME VALUE`) or an
// assignment given as a flag's value (`--from-literal=password=…`).
const SETTING = /(?<![\w-])(?:config(?:ure)?|set)[ \t]|(?<!\S)--?[\w.-]+=[A-Za-z_][\w.-]*=/;

/** The first flag of `line` that names a credential, or null. */
function credentialFlag(line: string): { index: number } | null {
  for (const m of line.matchAll(FLAG_WORD)) if (CREDENTIAL_WORD.test(m[0])) return { index: m.index };
  return null;
}
// What a command line carrying a secret holds besides the client's name: a flag, a
// here-string, or a login verb (`vault login TOKEN`).
const ANCHORS = [' -', '\t-', '\n-', '<<<', 'login ', 'auth', 'config', ' set '];

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
    const client = CLIENT_WORD.exec(line) ?? credentialFlag(line) ?? (CREDENTIAL_WORD.test(line) ? SETTING.exec(line) : null);
    if (!client) continue;
    out += text.slice(copied, start) + maskLongLine(line, client.index, mask);
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}
