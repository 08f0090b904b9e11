/**
 * Credential-named values in the syntaxes that debug dumps and language printers use, beside
 * the configuration syntaxes of `assignments.ts`: Go's `%+v` (`{User:admin Password:…}`) and
 * `map[password:…]`, SQL (`IDENTIFIED BY '…'`, `PASSWORD '…'`), setter calls
 * (`config.password("…")`, `setApiKey('…')`), Lisp and plist pairs (`(password . "…")`,
 * `:password "…"`), two-column lines (`password …` as in redis.conf or a form dump), and
 * header lines named for a credential.
 * Each is line-local: `maskAssignments` passes only lines holding a credential word.
 */
import { isCredentialName, notASecret } from './names.js';

type Mask = (s: string) => string;

// Go `%+v` structs and maps: `Name:value` after `{`, `[` or a blank, up to a blank or a close.
const GO_FIELD = /(^|(?<!\$)[{[]|[\s,])([A-Za-z_]\w*):(?!\/\/)([^\s{}[\]:,"'()]+)(?=[\s}\])]|$)/g;
// SQL: the literal after IDENTIFIED BY (MySQL, Oracle) or PASSWORD (PostgreSQL, MySQL).
const SQL = /\b(IDENTIFIED[ \t]+BY[ \t]+(?:PASSWORD[ \t]+)?|PASSWORD[ \t]+)(['"])([^'"\n]+)\2/gi;
// A call with one string literal: `config.password("…")`, `setApiKey('…')`, `.token("…")`.
const CALL = /(?<![\w$])([A-Za-z_]\w*)\([ \t]*(["'])([^"'\n]{1,256})\2[ \t]*\)/g;
/** Calls that look a credential up by name rather than set it. */
const LOOKUP = /^(?:get|read|load|fetch|find|lookup|has|is|remove|delete|del|unset|clear|check)/i;
// `(password . "…")` (an alist), `:password "…"` (a plist, Clojure, Ruby symbols).
const LISP = /(\(|(?<![\w:]):)([A-Za-z_][\w-]*)([ \t]+(?:\.[ \t]+)?)("[^"\n]*")/g;
// Two columns: a credential word as the name, blanks, one value (`password s3cr3t`,
// `requirepass …`); not `PASS tests/a.test.ts` (a test runner's status).
const TWO_COLUMNS = /^([ \t]*)((?:[\w.-]*[._-])?(?:password|passwd|passphrase|secret|token|requirepass|masterauth|api[_-]?key|auth[_-]?token|access[_-]?key|secret[_-]?key))([ \t]+)(\S+)([ \t;]*)$/i;

// A header line whose name says it holds a credential: `> X-Vault-Token: …` as `curl -v`
// prints it, `X-Hub-Signature-256: sha256=…`, `Ocp-Apim-Subscription-Key: …`. The name's
// last part says key, token, secret, signature, auth, password or credentials; not the
// challenge headers (`WWW-Authenticate`) nor ones about a credential (`-Type`, `-Id`).
const HEADER = /^([ \t]*(?:[<>*][ \t]+)?)(?!(?:WWW|Proxy)-Authenticate\b|Sec-WebSocket-|Key[ \t]*:|Cache-Key|Idempotency-Key|X-RateLimit-|Accept-Signature|Signature-Input)((?:[A-Za-z][A-Za-z0-9]*-)*[A-Za-z0-9]*(?:Key|KEY|key|Token|TOKEN|token|Secret|SECRET|secret|Signature|SIGNATURE|signature|Auth|AUTH|auth|Authorization|Password|PASSWORD|password|Credentials?|credentials?)s?(?:-\d+)?)([ \t]*:[ \t]*)([^\s:]\S{7,})([ \t]*\r?)$/;

// A quoted name and a quoted value side by side: `("X-Api-Key", "…")` (a setter or a tuple),
// `['DB_PASSWORD'] = '…'` (an environment map), `"X-Api-Key":[]string{"…"}` (Go's http.Header).
const PAIR = /(["'])([A-Za-z_][\w.-]{0,127})\1([ \t]*(?:,|\][ \t]*=|:[ \t]*(?:\[\]string\{|\[))[ \t]*)(["'])([^"'\n]{1,512})\4/g;
// YAML flow mappings and Elixir keyword lists with a bare value: `{user: bob, password: …}`.
const FLOW = /([{[,][ \t]*)([A-Za-z_][\w.-]*)(:[ \t]+)([^\s,{}[\]"']+)(?=[ \t]*[,}\]])/g;

/** Whether a value printed under a credential name is one (not a status word, a service port, a placeholder). */
function secretValue(v: string): boolean {
  return !notASecret(v) && !/^[A-Za-z][a-z]*[.!]?$/.test(v) && !/^\d+\/(?:tcp|udp)$/.test(v);
}

/** Masks credential-named values of `line` written in the syntaxes above. */
export function maskPrinted(line: string, mask: Mask): string {
  let out = line;
  // Not in JSON (`"name":`), whose quoted names the JSON rules read.
  if (out.includes(':') && /[{[]/.test(out) && !out.includes('":')) out = out.replace(GO_FIELD, (all, lead: string, name: string, v: string) => (isCredentialName(name) && secretValue(v) ? `${lead}${name}:${mask(v)}` : all));
  if (out.includes('"') && /[:(][A-Za-z_]/.test(out)) {
    out = out.replace(LISP, (all, lead: string, name: string, sep: string, v: string) => (isCredentialName(name) && secretValue(v.slice(1, -1)) ? `${lead}${name}${sep}"${mask(v.slice(1, -1))}"` : all));
  }
  if (out.includes('(')) {
    out = out.replace(CALL, (all, name: string, q: string, v: string) => {
      const setter = name.replace(/^(?:set|with)(?=[A-Z_])/, '');
      return isCredentialName(setter) && !LOOKUP.test(name) && secretValue(v) ? all.replace(`${q}${v}${q}`, `${q}${mask(v)}${q}`) : all;
    });
  }
  if (/["']/.test(out)) out = out.replace(PAIR, (all, q: string, name: string, sep: string, vq: string, v: string) => (isCredentialName(name) && secretValue(v) ? `${q}${name}${q}${sep}${vq}${mask(v)}${vq}` : all));
  if (/[{[]/.test(out) && out.includes(': ')) out = out.replace(FLOW, (all, lead: string, name: string, sep: string, v: string) => (isCredentialName(name) && secretValue(v) && /\d/.test(v) ? `${lead}${name}${sep}${mask(v)}` : all));
  if (/identified|password/i.test(out)) out = out.replace(SQL, (all, head: string, q: string, v: string) => (notASecret(v) ? all : `${head}${q}${mask(v)}${q}`));
  const header = out.includes(':') ? HEADER.exec(out) : null;
  if (header && secretValue(header[4] as string) && !/\.{3}$/.test(header[4] as string)) out = `${header[1]}${header[2]}${header[3]}${mask(header[4] as string)}${header[5]}`;
  const cols = TWO_COLUMNS.exec(out);
  if (cols && isCredentialName(cols[2] as string) && secretValue(cols[4] as string)) out = `${cols[1]}${cols[2]}${cols[3]}${mask(cols[4] as string)}${cols[5]}`;
  return out;
}
