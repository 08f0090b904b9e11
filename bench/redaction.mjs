// Redaction recall and false positives on the corpus (__test__/fixtures/redaction-corpus.ts),
// and the time to redact 10 MB of log-like text.
//
//   node bench/redaction.mjs                      # the working tree's ts/policy/redact.ts
//   git show HEAD~5:ts/redact.ts > /tmp/old.ts && node bench/redaction.mjs /tmp/old.ts
//
// A secret counts as masked when no 12-character piece of it survives (the rule of
// __test__/redaction.test.ts); a look-alike counts as a false positive when it changes.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { ROOT } from './lib.mjs';

// Bundled into a file under ts/, so the bundle finds the native addon (../index.js) as
// ts/native.ts does.
let loads = 0;
async function load(entry) {
  const file = join(ROOT, 'ts', `.bench-redaction-${process.pid}-${loads++}.mjs`);
  await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', outfile: file, logLevel: 'silent' });
  try {
    return await import(pathToFileURL(file).href);
  } finally {
    rmSync(file, { force: true });
  }
}

const redactPath = process.argv[2] ?? `${ROOT}/ts/policy/redact.ts`;
const r = await load(redactPath);
const { SECRETS, BENIGN } = await load(`${ROOT}/__test__/fixtures/redaction-corpus.ts`);

const run = (s) => (s.command ? r.redactCommand(s.text) : r.redact(s.text, { envDump: s.envDump, startsInKeyBlock: s.startsInKeyBlock }));
function leaked(out, secret) {
  if (out.includes(secret)) return true;
  for (let i = 0; i + 12 <= secret.length; i++) if (out.includes(secret.slice(i, i + 12))) return true;
  return false;
}

const misses = SECRETS.filter((s) => leaked(run(s), s.secret));
const fps = BENIGN.filter((s) => run(s) !== s.text);
console.log(`redact: ${redactPath}`);
console.log(`recall: ${SECRETS.length - misses.length}/${SECRETS.length} masked (${misses.length} leaked)`);
console.log(`false positives: ${fps.length}/${BENIGN.length} changed`);
function byKind(list) {
  const counts = new Map();
  for (const s of list) counts.set(s.kind, (counts.get(s.kind) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${k} ${n}`).join(', ');
}
if (misses.length) console.log(`  leaked by kind: ${byKind(misses)}`);
if (fps.length) console.log(`  false positives by kind: ${byKind(fps)}`);

// 10 MB of log-like output: timestamps, key=value pairs, URLs, JSON, some secrets.
const line = (i) =>
  [
    `2024-06-01T12:00:${String(i % 60).padStart(2, '0')}Z INFO request id=${i} path=/api/v1/items status=200 took=${i % 97}ms`,
    `{"level":"debug","msg":"cache miss","key":"user:${i}","ttl":3600}`,
    `GET https://api.example.com/v2/orders?limit=50&page=${i} 200`,
    `    at Object.<anonymous> (/app/src/handler.js:${i % 400}:17)`,
    i % 50 === 0 ? `DB_PASSWORD=s3cr3t${i} ghp_Qm7Xc2LpV9sKd4TzR8nWb1Yh6Gf3Ja5Eu0Ni` : `progress ${i % 100}% [${'#'.repeat(i % 40)}]`,
  ][i % 5];
let text = '';
for (let i = 0; text.length < 10_000_000; i++) text += `${line(i)}\n`;
function time(label, input) {
  const times = [];
  for (let k = 0; k < 5; k++) {
    const t0 = performance.now();
    r.redact(input);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(`redact ${label}: median ${times[2].toFixed(0)} ms (min ${times[0].toFixed(0)}, max ${times[4].toFixed(0)}; 5 runs)`);
}
time('10 MB of log text', text);
// The raw view of coloured output: every line holds escape sequences, so each is also read
// as a reader sees it (ts/policy/redact/readable.ts).
const coloured = text.replace(/^(\S+)/gm, '\u001b[2m$1\u001b[0m');
time(`${(coloured.length / 1e6).toFixed(0)} MB of coloured log text`, coloured);
