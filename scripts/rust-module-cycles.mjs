// Checks that the modules of a crate import each other without a cycle: procward-core, or
// with `--root src` the binding crate.
//
//   node scripts/rust-module-cycles.mjs [--root DIR] [--graph]
//
// Reads every `.rs` file under crates/procward-core/src (not src/bin: the supervisor is a
// crate of its own and reaches the core as `procward_core::`), and draws an edge from a
// file's top-level module to every top-level module its code names through `crate::…`,
// `super::…` or a grouped `use crate::{…}` (nested groups too). Submodules count as their top-level module
// (`kill/settle.rs` is `kill`, `sys/linux.rs` is `sys`): a parent and its private
// children are one unit. The crate root (lib.rs) is not a node: it declares and re-exports
// everything, and `crate::Error` is resolved through its `pub use` lines to `error`.
// Comments are skipped (a doc link is not a dependency); test code counts.
//
// Prints the cycles and exits 1 when there is one; exits 0 otherwise. `--graph` also
// prints every module with the modules it imports.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const rootArg = process.argv.indexOf('--root');
const root = join(import.meta.dirname, '..', ...(rootArg > 0 ? [process.argv[rootArg + 1]] : ['crates', 'procward-core', 'src']));
const crateName = rootArg > 0 ? process.argv[rootArg + 1] : 'procward-core';

/** Every `.rs` file below `dir`, except the binaries' folder. */
function rustFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return relative(root, path) === 'bin' ? [] : rustFiles(path);
    return e.name.endsWith('.rs') ? [path] : [];
  });
}

/** The module path of a file: `kill/mod.rs` is `['kill']`, `lib.rs` is `[]`. */
function modulePath(file) {
  const parts = relative(root, file).split(sep);
  const last = parts.pop().replace(/\.rs$/, '');
  if (last !== 'mod' && !(parts.length === 0 && last === 'lib')) parts.push(last);
  return parts;
}

/**
 * The code of a file with comments, strings and character literals blanked out (a doc link
 * or a `"crate::x"` is not a dependency). Lifetimes (`'a`) are code and stay.
 */
function code(text) {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < n && text[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      let depth = 0;
      do {
        if (text.startsWith('/*', i)) {
          depth++;
          i += 2;
        } else if (text.startsWith('*/', i)) {
          depth--;
          i += 2;
        } else i++;
      } while (depth > 0 && i < n);
      out += ' ';
    } else if (/[rb]/.test(c) && /^(?:br|r)#*"/.test(text.slice(i, i + 260)) && !/\w/.test(text[i - 1] ?? '')) {
      const open = /^(?:br|r)(#*)"/.exec(text.slice(i, i + 260));
      const close = `"${open[1]}`;
      const end = text.indexOf(close, i + open[0].length);
      i = end < 0 ? n : end + close.length;
      out += '""';
    } else if (c === '"') {
      i++;
      while (i < n && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
      out += '""';
    } else if (c === "'" && /^'(?:\\.[^']*|[^\\'])'/su.test(text.slice(i, i + 12))) {
      // A character literal ('x', '\n', '\u{1F600}'), not a lifetime.
      i += /^'(?:\\.[^']*|[^\\'])'/su.exec(text.slice(i, i + 12))[0].length;
      out += "' '";
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

const files = rustFiles(root);
const libText = code(readFileSync(join(root, 'lib.rs'), 'utf8'));
const topLevel = new Set([...libText.matchAll(/\bmod\s+([a-z_][a-z0-9_]*)\s*;/g)].map((m) => m[1]));

// `pub use error::{Error, Result};` in lib.rs: `crate::Error` lives in `error`.
const rootNames = new Map();
for (const m of libText.matchAll(/\bpub\s+use\s+([a-z_][a-z0-9_]*)::(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)\s*;/g)) {
  for (const name of m[2].replace(/[{}]/g, '').split(',')) {
    const n = name.trim().split(/\s+as\s+/).pop();
    if (n) rootNames.set(n, m[1]);
  }
}

/** The top-level module a path names, seen from module `from` (`['kill', 'settle']`). */
function target(from, path) {
  const segs = path.split('::').filter(Boolean);
  let base;
  if (segs[0] === 'crate') {
    segs.shift();
    base = [];
  } else {
    base = [...from];
    while (segs[0] === 'super') {
      segs.shift();
      base.pop();
    }
  }
  const full = [...base, ...segs];
  const first = full[0];
  if (first === undefined) return undefined;
  if (topLevel.has(first)) return first;
  return rootNames.get(first);
}

/** The top-level branches of a `{…}` group that starts at `open`: `{a::{X, Y}, b}` gives `a`, `b`. */
function branches(text, open) {
  const heads = [];
  let depth = 0;
  let current = '';
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '{') {
      depth++;
      if (depth === 1) continue;
    } else if (c === '}') {
      depth--;
      if (depth === 0) {
        heads.push(current);
        break;
      }
    } else if (c === ',' && depth === 1) {
      heads.push(current);
      current = '';
      continue;
    }
    if (depth === 1) current += c;
  }
  return heads.map((b) => b.trim().split('::')[0].trim()).filter((h) => h && h !== 'self' && h !== '*');
}

/** Paths a file names: `crate::a::b`, `super::x`, and each branch of `crate::{a::X, b}`. */
function paths(text) {
  const found = [];
  const prefix = /\b((?:crate|super)(?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))*)::(\{|[A-Za-z_][A-Za-z0-9_]*)/g;
  for (const m of text.matchAll(prefix)) {
    if (m[2] === '{') for (const head of branches(text, m.index + m[0].length - 1)) found.push(`${m[1]}::${head}`);
    else found.push(`${m[1]}::${m[2]}`);
  }
  return found;
}

const graph = new Map([...topLevel].sort().map((m) => [m, new Set()]));
for (const file of files) {
  const from = modulePath(file);
  if (from.length === 0) continue;
  const node = from[0];
  if (!graph.has(node)) continue; // a file no `mod` declares (dead code) has no edges
  for (const p of paths(code(readFileSync(file, 'utf8')))) {
    const to = target(from, p);
    if (to && to !== node) graph.get(node).add(to);
  }
}

// Tarjan's strongly connected components: a component of more than one module is a cycle.
let index = 0;
const idx = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const components = [];
function connect(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  onStack.add(v);
  for (const w of graph.get(v)) {
    if (!idx.has(w)) {
      connect(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const c = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      c.push(w);
    } while (w !== v);
    if (c.length > 1) components.push(c);
  }
}
for (const v of graph.keys()) if (!idx.has(v)) connect(v);

/** One cycle through `start` inside `members`, as a path that ends where it began. */
function cycleThrough(start, members) {
  const prev = new Map([[start, null]]);
  const queue = [start];
  while (queue.length) {
    const v = queue.shift();
    for (const w of graph.get(v)) {
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = prev.get(u)) path.splice(1, 0, u);
        return [...path, start];
      }
      if (members.has(w) && !prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

if (process.argv.includes('--graph')) {
  for (const [m, deps] of graph) console.log(`${m} -> ${[...deps].sort().join(', ') || '(nothing)'}`);
}
const edges = [...graph.values()].reduce((n, s) => n + s.size, 0);
if (components.length) {
  console.error(`${crateName}: ${components.length} import cycle(s) among its modules:`);
  for (const c of components) console.error(`  ${cycleThrough(c.sort()[0], new Set(c)).join(' -> ')}   (modules in the cycle: ${c.sort().join(', ')})`);
  process.exit(1);
}
console.log(`${crateName}: no import cycle among ${graph.size} modules (${edges} edges, ${files.length} files).`);
