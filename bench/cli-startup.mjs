// CLI start-up (issue 18): `procward --version` and `--help` against bare `node -e 0`, run
// alternately in one process so both see the same machine load; prints medians and ratios.
// Usage: node bench/cli-startup.mjs [runs]   (default 20 runs of each; needs `npm run build:ts`)
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist', 'cli.mjs');
const runs = Number(process.argv[2] ?? 20);

const cases = {
  'node -e 0': ['-e', '0'],
  'procward --version': [CLI, '--version'],
  'procward --help': [CLI, '--help'],
  'procward probe <pid> (loads the addon)': [CLI, 'probe', String(process.pid)],
};

function timeOnce(args) {
  const t = process.hrtime.bigint();
  execFileSync(process.execPath, args, { stdio: 'ignore' });
  return Number(process.hrtime.bigint() - t) / 1e6;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (const args of Object.values(cases)) timeOnce(args); // warm the page cache
for (let i = 0; i < runs; i++) for (const [name, args] of Object.entries(cases)) samples[name].push(timeOnce(args));

const base = median(samples['node -e 0']);
console.log(`| command | median ms (${runs} runs each, interleaved) | × node -e 0 |\n|---|---|---|`);
for (const [name, xs] of Object.entries(samples)) console.log(`| ${name} | ${median(xs).toFixed(1)} | ${(median(xs) / base).toFixed(2)} |`);
