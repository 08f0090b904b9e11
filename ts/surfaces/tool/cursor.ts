/**
 * Output cursors of the LLM tool: an opaque string that says where a reader stopped in a
 * session's output, handed back with every `poll`, `log` and `wait` result and passed back
 * for "the output since then". It is stateless (the position is in the string, nothing is
 * kept per reader), so two readers never take each other's output, and a host restart does
 * not lose it.
 *
 * A cursor is base64url of `1:<12 hex of the session id>:<mode>:<line>:<dropped>:<hash>`
 * and a check value of all that. `mode` is `f` for output whose line numbers never shift
 * (a durable job's log: `line` counts from the job's first line, lines the log cap dropped
 * included) and `t` for the in-memory tail (`line` counts from the tail's first whole line,
 * which moves when the tail's front is dropped: `dropped`, the bytes dropped before it when
 * the cursor was made, tells that it moved). `line` is the number of lines read; `hash` is
 * a 32-bit FNV-1a of the last line read, which tells a line that grew since (a prompt
 * without its line break yet: it is returned again) and finds the place again after the
 * tail's front moved. The check value catches a cut or mistyped cursor; it is no secret
 * (a cursor grants nothing: its holder may read the whole output anyway).
 *
 * A reader inside a line longer than a result holds gets version 2,
 * `2:<id>:<mode>:<line>:<dropped>:<hash>:<col>` and its check value: `line` is that line's
 * number plus one, `col` how many of its characters (as the plain view shows it, redacted)
 * were returned, and `hash` the FNV-1a of those characters.
 */
import { ProcwardError } from '../../errors.js';

/** Where a reader stopped. */
export interface CursorPosition {
  /** The session the cursor belongs to (its full id). */
  sessionId: string;
  /** `f`: absolute line numbers (durable logs); `t`: numbers in the in-memory tail. */
  mode: 'f' | 't';
  /** Lines read: the index of the next line. */
  line: number;
  /** `t` mode: bytes dropped before the tail's first line when the cursor was made (`f`: 0). */
  dropped: number;
  /** FNV-1a (32 bits) of the last line read; 0 when none was read. With `col`: of the part of it read. */
  hash: number;
  /** Characters of line `line - 1` returned so far when it was read in part; 0 once read whole. */
  col: number;
}

/** 32-bit FNV-1a of a string's UTF-16 code units. */
export function lineHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The opaque string for a position. */
export function encodeCursor(p: CursorPosition): string {
  const head = `${p.sessionId.slice(5)}:${p.mode}:${p.line}:${p.dropped}:${p.hash}`;
  const payload = p.col > 0 ? `2:${head}:${p.col}` : `1:${head}`;
  return Buffer.from(`${payload}:${lineHash(payload).toString(36)}`).toString('base64url');
}

function invalid(why: string): ProcwardError {
  return new ProcwardError('INVALID_ARGUMENT', `cursor is not valid: ${why}; pass the cursor of an earlier result of this session unchanged, or leave it out`);
}

const COUNT = /^(0|[1-9][0-9]{0,15})$/;

/**
 * The position a cursor holds (check its session with {@link checkSession}). Errors:
 * `INVALID_ARGUMENT` for a string that is no cursor (cut, edited, made up).
 */
export function decodeCursor(cursor: unknown): CursorPosition {
  if (typeof cursor !== 'string') throw invalid('not a cursor string');
  if (cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid('not a cursor string');
  const bytes = Buffer.from(cursor, 'base64url');
  // Decoding ignores stray trailing characters: only the exact encoding is a cursor.
  if (bytes.toString('base64url') !== cursor) throw invalid('not a cursor string');
  const parts = bytes.toString('latin1').split(':');
  const v2 = parts[0] === '2';
  if (parts.length !== (v2 ? 8 : 7) || (parts[0] !== '1' && !v2)) throw invalid('not a cursor string');
  const [, hex, mode, line, dropped, hash] = parts as [string, string, string, string, string, string];
  const col = v2 ? (parts[6] as string) : '0';
  const check = parts[parts.length - 1] as string;
  if (lineHash(parts.slice(0, -1).join(':')).toString(36) !== check) throw invalid('its check value does not match (cut or edited)');
  if (!/^[0-9a-f]{12}$/.test(hex) || (mode !== 'f' && mode !== 't') || !COUNT.test(line) || !COUNT.test(dropped) || !COUNT.test(hash) || !COUNT.test(col)) throw invalid('malformed');
  const n = (s: string) => Number(s);
  if (!Number.isSafeInteger(n(line)) || !Number.isSafeInteger(n(dropped)) || n(hash) > 0xffffffff || !Number.isSafeInteger(n(col))) throw invalid('malformed');
  if (v2 && (n(col) === 0 || n(line) === 0)) throw invalid('malformed');
  return { sessionId: `proc_${hex}`, mode, line: n(line), dropped: n(dropped), hash: n(hash), col: n(col) };
}

/** `INVALID_ARGUMENT` when the cursor was made for another session than `sessionId`. */
export function checkSession(pos: CursorPosition, sessionId: string): void {
  if (pos.sessionId !== sessionId) throw invalid(`it belongs to another session, not ${sessionId}`);
}
