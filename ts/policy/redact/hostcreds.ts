/**
 * Passwords beside a host without a URL scheme: `user:password@host` and `~/.pgpass` lines
 * (`host:port:database:user:password`). Both are found from a rare anchor (an `@`, a
 * `:port:` field) and checked on the text around it, so a page costs one fast scan.
 */
import { rewriteLines } from './lines.js';

// user:password just before an `@`; not after `/`, `:` or `@` (part of a URL or a path).
const USERINFO = /(?<![\w/:@.%+-])[A-Za-z0-9._%+-]+:([^\s:@/'"]+)$/;
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
    const from = Math.max(copied, at - 300);
    const m = USERINFO.exec(text.slice(from, at));
    const after = text.slice(at + 1, at + 260);
    if (m) {
      const pw = m[1] as string;
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
const PGPASS = /^((?:[\w.-]*[A-Za-z.][\w.-]*|\*):(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:)((?:\\:|[^\s:])+)(\r?)$/;
const PORT_FIELD = /:(?:\d{1,5}|\*):/g;

/** Masks the password of `~/.pgpass` lines. */
export function maskPgpass(text: string, mask: (s: string) => string): string {
  return rewriteLines(text, PORT_FIELD, (l) => {
    const line = PGPASS.exec(l);
    return line ? `${line[1]}${mask(line[2] as string)}${line[3]}` : undefined;
  });
}
