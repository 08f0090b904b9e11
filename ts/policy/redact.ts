/**
 * Redaction: the one function every command written to disk and every output or
 * notification leaving through a surface (tool, CLI, MCP) passes through.
 *
 * Masked in output, each kind in a module of its own:
 * - private-key blocks whole, whatever their size and wherever the text starts, in PEM,
 *   OpenPGP and SSH2 armour, also as `cat -A` prints them (`redact/keyblock.ts`); key
 *   material without markers where its first bytes tell it (a DER private key, OpenSSH,
 *   SSH2 or OpenPGP secret-key magic, base64 of a PEM key, PuTTY's private lines:
 *   `redact/keybody.ts`);
 * - credential-named values by the shape of the text, whatever command printed them
 *   (`NAME=value` lines, `env -0`, JSON, YAML, `NAME = value` in TOML/INI/HCL/PowerShell,
 *   `NAME<TAB>value`, fish and csh `set`, XML elements, name/value pairs of Kubernetes, ECS,
 *   SSM and .NET, `.netrc`: `redact/assignments.ts`);
 * - `user:password@host` without a scheme and `.pgpass` lines (`redact/hostcreds.ts`);
 * - password flags of client command lines shown in output (`ps`, `set -x` traces), and in
 *   commands: password flags, credential prefixes, secrets given on stdin, tokens after a
 *   login verb, `user:password` pairs (`redact/command.ts`);
 * - vendor and cloud tokens, by the core's token engine (`procward_core::redact`: gitleaks'
 *   rule set and procward's own rules, on bytes behind an Aho–Corasick keyword prefilter,
 *   through `native.tokenSpans`); `Authorization` with any scheme and credential-named
 *   headers (the scheme is kept), passwords and tokens in URLs (any characters, with or
 *   without a scheme), cookie values (`redact/tokens.ts`, `redact/printers.ts`).
 *
 * Every rule also reads lines as a person sees them: escape sequences, backspaces,
 * zero-width and fullwidth characters cannot split a name or a token (`redact/readable.ts`).
 * Long tokens keep a short prefix and suffix so they stay recognisable.
 *
 * URL credentials: `scheme://user:password@host` masks everything between the first `:`
 * after the user and the last `@` before the host, so a password may hold `/`, `:` or `@`
 * and the user may hold `@` (`smtp://me@example.com:pw@mail`); `host:8080/path@v1` (a port
 * then a path) is not a password. Without a scheme, `user:password@host.domain` (or
 * `@localhost`, or an IP) is taken for credentials; `git@github.com:org/repo` has no
 * password and stays, as does `image:tag@sha256:…` (the host has no dot).
 *
 * gitleaks' generic API-key rule is not used: it wants high entropy (a password like
 * `hunter2` passes) and knows no command-line flags; the shape rules above (only lines
 * holding a credential word are matched, as its keyword prefilter does) take its place.
 */

import { maskAssignments } from './redact/assignments.js';
import { maskCommandFlags, maskCommandsInOutput } from './redact/command.js';
import { maskKeyBlocks } from './redact/keyblock.js';
import { maskBareCredentials, maskPgpass } from './redact/hostcreds.js';
import { maskKeyBodies } from './redact/keybody.js';
import { native } from '../native.js';
import { redactReadable } from './redact/readable.js';
import { type Rule, RULES } from './redact/tokens.js';

export { CREDENTIAL_NAME, isCredentialName } from './redact/assignments.js';
export { insideKeyBlockAt, isKeyMaterialLine, KeyBlockTracker, KEY_MASK, leadsWithKeyMaterial } from './redact/keyblock.js';

/** Options of {@link redact}. */
export interface RedactOptions {
  /**
   * Kept for compatibility and ignored: credential-named `NAME=value` lines are masked in
   * every text now, whatever command printed them.
   */
  envDump?: boolean;
  /**
   * The text starts inside a private-key block whose BEGIN line came before it (a tail whose
   * front was dropped, a page of a log, a preview window): everything up to the block's END
   * is masked. Default false.
   */
  startsInKeyBlock?: boolean;
}

/** Masks a secret, keeping a short prefix and suffix of long tokens. */
export function mask(secret: string): string {
  if (secret.length >= 24) return `${secret.slice(0, 6)}…${secret.slice(-4)}`;
  if (secret.length >= 12) return `${secret.slice(0, 3)}…`;
  return '***';
}

/**
 * Returns `text` with every secret the rules recognise masked (see the module docs). The
 * rules read the text as written and, for lines with escape sequences, backspaces or
 * invisible characters, as a reader sees it (`redact/readable.ts`).
 *
 * Synchronous: it blocks the event loop for the length of `text` (about 5 ms per 64 KiB of
 * log text on one core here). For more than a page use `redactAsync`, which slices.
 */
export function redact(text: string, opts: RedactOptions = {}): string {
  const startsInKeyBlock = opts.startsInKeyBlock === true;
  return redactReadable(text, (t) => maskAssignments(maskCommandsInOutput(maskTokens(t, startsInKeyBlock), mask), mask));
}

/**
 * The secrets the core's token engine finds (gitleaks' rule set behind an Aho–Corasick
 * keyword prefilter: `procward_core::redact`), after the hand-kept rules: each range runs on
 * to the end of its run of token characters (a rule that knows a token's head only must not
 * leave its tail), and one that starts inside a range masked already, or holds a mask, is left.
 */
function maskCoreTokens(text: string): string {
  const spans = native.tokenSpans(text);
  if (spans.length === 0) return text;
  let out = '';
  let at = 0;
  for (let i = 0; i + 1 < spans.length; i += 2) {
    const start = spans[i] as number;
    // Inside a range masked already (a run of token characters is extended once, so text of
    // many matches in one run costs one pass, not one per match).
    if (start < at) continue;
    let end = spans[i + 1] as number;
    while (end < text.length && TOKEN_CHAR.test(text[end] as string)) end++;
    const secret = text.slice(start, end);
    if (secret.includes('…')) continue;
    out += text.slice(at, start) + mask(secret);
    at = end;
  }
  return out + text.slice(at);
}

const TOKEN_CHAR = /[A-Za-z0-9_+/=.~-]/;

// Cookie values of 16 or more characters (session identifiers); `theme=dark` stays.
const COOKIE_HEADER = /\b((?:Set-)?Cookie[ \t]*:[ \t]*)([^\r\n]+)/gi;
const COOKIE_VALUE = /(^|;[ \t]*)([^=;\s]+=)("?)([^;\s",\\]{16,})/g;

/** Key blocks, key bodies and the token rules (the context ones here, then the core's). */
function maskTokens(text: string, startsInKeyBlock: boolean): string {
  let out = maskPgpass(maskBareCredentials(maskKeyBodies(maskKeyBlocks(text, startsInKeyBlock)), mask), mask);
  if (/cookie/i.test(out)) {
    out = out.replace(COOKIE_HEADER, (_all, head: string, value: string) => {
      const set = /^set-/i.test(head);
      // Set-Cookie: only the cookie itself; the attributes after it (Expires, Domain) stay.
      return head + value.replace(COOKIE_VALUE, (pair, sep: string, name: string, q: string, v: string) => (set && sep !== '' ? pair : `${sep}${name}${q}${mask(v)}`));
    });
  }
  for (const rule of RULES) {
    if (rule.needle !== undefined && !(typeof rule.needle === 'string' ? out.includes(rule.needle) : rule.needle.test(out))) continue;
    const masked = (match: string, ...groups: unknown[]) => {
      if (rule.group === 0) return mask(match);
      const secret = groups[rule.group - 1];
      if (typeof secret !== 'string' || secret === '' || secret.includes('…') || rule.skip?.(secret)) return match;
      // Every group rule's secret sits at the end of its match (before a closing `@` for URLs).
      const at = match.lastIndexOf(secret);
      return match.slice(0, at) + mask(secret) + match.slice(at + secret.length);
    };
    out = rule.atSchemes ? replaceAtSchemes(out, rule, masked) : out.replace(rule.pattern, masked);
  }
  return maskCoreTokens(out);
}

const sticky = new WeakMap<RegExp, RegExp>();
const SCHEME_CHAR = /[a-z0-9+.-]/i;
const WORD_CHAR = /\w/;

/**
 * `text.replace(rule.pattern, masked)` for a rule whose matches start with a URL scheme
 * (`\b[a-z][a-z0-9+.-]{0,30}://`), tried only at each `://`: from the leftmost place the
 * scheme may start (a letter at a word boundary, at most 31 characters back), since what
 * follows `://` does not depend on where the scheme starts. Tried at every word of a log,
 * the URL rule cost 15% of redaction.
 */
function replaceAtSchemes(text: string, rule: Rule, masked: (match: string, ...groups: unknown[]) => string): string {
  let re = sticky.get(rule.pattern);
  if (!re) {
    re = new RegExp(rule.pattern.source, `${rule.pattern.flags.replace('g', '')}y`);
    sticky.set(rule.pattern, re);
  }
  let out = '';
  let copied = 0;
  for (let at = text.indexOf('://'); at >= 0; at = text.indexOf('://', at + 3)) {
    let p = at;
    while (p > copied && p > at - 31 && SCHEME_CHAR.test(text[p - 1] as string)) p--;
    while (p < at && !(/[a-z]/i.test(text[p] as string) && (p === 0 || !WORD_CHAR.test(text[p - 1] as string)))) p++;
    if (p === at) continue;
    re.lastIndex = p;
    const m = re.exec(text);
    if (!m) continue;
    out += text.slice(copied, m.index) + masked(m[0], ...m.slice(1));
    copied = m.index + m[0].length;
    at = Math.max(at, copied - 3);
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Redacts a command line: everything {@link redact} masks, plus password flags of common
 * clients and the values of credential-named prefixes (`PGPASSWORD=123 psql`, `export
 * API_TOKEN=…`), where any literal value is the secret (see `redact/command.ts`).
 */
export function redactCommand(command: string): string {
  // Flags first: the shape rules would take `PGPASSWORD=123 psql` for a line whose value is `123 psql`.
  return redactReadable(command, (c) => maskAssignments(maskTokens(maskCommandFlags(c, mask), false), mask, false));
}

const ENV_DUMP_COMMAND = /(?:^|[;&|(]\s*|\bsudo\s+)(?:env|printenv|export|set|declare(?:\s+-[a-zA-Z]+)?)\s*(?:$|[|;&>)])|\b(?:cat|less|more|head|tail|bat|grep)\b[^|;&]*\.env\b/m;

/**
 * Whether the output of `command` is an environment dump or a `.env` file. Redaction no longer
 * depends on it (credential-named values are masked by shape); kept for callers of the API.
 */
export function isEnvDumpCommand(command: string): boolean {
  return ENV_DUMP_COMMAND.test(command);
}
