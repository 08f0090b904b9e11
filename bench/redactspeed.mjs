// Redaction's speed on a synthetic build log of varied lines (issue 27): compiler commands with
// include paths, test output, stack traces, URLs, hashes, UUIDs, ANSI colour, base64
// look-alikes and a few secrets, handed to redact() in 64 KiB slices. Against floors on the
// same text in the same run: decoding its bytes as UTF-8 and splitting them into lines, and
// the core's token engine alone. A second log with no secret and no credential word shows
// what text pays that matches no rule.
//
//   node bench/redactspeed.mjs [MB] [other/ts/policy/redact.ts]   (default 64; a second
//   redact.ts, such as a worktree of an earlier commit, is measured beside this one)
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { redact } from '../dist/index.mjs';
import { fmt, ratio, ROOT, table } from './lib.mjs';

/** `redact` of another tree's `ts/policy/redact.ts`, bundled beside ours so it finds the addon. */
async function otherRedact(entry) {
  const file = join(ROOT, 'ts', `.bench-redactspeed-${process.pid}.mjs`);
  await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', outfile: file, logLevel: 'silent' });
  try {
    return (await import(pathToFileURL(file).href)).redact;
  } finally {
    rmSync(file, { force: true });
  }
}

let seed = 7;
const rnd = (n) => {
  seed = (seed * 1103515245 + 12345) >>> 0;
  return (seed >>> 8) % n;
};
const hex = (n) => randomBytes(Math.ceil(n / 2)).toString('hex').slice(0, n);
const b64 = (n) => randomBytes(n).toString('base64').slice(0, n);

/** One line of a build log; every 20 000th carries a secret. */
function buildLine(i, secrets) {
  if (secrets && i % 20_000 === 7) return [`export GITHUB_TOKEN=ghp_${b64(36).replace(/[+/]/g, 'x')}`, `  password = "Tr0ub4dor-${hex(8)}"`, `curl -H 'Authorization: Bearer ${hex(40)}' https://api.example.com`][rnd(3)];
  switch (rnd(10)) {
    case 0:
      return `gcc -O2 -g -Wall -Iinclude -I/usr/include/glib-2.0 -DVERSION=\\"1.${i % 9}\\" -c src/mod${i % 300}/file${i % 57}.c -o build/obj/file${i % 57}.o`;
    case 1:
      return `\u001b[32m✓\u001b[39m test/unit/parser.test.ts > parses case ${i} \u001b[2m(${i % 97} ms)\u001b[22m`;
    case 2:
      return `    at Module._compile (node:internal/modules/cjs/loader:${1000 + (i % 400)}:14)`;
    case 3:
      return `GET https://registry.npmjs.org/@scope%2fpkg-${i % 700}/-/pkg-${i % 700}-1.2.${i % 30}.tgz 200 ${i % 500}ms`;
    case 4:
      return `commit ${hex(40)} (sha256:${hex(64)})`;
    case 5:
      return `request_id=${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)} status=200 bytes=${i % 9000}`;
    case 6:
      return `data:image/png;base64,${b64(120)}`;
    case 7:
      return `[${String(i % 100).padStart(3)}%] Building CXX object src/CMakeFiles/core.dir/module_${i % 800}.cpp.o`;
    case 8:
      return `  "integrity": "sha512-${b64(86)}==",`;
    default:
      return `2024-06-01T12:${String(i % 60).padStart(2, '0')}:00Z INFO worker ${i % 8} finished job ${i} in ${i % 977} ms`;
  }
}

export function buildLog(mb, secrets) {
  const parts = [];
  let size = 0;
  for (let i = 0; size < mb * 1e6; i++) {
    const l = `${buildLine(i, secrets)}\n`;
    parts.push(l);
    size += l.length;
  }
  return parts.join('');
}

async function timed(fn) {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const t = performance.now();
  await fn();
  const ms = performance.now() - t;
  h.disable();
  return { ms, stall: h.max / 1e6 };
}

const yieldLoop = () => new Promise((r) => setImmediate(r));

async function slices(text, each) {
  for (let i = 0; i < text.length; i += 64 * 1024) {
    each(text.slice(i, i + 64 * 1024));
    await yieldLoop();
  }
}

export async function redactSpeedBench({ mb = 64, other } = {}) {
  const rows = [];
  const base = other ? await otherRedact(other) : null;
  for (const secrets of [true, false]) {
    const text = buildLog(mb, secrets);
    const bytes = Buffer.from(text);
    const what = secrets ? 'build log' : 'build log, no secret';
    // Warm-up on the first MB: the JIT, and the rules' regexes compiled on first use.
    for (const f of [redact, base].filter(Boolean)) await slices(text.slice(0, 1e6), (s) => f(s));
    const floor = await timed(() => slices(bytes.toString('utf8'), (s) => s.split('\n')));
    const red = await timed(() => slices(text, (s) => redact(s)));
    const speed = (ms) => `${(bytes.length / 1e6 / (ms / 1000)).toFixed(0)} MB/s`;
    rows.push([`${what}: UTF-8 decode and split into lines (floor)`, `${fmt(floor.ms)} ms`, speed(floor.ms), '1.00×', `${floor.stall.toFixed(1)} ms`]);
    rows.push([`${what}: redact() in 64 KiB slices`, `${fmt(red.ms)} ms`, speed(red.ms), ratio(red.ms, floor.ms), `${red.stall.toFixed(1)} ms`]);
    if (base) {
      const b = await timed(() => slices(text, (s) => base(s)));
      rows.push([`${what}: ${other}`, `${fmt(b.ms)} ms`, speed(b.ms), ratio(b.ms, floor.ms), `${b.stall.toFixed(1)} ms`]);
    }
  }
  return table(`redact() on a ${mb} MB synthetic build log of varied lines, 64 KiB slices (target: 500 MB/s)`, ['work', 'time', 'speed', 'vs floor', 'worst event-loop stall'], rows) + '\n';
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(await redactSpeedBench({ mb: Number(process.argv[2] ?? 64), other: process.argv[3] }));
}
