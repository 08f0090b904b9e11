/**
 * Credential-named values, recognised by the shape of the text rather than by the command
 * that printed it: `NAME=value` lines (also NUL-separated as `env -0` prints them, and in
 * `export`/`declare -x`/`set` forms), upper-case `NAME=value` words inside a line, `"NAME":
 * "value"` JSON or Python dicts, and `NAME: value` YAML-ish lines, whenever NAME looks like a
 * credential (see {@link isCredentialName}).
 *
 * False positives are kept low by the value: empty, booleans, short numbers, placeholders
 * (`${VAR}`, `$VAR`, `<token>`, `{{ var }}`, `***`), paths and code references
 * (`process.env.X`, `os.environ[...]`) are not secrets in output. In a command's
 * `VAR=value` prefix any literal value is (see `command.ts`).
 */

/** Names that look like credentials (`*_TOKEN`, `*_SECRET`, `*PASSWORD*`, `*_API_KEY`, ...), upper snake case. */
export const CREDENTIAL_NAME =
  /(?:^|_)(?:TOKEN|SECRET|SECRETS|PASSWORD|PASSWD|PASS|API_?KEY|ACCESS_?KEY|SECRET_?KEY|PRIVATE_?KEY|CLIENT_SECRET|CREDENTIALS?|AUTH_?TOKEN|SESSION_?KEY|SIGNING_?KEY|WEBHOOK_?SECRET|DSN)(?:_|$)|(?:PASSWORD|PASSWD)$/i;

/** Suffixes that name something about a credential rather than the credential (`TOKEN_TTL`, `PASSWORD_FILE`). */
const ABOUT_A_CREDENTIAL =
  /_(?:TYPE|TTL|ID|URL|URI|FILE|PATH|DIR|LENGTH|LEN|SIZE|EXPIRY|EXPIRES(?:_IN|_AT)?|ENDPOINT|HOST|PORT|NAME|USER|USERNAME|COUNT|LIMIT|TIMEOUT|MIN|MAX|MIN_LENGTH|ENABLED|HEADER|PREFIX|FORMAT|VERSION|MODE|REGION|STDIN|FD|PROMPT|CMD|COMMAND|HELPER|STORE|SOURCE|POLICY|RESET|HINT|PROVIDER)$/i;

/**
 * Whether `name` names a credential. Accepts `UPPER_SNAKE`, `lower_snake`, `camelCase` and
 * `kebab-case` (`apiKey`, `client-secret`).
 */
export function isCredentialName(name: string): boolean {
  // Output repeats the same few names: remember the answers (bounded).
  let known = verdicts.get(name);
  if (known === undefined) {
    if (verdicts.size >= 4096) verdicts.clear();
    known = credentialName(name);
    verdicts.set(name, known);
  }
  return known;
}

const verdicts = new Map<string, boolean>();

function credentialName(name: string): boolean {
  const snake = name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/-/g, '_').toUpperCase();
  // `MYSQL_PWD` is a password; `PWD` and `OLDPWD` are directories.
  const pwd = /_PWD$/.test(snake) && snake !== 'OLDPWD';
  return (pwd || CREDENTIAL_NAME.test(snake)) && !ABOUT_A_CREDENTIAL.test(snake);
}

/**
 * A value that is not a secret when printed: empty, a short number, a boolean, a
 * placeholder or reference, a file path, code. `command`: in a command's prefix every
 * literal is the secret (`PGPASSWORD=123 psql`), so only empty values and references pass.
 */
export function notASecret(raw: string, command = false): boolean {
  const v = raw.replace(/^["']|["'],?$/g, '').trim();
  if (v === '' || v.includes('…') || /^\*\*\*(?:\s|$)/.test(v) || v.startsWith('$(') || v.startsWith('`') || /^\$\{?[A-Za-z_]\w*(?::?[-?=+][^}]*)?\}?$/.test(v) || /^\*+$/.test(v)) return true;
  if (command) return false;
  return (
    /^\d{1,7}$/.test(v) ||
    /^(?:true|false|yes|no|on|off|null|nil|none|undefined|required|optional|bearer|basic)$/i.test(v) ||
    /^<[^<>]*>$|^\{\{.*\}\}$|^%[A-Za-z_]\w*%$|^\[(?:REDACTED|MASKED|HIDDEN)[^\]]*\]$/i.test(v) ||
    /^(?:\/|\.{1,2}\/|~\/)[\w./-]*$/.test(v) ||
    /^(?:process\.env|os\.environ|os\.getenv|ENV\[|env\(|getenv\()/.test(v)
  );
}

const LINE = /(^|\0)([ \t]*(?:export[ \t]+|declare[ \t]+-[a-zA-Z]+[ \t]+|set[ \t]+|-[ \t]+)?)([A-Za-z_][A-Za-z0-9_]*)=([^\n\0]*)/gm;
const WORD = /(^|[\s,;([{'"?&])([A-Za-z_][A-Za-z0-9_]*)=("[^"\n]*"|'[^'\n]*'|[^\s,;'"&)\]}]+)/g;
const QUOTED = /(["'])([A-Za-z_][\w-]*)\1(\s*:\s*)(["'])((?:\\.|(?!\4)[^\\\n])*)\4/g;
// An indented key (inside a mapping) may have a value of several words; at column 0 only one
// (`passwd: password updated successfully` is a message, not YAML).
const YAML = /^((?:[ \t]+(?:-[ \t]+)?|-[ \t]+)?)([A-Za-z_][\w-]*)(:[ \t]+)("[^"\n]*"|'[^'\n]*'|[^\s#|>&*!{[][^\s#]*|(?<=^[ \t]+[\w-]+:[ \t]+)[^\s#|>&*!{[][^#\n]*?)([ \t]*)$/gm;

/**
 * Masks credential-named values in `text` by its shape (see the module docs). `lines`:
 * also whole `NAME=value` lines (not for command lines, where the rest of the line is the
 * command, not the value).
 */
export function maskAssignments(text: string, mask: (s: string) => string, lines = true): string {
  // Every rule is line-local and every credential name holds one of these words: only the
  // lines that hold one are matched (most lines of a log hold none).
  let out = '';
  let copied = 0;
  for (const m of text.matchAll(KEYWORD)) {
    if (m.index < copied) continue;
    const start = text.lastIndexOf('\n', m.index) + 1;
    const nl = text.indexOf('\n', m.index);
    const end = nl < 0 ? text.length : nl;
    out += text.slice(copied, start) + maskLine(text.slice(start, end), mask, lines);
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

const KEYWORD = /pass|pwd|token|secret|key|cred|dsn|auth/gi;

function unquoted(v: string, m: (s: string) => string): string {
  const q = /^(["'])(.*)\1$/.exec(v);
  return q ? `${q[1]}${m(q[2] as string)}${q[1]}` : m(v);
}

/** A lower-case name is often code (`token=getToken()`, `key=args.key`). */
function code(name: string, v: string): boolean {
  return /[a-z]/.test(name) && (/[([]/.test(v) || /^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$/.test(v));
}

function maskLine(text: string, mask: (s: string) => string, lines: boolean): string {
  let out = text;
  if (out.includes('=')) {
    if (lines) {
      out = out.replace(LINE, (all, start: string, lead: string, name: string, value: string) =>
        isCredentialName(name) && !notASecret(value) && !code(name, value) ? `${start}${lead}${name}=${unquoted(value, mask)}` : all,
      );
    }
    out = out.replace(WORD, (all, lead: string, name: string, value: string) =>
      isCredentialName(name) && !notASecret(value) && !code(name, value) ? `${lead}${name}=${unquoted(value, mask)}` : all,
    );
  }
  if (!out.includes(':')) return out;
  out = out.replace(QUOTED, (all, q: string, name: string, sep: string, vq: string, value: string) =>
    isCredentialName(name) && !notASecret(value) ? `${q}${name}${q}${sep}${vq}${mask(value)}${vq}` : all,
  );
  return out.replace(YAML, (all, lead: string, name: string, sep: string, value: string, trail: string) =>
    isCredentialName(name) && !notASecret(value) ? `${lead}${name}${sep}${unquoted(value, mask)}${trail}` : all,
  );
}
