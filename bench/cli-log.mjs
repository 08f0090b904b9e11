// CLI log streaming (issue 18): `procward log ID > /dev/null` and `procward wait ID | wc -l`
// of a durable job that wrote N lines (`seq N`), against `cat` of the same log file, in one
// run; prints medians and the ratio. Usage: node bench/cli-log.mjs [lines] [runs]
// (default 3 000 000 lines, about 23 MB; 5 runs; needs `npm run build`).
import { execFileSync, execSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const CLI = `${process.execPath} ${join(ROOT, 'dist', 'cli.mjs')}`;
const lines = Number(process.argv[2] ?? 3_000_000);
const runs = Number(process.argv[3] ?? 5);
const state = mkdtempSync(join(tmpdir(), 'procward-bench-cli-'));

try {
  const id = execSync(`${CLI} start --state-dir ${state} -- 'seq ${lines}'`, { encoding: 'utf8' }).trim();
  execSync(`${CLI} wait -q ${id} --state-dir ${state}`, { stdio: 'ignore' });
  const log = join(state, 'sessions', id, 'output.log');
  const cases = {
    'cat output.log > /dev/null': `cat ${log} > /dev/null`,
    'procward log ID > /dev/null': `${CLI} log ${id} --state-dir ${state} > /dev/null`,
    'procward wait ID | wc -l': `${CLI} wait ${id} --state-dir ${state} 2>/dev/null | wc -l`,
  };
  const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let i = 0; i < runs; i++) {
    for (const [name, cmd] of Object.entries(cases)) {
      const t = process.hrtime.bigint();
      execFileSync('/bin/sh', ['-c', cmd], { stdio: 'ignore' });
      samples[name].push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const mb = execSync(`wc -c < ${log}`, { encoding: 'utf8' }).trim() / 1e6;
  const base = median(samples[`procward log ID > /dev/null`]);
  console.log(`| command (${lines} lines, ${mb.toFixed(1)} MB, ${runs} runs) | median ms | MB/s | × procward log |\n|---|---|---|---|`);
  for (const [name, xs] of Object.entries(samples)) console.log(`| ${name} | ${median(xs).toFixed(0)} | ${(mb / (median(xs) / 1000)).toFixed(0)} | ${(median(xs) / base).toFixed(2)} |`);
} finally {
  rmSync(state, { recursive: true, force: true });
}
