/**
 * Passwords beside a host without a URL scheme: `user:password@host` and `~/.pgpass` lines
 * (`host:port:database:user:password`). Both are found from a rare anchor (an `@`, a
 * `:port:` field) and checked on the text around it, so a page costs one fast scan.
 */
import { rewriteLines } from './lines.js';

const USER = /[A-Za-z0-9._%+-]/;
const PASSWORD = /[^\s:@/'"]/;
// Before the user: not `/`, `:` or `@` (part of a URL or a path), nor a word character.
const BEFORE_USER = /[\w/:@.%+-]/;
const URI_SCHEME = /^(?:mailto|sips?|tel|xmpp|im|pres|news|urn|acct)$/i;

/**
 * The password of `user:password` ending at `at` (an `@`), read backwards so each `@` costs
 * at most 300 characters whatever surrounds it.
 */
function passwordBefore(text: string, at: number, floor: number): string | undefined {
  const lo = Math.max(floor, at - 300);
  let i = at;
  while (i > lo && PASSWORD.test(text[i - 1] as string)) i--;
  if (i === at || text[i - 1] !== ':') return undefined;
  const colon = i - 1;
  let u = colon;
  while (u > lo && USER.test(text[u - 1] as string)) u--;
  if (u === colon || (u > 0 && BEFORE_USER.test(text[u - 1] as string))) return undefined;
  // `mailto:a.b@host`, `sip:alice@host`: a URI scheme without `//`, then an address.
  if (URI_SCHEME.test(text.slice(u, colon))) return undefined;
  return text.slice(colon + 1, at);
}
// A host with a dot, localhost or an IP address.
const HOST = /^(?:(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b|localhost\b|\d{1,3}(?:\.\d{1,3}){3}\b)/;
// A one-label host (`me:pw@db`, a compose service), with an optional port: not an image
// digest (`node:20@sha256:…`).
const LABEL_HOST = /^(?!sha\d)[A-Za-z][A-Za-z0-9-]{0,62}(?::\d{1,5})?(?:[/\s'",;)]|$)/;

/**
 * Masks `user:password@host` without a scheme. With a one-label host the password must have
 * 6 or more characters and not only digits (`10:30@home` is a time).
 */
export function maskBareCredentials(text: string, mask: (s: string) => string): string {
  let at = text.indexOf('@');
  if (at < 0) return text;
  let out = '';
  let copied = 0;
  while (at >= 0) {
    const pw = passwordBefore(text, at, copied);
    const after = text.slice(at + 1, at + 260);
    if (pw !== undefined) {
      if (HOST.test(after) || (LABEL_HOST.test(after) && pw.length >= 6 && /\D/.test(pw))) {
        const start = at - pw.length;
        out += text.slice(copied, start) + mask(pw);
        copied = at;
      }
    }
    at = text.indexOf('@', at + 1);
  }
  return out + text.slice(copied);
}

// ~/.pgpass: host (with a letter or a dot, or `*`), port (or `*`), database, user, password.
const PGPASS = /^((?:[\w.-]{1,253}|\*):(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:)((?:\\:|[^\s:])+)(\r?)$/;
const PORT_FIELD = /:(?:\d{1,5}|\*):/g;

/** Masks the password of `~/.pgpass` lines. */
export function maskPgpass(text: string, mask: (s: string) => string): string {
  return rewriteLines(text, PORT_FIELD, (l) => {
    const line = PGPASS.exec(l);
    // The host holds a letter or a dot (`12:00:01:…` is a time), or is `*`.
    return line && /^(?:[^:]*[A-Za-z.]|\*)/.test(line[1] as string) ? `${line[1]}${mask(line[2] as string)}${line[3]}` : undefined;
  });
}
