/**
 * The background rewrite: `A && B &` becomes `A && { B & }`, decided on a real parse of the
 * command and applied only at the parser's offsets, so every other byte stays as given.
 *
 * Why: bash runs a backgrounded and-or list in a background subshell, so `cd /missing &&
 * sleep 1 &` "exits" 0 at once, the failed `cd` goes unnoticed and the subshell holds the
 * output pipe. After the rewrite `A` runs in the foreground (the job's exit status is its
 * failure, its output is captured before the end) and only the last pipeline `B` runs in the
 * background, as the author meant.
 *
 * What is rewritten: the command's last top-level statement, when it is backgrounded (`&`)
 * and is an and-or list whose operators are all `&&` or all `||`; its last pipeline (with
 * every redirection it has: `&>`, `>&`, `2>&1`, `>|`, `&>>`, here-documents, and any pipes,
 * subshells or groups) goes inside `{ ... & }`. Left as given: earlier statements (running
 * `A` in the foreground there would delay, or with `cd` change, what follows), mixed lists
 * (`A && B || C &`: which part is the background job is a guess), single pipelines (`A | B &`
 * already backgrounds the pipeline itself), and anything the parser refuses. The result is
 * parsed again and dropped unless it has the intended shape.
 *
 * The parser is `mvdan-sh`, the JavaScript build (GopherJS) of mvdan/sh, the parser behind
 * shfmt: an exact POSIX/bash/mksh grammar with here-documents, synchronous, one 1.5 MB file
 * with no dependencies and no install script, loaded on the first command that could need it
 * (about 0.1 s), then about 0.2 ms for a one-line command (see {@link MAX_PARSED_CHARS} for
 * big ones). Its author froze that build in 2025 (mvdan/sh#1145) in favour of `sh-syntax`,
 * the maintained WebAssembly build, which we weighed and could not use: it returns statements only as ranges (no operators or
 * operands, so the split point is unknowable), is asynchronous with a fresh Go runtime per
 * call (about 15 ms), and crashed with "memory access out of bounds" on a 90 KB script here.
 * `tree-sitter-bash` through `web-tree-sitter` (maintained, 25 MB with native prebuilds and an
 * install script) is error-tolerant by design and misparses here-documents followed by more
 * words on their line (`cat <<EOF &`, its issue #346); `bash-parser` is unmaintained since
 * 2017. The grammar is frozen at bash 5.1: newer syntax does not parse and is left as given.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';

/** Which grammar a shell reads: bash's, or POSIX sh's (dash, ash). */
export type ShellLanguage = 'bash' | 'posix';

/** The slice of mvdan-sh's syntax tree the rewrite reads. Offsets are in UTF-8 bytes. */
interface Pos {
  Offset(): number;
}
interface Node {
  Pos(): Pos;
  End(): Pos;
}
interface Stmt extends Node {
  Cmd: Node | null;
  Background: boolean;
  Coprocess: boolean;
  Negated: boolean;
  /** The position of the `&` (or `;`) that ends the statement. */
  Semicolon: Pos;
  Redirs: unknown[];
}
interface BinaryCmd extends Node {
  Op: number;
  X: Stmt;
  Y: Stmt;
}
interface Block extends Node {
  Stmts: Stmt[];
}
interface Syntax {
  NewParser(...options: unknown[]): { Parse(src: string, name: string): { Stmts: Stmt[] } };
  NodeType(node: Node): string;
  Variant(language: unknown): unknown;
  LangBash: unknown;
  LangPOSIX: unknown;
}

interface Parser {
  parse(src: string): Stmt[] | null;
  nodeType(node: Node): string;
  /** The `Op` values of `&&` and `||` (read from a parse: the package exports no names for them). */
  and: number;
  or: number;
}

const parsers = new Map<ShellLanguage, Parser>();
let syntax: Syntax | undefined;

function parserFor(language: ShellLanguage): Parser {
  let p = parsers.get(language);
  if (p) return p;
  syntax ??= (createRequire(import.meta.url)('mvdan-sh') as { syntax: Syntax }).syntax;
  const s = syntax;
  const parser = s.NewParser(s.Variant(language === 'bash' ? s.LangBash : s.LangPOSIX));
  const parse = (src: string): Stmt[] | null => {
    try {
      return parser.Parse(src, '').Stmts;
    } catch {
      return null;
    }
  };
  const op = (src: string): number => ((parse(src)?.[0]?.Cmd ?? null) as BinaryCmd | null)?.Op ?? Number.NaN;
  p = { parse, nodeType: (n) => s.NodeType(n), and: op('a && b'), or: op('a || b') };
  parsers.set(language, p);
  return p;
}

let defaultLanguage: ShellLanguage | undefined;

/**
 * The grammar of `shell` (a path or command name; undefined: the core's default shell,
 * `/bin/bash` when it exists, else `/bin/sh`), or null when the rewrite does not apply:
 * every shell on Windows, and shells other than bash, sh, dash and ash.
 */
export function shellLanguage(shell: string | undefined, platform: NodeJS.Platform = process.platform): ShellLanguage | null {
  if (platform === 'win32') return null;
  if (shell === undefined) {
    defaultLanguage ??= existsSync('/bin/bash') ? 'bash' : 'posix';
    return defaultLanguage;
  }
  const name = basename(shell);
  if (name === 'bash') return 'bash';
  return name === 'sh' || name === 'dash' || name === 'ash' ? 'posix' : null;
}

/**
 * A `&` that can end a statement: not part of `&&`, `&>`, `>&`, `<&` or `|&`. A command
 * without one, or without `&&`/`||`, is never rewritten, and is not parsed.
 */
const STATEMENT_AMPERSAND = /(?<![&<>|])&(?![&>])/;
const AND_OR = /&&|\|\|/;

/**
 * Longest command parsed, in UTF-16 code units (about bytes for ASCII): 64 Ki. The parse
 * runs on the event loop at about 2 µs a byte for a script of many short statements (130 ms
 * here at this size, 2 s at 1 MiB), so longer commands (scripts the shell reads through a
 * descriptor) go as given.
 */
export const MAX_PARSED_CHARS = 64 * 1024;

/** The and-or list a statement holds, if its operators are all the same (`&&` or `||`). */
function uniformList(p: Parser, stmt: Stmt): BinaryCmd | null {
  const cmd = stmt.Cmd;
  if (!cmd || p.nodeType(cmd) !== 'BinaryCmd') return null;
  const list = cmd as BinaryCmd;
  if (list.Op !== p.and && list.Op !== p.or) return null;
  for (let x = list.X.Cmd; x && p.nodeType(x) === 'BinaryCmd'; x = (x as BinaryCmd).X.Cmd) {
    const op = (x as BinaryCmd).Op;
    if (op === p.and || op === p.or) {
      if (op !== list.Op) return null;
    } else break;
  }
  return list;
}

/** The last top-level statement when it is a backgrounded, uniform and-or list. */
function backgroundedList(p: Parser, stmts: Stmt[] | null): { stmt: Stmt; list: BinaryCmd } | null {
  const stmt = stmts?.[stmts.length - 1];
  if (!stmt?.Background || stmt.Coprocess || stmt.Negated || stmt.Redirs.length > 0) return null;
  const list = uniformList(p, stmt);
  return list && { stmt, list };
}

/** Whether `rewritten` ends in the list `A op { B & }` (the check that the edit did what it meant). */
function hasRewrittenShape(p: Parser, rewritten: string, op: number): boolean {
  const stmts = p.parse(rewritten);
  const stmt = stmts?.[stmts.length - 1];
  if (!stmt || stmt.Background) return false;
  const list = uniformList(p, stmt);
  const group = list?.Y.Cmd;
  if (!list || list.Op !== op || !group || p.nodeType(group) !== 'Block') return false;
  const inner = (group as Block).Stmts;
  return inner.length === 1 && inner[0]?.Background === true;
}

let memo: { command: string; language: ShellLanguage; result: string | null } | undefined;

/**
 * `command` with its backgrounded last and-or list rewritten (see the module docs), or null
 * when it is left as given. Parses only commands of at most {@link MAX_PARSED_CHARS} that hold
 * `&&` or `||` and a statement-ending `&`; the last answer is kept, as spawn asks twice (its
 * size check, then the start).
 */
export function backgroundRewrite(command: string, language: ShellLanguage): string | null {
  if (command.length > MAX_PARSED_CHARS || !AND_OR.test(command) || !STATEMENT_AMPERSAND.test(command)) return null;
  if (memo?.command === command && memo.language === language) return memo.result;
  let result: string | null;
  try {
    result = rewrite(command, language);
  } catch {
    // The parser failed in a way it does not report as a syntax error (or could not be
    // loaded): the command goes as given, as one the parser refused would.
    result = null;
  }
  memo = { command, language, result };
  return result;
}

function rewrite(command: string, language: ShellLanguage): string | null {
  const p = parserFor(language);
  const found = backgroundedList(p, p.parse(command));
  if (!found) return null;
  // The parser counts UTF-8 bytes; a string that does not survive UTF-8 (a lone surrogate)
  // is left alone rather than edited at offsets that may not match it.
  const bytes = Buffer.from(command, 'utf8');
  if (bytes.toString('utf8') !== command) return null;
  const start = found.list.Y.Pos().Offset();
  const amp = found.stmt.Semicolon.Offset();
  if (bytes[amp] !== 0x26 || start >= amp) return null;
  // `&#c` is `&` and a comment, but `}#c` would be one word: keep `}` a word of its own.
  const next = bytes[amp + 1];
  const close = next === undefined || next === 0x20 || next === 0x09 || next === 0x0a ? ' }' : ' } ';
  const rewritten = Buffer.concat([bytes.subarray(0, start), Buffer.from('{ '), bytes.subarray(start, amp + 1), Buffer.from(close), bytes.subarray(amp + 1)]).toString('utf8');
  return hasRewrittenShape(p, rewritten, found.list.Op) ? rewritten : null;
}
