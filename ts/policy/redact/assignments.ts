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

import { rewriteLines } from './lines.js';
import { isCredentialName, notASecret } from './names.js';
import { maskPrinted } from './printers.js';

export { CREDENTIAL_NAME, isCredentialName, notASecret } from './names.js';

const LINE = /(^|\0)([ \t]*(?:export[ \t]+|declare[ \t]+-[a-zA-Z]+[ \t]+|set[ \t]+|-[ \t]+)?)([A-Za-z_][\w.-]*)=([^\n\0]*)/gm;
const WORD = /(^|[\s,;([{'"?&])([A-Za-z_][A-Za-z0-9_.]*)=("[^"\n]*"|'[^'\n]*'|[^\s,;'"&)\]}]+)/g;
// `"NAME": "value"` (JSON), and `"db_password": value` (YAML or a Python dict with a bare value).
const QUOTED = /(["'])(?=[\w.-]{0,64}?(?:pass|pwd|token|secret|key|cred|dsn|auth|signature))([A-Za-z_][\w.-]{0,127})\1(\s*(?::|=>)\s*)(?:(["'])((?:\\.|(?!\4)[^\\\n])*)\4|([^\s"',}\]{[][^\s,}\]]*))/gi;
// An indented key (inside a mapping) may have a value of several words; at column 0 only one
// (`passwd: password updated successfully` is a message, not YAML).
const YAML = /^((?:[ \t]+(?:-[ \t]+)?|-[ \t]+)?)([A-Za-z_][\w.-]*)(:[ \t]+)("[^"\n]*"|'[^'\n]*'|[^\s#|>&*!{[][^\s#]*|(?<=^[ \t]+[\w-]+:[ \t]+)[^\s#|>&*!{[](?:[^#\n]*[^\s#])?)([ \t]*)$/gm;

// `NAME = value`, `NAME := value`, `$env:NAME = "value"`, `a.b.password=value` (TOML, INI,
// HCL and terraform output, PowerShell, Makefiles, Java properties). A quoted value may be
// followed by anything; an unquoted one must end the line or precede a comment: `token =
// await fetchToken()` is code, not a setting.
const SPACED = /(^|[\s,;({[-])(\$env:|\$)?(?=[\w.-]{0,64}?(?:pass|pwd|token|secret|key|cred|dsn|auth|signature))([A-Za-z_][\w.-]{0,127})([ \t]*:?=[ \t]*)(?!=)((?:"[^"\n]*"|'[^'\n]*')|[^\s"'#;]+(?=[ \t]*(?:[#;].*)?$))/gi;
// `NAME<TAB>value`, a line of two columns (`env | tr = '\t'`, `docker inspect` templates), with
// an environment-style name (`kpasswd<TAB>464/tcp` is /etc/services).
const TABBED = /^([ \t]*)([A-Z_][A-Z0-9_]*)(\t[ \t]*)(\S+)([ \t]*)$/;
// fish `set -gx NAME value`, csh `setenv NAME value`: the rest of the line is the value.
const SET = /^([ \t]*(?:set(?:[ \t]+-[A-Za-z]+)*|setenv)[ \t]+)([A-Za-z_]\w*)([ \t]+)(\S(?:.*\S)?)([ \t]*)$/;
// An unquoted key and a quoted value inside a line: `{ password: "…" }` (JavaScript, YAML
// flow mappings), `:password => "…"` (Ruby).
const KEYED = /((?:^|[{,(\[\s]):?)(?=[\w.-]{0,64}?(?:pass|pwd|token|secret|key|cred|dsn|auth|signature))([A-Za-z_][\w.-]{0,127})([ \t]*(?::|=>)[ \t]*)("[^"\n]*"|'[^'\n]*')/gi;
// A label of a few words ending in a credential word, then one value: `Generated admin
// password: …`, `Your API key: …`. A value of lower-case letters only is a status
// (`Password: changed`).
const LABEL = /^([ \t]*(?:[A-Za-z][\w-]*[ \t]+){1,4}(?:password|passwd|passphrase|token|secret|api[ _-]?key|access[ _-]?key|secret[ _-]?key|private[ _-]?key|client[ _-]?secret|auth[ _-]?token|access[ _-]?token|refresh[ _-]?token)[ \t]*[:=][ \t]*)(\S+)([ \t]*)$/i;
// `<password>value</password>`, `<ns:Password>`, `<entry key="password">value</entry>`.
const XML = /<([A-Za-z_][\w.:-]*)((?:[ \t][^<>\n]*)?>)([^<>\n]+)(<\/\1>)/g;
/** A name field whose quote is capture group `q` (the name itself is group `q + 2`). */
const nameKey = (q: number) => `(?<![\\w-])(["']?)(?:name|key|type|Name|Key|NAME|KEY|ParameterKey|ParameterName|OutputKey)\\${q}[ \\t]*[:=][ \\t]*(["']?)([\\w./:-]{1,128})\\${q + 1}`;
/** A value field whose quote is capture group `q`. */
const valueKey = (q: number) => `(["']?)(?:value|Value|VALUE|ParameterValue|OutputValue)\\${q}[ \\t]*[:=][ \\t]*`;
// A name field and a value field on one line: `{"name":"DB_PASSWORD","value":"…"}` (Kubernetes,
// ECS), `<add key="DbPassword" value="…"/>` (.NET), `"Name": "/prod/db/password", "Type":
// "SecureString", "Value": "…"` (SSM), `{name: DB_PASSWORD, value: …}`.
const NAME_FIELD = new RegExp(nameKey(1), 'g');
// The value field after a credential-named name field, within 200 characters.
const VALUE_AFTER = new RegExp(`^([^\\n{}<>]{0,200}?(?<![\\w-])${valueKey(2)})("[^"\\n]*"|'[^'\\n]*'|[^\\s,;}\\]>]+)`);
// The same over lines (YAML `- name: DB_PASSWORD` then `value: …`, pretty-printed JSON).
const NAME_LINE = new RegExp(`^[ \\t]*(?:-[ \\t]+)?${nameKey(1)}[ \\t]*,?[ \\t]*$`);
const VALUE_LINE = /^([ \t]*(?:-[ \t]+)?(["']?)(?:value|Value|VALUE|ParameterValue|OutputValue)\2[ \t]*[:=][ \t]*)("[^"\n]*"|'[^'\n]*'|[^\s#,](?:[^#\n]*[^\s#,])?)([ \t]*,?[ \t]*)$/;
// .netrc: `machine h login u password p` (one line), or `[login u] password p` on a line below
// `machine`/`login` (prose such as `your login and password below` has neither).
const NETRC = /^([ \t]*)((?:machine[ \t]+\S+|default)(?:[ \t]+(?:login|account|port)[ \t]+\S+)*[ \t]+password[ \t]+)(\S+)/;
const NETRC_PASSWORD = /^([ \t]*(?:login[ \t]+\S+[ \t]+)?password[ \t]+)(\S+)([ \t]*)$/;
const NETRC_ABOVE = /^[ \t]*(?:machine|login|default)\b/;

/**
 * Masks credential-named values in `text` by its shape (see the module docs). `lines`:
 * also whole `NAME=value` lines (not for command lines, where the rest of the line is the
 * command, not the value).
 */
export function maskAssignments(text: string, mask: (s: string) => string, lines = true): string {
  // Every rule is line-local and every credential name holds one of these words: only the
  // lines that hold one are matched (most lines of a log hold none). A name on its own line
  // (`- name: DB_PASSWORD`) also masks the value field of the few lines below it.
  return rewriteLines(text, KEYWORD, (line, end) => {
    let masked = maskLine(line, mask, lines);
    const start = end - line.length;
    const netrc = NETRC_PASSWORD.exec(masked);
    if (netrc && start > 0 && NETRC_ABOVE.test(text.slice(text.lastIndexOf('\n', start - 2) + 1, start - 1)) && !notASecret(netrc[2] as string)) {
      masked = `${netrc[1]}${mask(netrc[2] as string)}${netrc[3]}`;
    }
    const name = NAME_LINE.exec(line);
    const below = name && isCredentialName(name[3] as string) ? valueBelow(text, end, mask) : undefined;
    return below ? { text: masked + below.text, end: below.end } : masked;
  });
}

/** The value field within 4 lines after `from` (a line break), masked: the lines up to it and its end. */
function valueBelow(text: string, from: number, mask: (s: string) => string): { text: string; end: number } | undefined {
  let at = from;
  for (let n = 0; n < 4 && at < text.length; n++) {
    const nl = text.indexOf('\n', at + 1);
    const stop = nl < 0 ? text.length : nl;
    const line = text.slice(at + 1, stop);
    if (NAME_LINE.test(line)) return undefined;
    const v = VALUE_LINE.exec(line);
    if (v) {
      if (notASecret(v[3] as string)) return undefined;
      return { text: `${text.slice(from, at + 1)}${v[1]}${unquoted(v[3] as string, mask)}${v[4]}`, end: stop };
    }
    at = stop;
  }
  return undefined;
}

const KEYWORD = /pass|pwd|token|secret|key|cred|dsn|auth|identified|signature/gi;

function unquoted(v: string, m: (s: string) => string): string {
  const q = /^(["'])(.*)\1$/.exec(v);
  return q ? `${q[1]}${m(q[2] as string)}${q[1]}` : m(v);
}

/** A lower-case name is often code (`token=getToken()`, `key=args.key`, `self.secret=secret`). */
function code(name: string, v: string): boolean {
  return /[a-z]/.test(name) && (/[([]/.test(v) || /^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$/.test(v) || (/^\w+$/.test(v) && name.toLowerCase().endsWith(v.toLowerCase())));
}

/**
 * An unquoted value after ` = ` that is code rather than a setting: an identifier of letters
 * and underscores (`token = Error`, `self.password = password`, `tokenMap = token_map`), a
 * call, an index or a literal that goes on (`typing.Union[`). A configuration value of letters
 * only is missed (`password = dbpassword`): in source code the same shape is everywhere.
 */
function expression(v: string): boolean {
  return !/^["']/.test(v) && (/^(?:!+|~|-)?[A-Za-z_]+$/.test(v) || /^\$\{?[A-Za-z_]/.test(v) || /^-\d{1,7}$/.test(v) || /[([{\\]|,$/.test(v) || /^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$/.test(v));
}

/** Name and value fields on one line (see NAME_FIELD): the value after a credential name. */
function maskPairs(line: string, mask: (s: string) => string): string {
  let out = '';
  let copied = 0;
  for (const m of line.matchAll(NAME_FIELD)) {
    const from = m.index + m[0].length;
    if (m.index < copied || !isCredentialName(m[3] as string)) continue;
    const v = VALUE_AFTER.exec(line.slice(from, from + 400));
    if (!v || notASecret(v[3] as string)) continue;
    out += line.slice(copied, from) + (v[1] as string) + unquoted(v[3] as string, mask);
    copied = from + v[0].length;
  }
  return copied === 0 ? line : out + line.slice(copied);
}

/** Whether a value under a credential name is masked. */
function secretUnder(name: string, value: string): boolean {
  return isCredentialName(name) && !notASecret(value) && !code(name, value);
}

function maskLine(text: string, mask: (s: string) => string, lines: boolean): string {
  let out = text;
  if (out.includes('=')) {
    if (lines) {
      out = out.replace(LINE, (all, start: string, lead: string, name: string, value: string) =>
        secretUnder(name, value) ? `${start}${lead}${name}=${unquoted(value, mask)}` : all,
      );
    }
    out = out.replace(WORD, (all, lead: string, name: string, value: string) => (secretUnder(name, value) ? `${lead}${name}=${unquoted(value, mask)}` : all));
    out = out.replace(SPACED, (all, lead: string, env: string | undefined, name: string, sep: string, value: string) => {
      // `NAME=value` without blanks is LINE's and WORD's (`f(password=None)` is an argument).
      if (!env && !/[ \t]|:=/.test(sep)) return all;
      return secretUnder(name, value) && !expression(value) ? `${lead}${env ?? ''}${name}${sep}${unquoted(value, mask)}` : all;
    });
  }
  if (/value/i.test(out)) {
    out = maskPairs(out, mask);
  }
  const cols = (out.includes('\t') ? TABBED.exec(out) : null) ?? SET.exec(out);
  if (cols && secretUnder(cols[2] as string, cols[4] as string)) out = `${cols[1]}${cols[2]}${cols[3]}${unquoted(cols[4] as string, mask)}${cols[5]}`;
  if (out.includes('</')) {
    out = out.replace(XML, (all, name: string, open: string, value: string, close: string) => {
      const keyed = /[ \t](?:key|name)=["']([^"']+)["']/.exec(open)?.[1];
      return (isCredentialName(name.replace(/^.*:/, '')) || (keyed !== undefined && isCredentialName(keyed))) && !notASecret(value) ? `<${name}${open}${mask(value)}${close}` : all;
    });
  }
  const netrc = out.includes('password') ? NETRC.exec(out) : null;
  if (netrc && !notASecret(netrc[3] as string)) out = out.replace(NETRC, (_all, lead: string, head: string, value: string) => `${lead}${head}${mask(value)}`);
  if (!out.includes(':') && !out.includes('=>')) return maskPrinted(out, mask);
  out = out.replace(KEYED, (all, lead: string, name: string, sep: string, value: string) => (isCredentialName(name) && !notASecret(value) ? `${lead}${name}${sep}${unquoted(value, mask)}` : all));
  const label = LABEL.exec(out);
  if (label && !notASecret(label[2] as string) && !/^[a-z]+[.!]?$/.test(label[2] as string)) out = `${label[1]}${mask(label[2] as string)}${label[3]}`;
  out = out.replace(QUOTED, (all, q: string, name: string, sep: string, vq: string | undefined, value: string | undefined, bare: string | undefined) => {
    if (vq !== undefined) return isCredentialName(name) && !notASecret(value ?? '') ? `${q}${name}${q}${sep}${vq}${mask(value ?? '')}${vq}` : all;
    return bare !== undefined && secretUnder(name, bare) && !expression(bare) ? `${q}${name}${q}${sep}${mask(bare)}` : all;
  });
  out = out.replace(YAML, (all, lead: string, name: string, sep: string, value: string, trail: string) =>
    secretUnder(name, value) ? `${lead}${name}${sep}${unquoted(value, mask)}${trail}` : all,
  );
  return maskPrinted(out, mask);
}
