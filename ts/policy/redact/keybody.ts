/**
 * Private-key material without BEGIN/END lines, where it can be told from other base64
 * without false positives:
 *
 * - A base64 run whose first bytes are a DER private key: a SEQUENCE whose first element is
 *   the INTEGER version 0, 1 or 2 (PKCS#1 RSA `MIIEow…`, PKCS#8 `MIIEvQ…`, SEC 1 EC `MHcC…`,
 *   Ed25519 PKCS#8 `MC4C…`). Certificates, public keys, CSRs and encrypted PKCS#8 start with
 *   a SEQUENCE inside the SEQUENCE and are left alone; PKCS#12 has version 3. Also OpenSSH's
 *   `openssh-key-v1` magic (`b3BlbnNzaC1rZXktdjE…`), the SSH2 (RFC 4716) private-key magic
 *   `0x3f6ff9eb` (`P2/56w…`) and an OpenPGP secret-key packet
 *   (`lQ…`, version 4 or 5). This is a body printed by `sed -n 2,20p`, re-wrapped by
 *   `fold -w 76` or `openssl base64`, or unwrapped on one line: the run is masked, and so are
 *   the base64 lines that follow it (the rest of a wrapped body).
 * - PuTTY's `Private-Lines: N`: the N lines after it.
 * - base64 of a whole PEM private key (`LS0tLS1CRUdJTi…`, a Kubernetes secret's `tls.key`).
 *
 * Not covered (indistinguishable from other base64): body lines that start after the first
 * one (`sed -n 5,20p`), and keys in other encodings (hex, compressed).
 */
import { INVISIBLE, KEY_MASK } from './keyblock.js';

// A run that may start a key: not inside a longer base64 word.
const START = /(?<![A-Za-z0-9+/])(?:M[A-Za-z0-9+/]{11}|b3BlbnNzaC1rZXktdjE|P2\/56w|lQ[A-Za-z0-9+/]{6}|LS0tLS1CRUdJTi)[A-Za-z0-9+/]*={0,2}/g;
// A following line of a wrapped body: indentation or a line number (`nl`, `grep -n`), base64,
// and the line ends `cat -A` prints; invisible characters (NUL, zero-width) around them.
const LEAD = `([ \\t${INVISIBLE}]*(?:\\d+[\\t:][ \\t]*)?)`;
const BODY_LINE = new RegExp(`^${LEAD}([A-Za-z0-9+/]+={0,2})([${INVISIBLE}]*(?:\\r|\\^M)?\\$?[${INVISIBLE}]*\\r?)$`);
const PADDED_END = new RegExp(`^${LEAD}([A-Za-z0-9+/]+={1,2})()`);

function bytes(b64: string, n: number): Uint8Array {
  return Buffer.from(b64.slice(0, Math.ceil((n * 4) / 3 / 4) * 4), 'base64');
}

/** Whether a base64 run starts private-key material (see the module docs). */
export function startsPrivateKey(run: string): boolean {
  if (run.startsWith('b3BlbnNzaC1rZXktdjE') || run.startsWith('P2/56w')) return run.length >= 40;
  if (run.startsWith('LS0tLS1CRUdJTi')) return /PRIVATE KEY/.test(Buffer.from(run.slice(0, 80), 'base64').toString('latin1'));
  if (run.length < 40) return false;
  const b = bytes(run, 9);
  if (run.startsWith('lQ')) return b[0] === 0x95 && (b[3] === 4 || b[3] === 5);
  if (b[0] !== 0x30) return false;
  const len = b[1] as number;
  const h = len < 0x80 ? 2 : len >= 0x81 && len <= 0x83 ? len - 0x7f + 1 : 0;
  return h > 0 && b[h] === 0x02 && b[h + 1] === 0x01 && (b[h + 2] as number) <= 2;
}

/** Masks key material without markers (see the module docs), keeping the line breaks. */
export function maskKeyBodies(text: string): string {
  let out = maskPuttyKeys(text);
  if (!/M[A-Za-z0-9+/]|b3BlbnNz|P2\/56w|lQ|LS0tLS1C/.test(out)) return out;
  START.lastIndex = 0;
  let result = '';
  let copied = 0;
  for (let m = START.exec(out); m; m = START.exec(out)) {
    if (m.index < copied || !startsPrivateKey(m[0])) continue;
    const end = m.index + m[0].length;
    result += out.slice(copied, m.index) + KEY_MASK;
    copied = end;
    // A run that ends its line (after `cat -A`'s marks) continues on the base64 lines below.
    const lineEnd = out.indexOf('\n', end);
    if (lineEnd < 0 || !BODY_LINE.test(`${m[0]}${out.slice(end, lineEnd)}`)) continue;
    const width = m[0].length;
    let at = lineEnd;
    while (at < out.length) {
      const next = out.indexOf('\n', at + 1);
      const stop = next < 0 ? out.length : next;
      // The last line of a body may run into what follows it (`fold` ends without a line
      // break): its padded base64 is still the key's.
      const line = BODY_LINE.exec(out.slice(at + 1, stop)) ?? PADDED_END.exec(out.slice(at + 1, stop));
      const b64 = line?.[2] ?? '';
      if (!line || b64.length > width) break;
      result += out.slice(copied, at + 1) + (line[1] as string) + KEY_MASK + (line[3] as string);
      copied = at + 1 + line[0].length;
      at = stop;
      if (b64.length < width || b64.endsWith('=')) break;
    }
    START.lastIndex = copied;
  }
  out = result + out.slice(copied);
  return out;
}

/** PuTTY key files: the `Private-Lines: N` lines after the header. */
function maskPuttyKeys(text: string): string {
  let at = text.indexOf('Private-Lines:');
  if (at < 0) return text;
  let out = '';
  let copied = 0;
  while (at >= 0) {
    const m = /^Private-Lines:[ \t]*(\d{1,4})[ \t]*\r?\n/.exec(text.slice(at, at + 40));
    if (m && at >= copied) {
      let end = at + m[0].length;
      for (let n = Math.min(Number(m[1]), 1000); n > 0 && end < text.length; n--) {
        const nl = text.indexOf('\n', end);
        end = nl < 0 ? text.length : nl + 1;
      }
      const body = text.slice(at + m[0].length, end);
      out += text.slice(copied, at + m[0].length) + body.replace(/[^\r\n]+/g, KEY_MASK);
      copied = end;
    }
    at = text.indexOf('Private-Lines:', at + 1);
  }
  return out + text.slice(copied);
}
