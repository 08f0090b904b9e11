// Worst cases of watch-pattern matching (issue 12, finding 8): the time from a session's
// output to its watch events, through `LineWatcher` (checkPatterns + compile + feed + flush).
//
//   node bench/watch.mjs                     # the working tree's ts/policy/notifications.ts (needs `npm run build` for the binding)
//   node bench/watch.mjs --source <commit>   # ts/notifications.ts as of a commit (e.g. HEAD before the regex crate)
//   node bench/watch.mjs --only 5000          # the cases whose name contains the text
//
// Each case runs in its own Node process, stopped after 30 s: a backtracking engine never
// returns on some of them. Lines reach the watcher in 4 KiB chunks, as a pipe delivers them.
import { spawnSync, execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const ROOT = join(import.meta.dirname, '..');

const LIMIT_MS = 30_000;
const LONG = 64 * 1024;
const LOG_PATTERNS = [
  'ERROR \\d+',
  'listening on port (\\d+)',
  '[Ww]arn(ing)?: .*deprecated',
  'panicked at',
  'Traceback \\(most recent call last\\)',
  'FATAL',
  'out of memory',
  'connection refused',
  'exit code [1-9]\\d*',
  'tests? failed',
];
// 32 patterns: the log patterns, then numbered variants (real sets repeat a shape with other words).
const THIRTY_TWO = Array.from({ length: 32 }, (_, i) => LOG_PATTERNS[i] ?? `job ${i} (done|failed) after \\d+ ?ms`);
const logLines = (n) => Array.from({ length: n }, (_, i) => (i % 100 === 99 ? `ERROR ${i} while serving /api/v1/items/${i}` : `2026-11-30T20:00:00Z info request ${i} served in 12ms path=/api/v1/items/${i * 7}`));

const CASES = {
  '(a|a)*c on a 28-char line': { patterns: ['(a|a)*c'], lines: ['a'.repeat(28)], events: 0 },
  '(\\w|\\d)*!x on a 28-char line': { patterns: ['(\\w|\\d)*!x'], lines: ['1'.repeat(28)], events: 0 },
  '(a|a)*c on a 64 KiB line': { patterns: ['(a|a)*c'], lines: ['a'.repeat(LONG)], events: 0 },
  '(\\w|\\d)*!x on a 64 KiB line': { patterns: ['(\\w|\\d)*!x'], lines: ['1'.repeat(LONG)], events: 0 },
  '32 patterns x 5000 lines': { patterns: THIRTY_TWO, lines: logLines(5000), events: 50 },
  // The most automaton states a set may have (16 384), on a flood: each line is matched on
  // its first 512 bytes, and lines past the event loop's budget (100 ms per second) are skipped.
  '16 x{1,480+i}y x 200 lines of 64 KiB': { patterns: Array.from({ length: 16 }, (_, i) => `x{1,${480 + i}}y`), lines: Array(200).fill('x'.repeat(LONG)), events: 0 },
  '32 x{1,480+i}y (31 811 states, refused)': { patterns: Array.from({ length: 32 }, (_, i) => `x{1,${480 + i}}y`), lines: ['x'.repeat(LONG)], events: 0 },
  '10000 patterns x 5000 lines': { patterns: Array.from({ length: 10_000 }, (_, i) => `never ${i}`), lines: logLines(5000), events: 0 },
};

async function loadWatcher(source) {
  const contents = source ? execFileSync('git', ['show', `${source}:ts/notifications.ts`], { cwd: ROOT, encoding: 'utf8' }) : undefined;
  // Written beside this script: the binding is found relative to the module's own URL.
  const outfile = `${ROOT}/bench/.watch-bundle-${process.pid}.mjs`;
  await build({
    ...(contents ? { stdin: { contents, resolveDir: `${ROOT}/ts`, loader: 'ts' } } : { entryPoints: [`${ROOT}/ts/policy/notifications.ts`] }),
    bundle: true,
    format: 'esm',
    platform: 'node',
    packages: 'external',
    outfile,
    logLevel: 'silent',
  });
  try {
    return await import(outfile);
  } finally {
    rmSync(outfile, { force: true });
  }
}

async function runCase(name, source) {
  const m = await loadWatcher(source);
  const c = CASES[name];
  const text = `${c.lines.join('\n')}\n`;
  const times = [];
  let outcome = '';
  for (let rep = 0; rep < 5 && times.reduce((a, b) => a + b, 0) < 5000; rep++) {
    const t0 = performance.now();
    try {
      m.checkPatterns(c.patterns);
      const w = new m.LineWatcher(c.patterns, { cooldownMs: 0, maxPerSession: 1e9, maxPerMinute: 1e9 }, new m.RateLimit(1e9));
      let events = 0;
      for (let i = 0; i < text.length; i += 4096) events += w.feed(text.slice(i, i + 4096), events).length;
      events += w.flush(events).length;
      const skipped = w.takeSkipped?.() ?? 0;
      outcome = `${events === c.events ? `${events} events` : `WRONG: ${events} events, expected ${c.events}`}${skipped ? `, ${skipped} lines skipped` : ''}`;
    } catch (err) {
      outcome = `refused: ${err.code ?? ''} ${err.message.slice(0, 70)}`;
    }
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ ms: times[Math.floor(times.length / 2)], max: times.at(-1), outcome }));
}

const args = process.argv.slice(2);
const source = args.includes('--source') ? args[args.indexOf('--source') + 1] : undefined;
if (args.includes('--case')) {
  await runCase(args[args.indexOf('--case') + 1], source);
} else {
  console.log(`watch patterns: ts/notifications.ts ${source ? `at ${source}` : 'of the working tree'}; ms (median of up to 5 runs, max)`);
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : '';
  for (const name of Object.keys(CASES).filter((n) => n.includes(only))) {
    const res = spawnSync(process.execPath, [new URL(import.meta.url).pathname, '--case', name, ...(source ? ['--source', source] : [])], { timeout: LIMIT_MS, killSignal: 'SIGKILL', encoding: 'utf8' });
    if (res.error?.code === 'ETIMEDOUT' || res.signal === 'SIGKILL') console.log(`${name.padEnd(34)} > ${LIMIT_MS} ms (stopped)`);
    else if (res.status !== 0) console.log(`${name.padEnd(34)} failed: ${res.stderr.trim().split('\n').slice(-3).join(' ')}`);
    else {
      const r = JSON.parse(res.stdout);
      console.log(`${name.padEnd(34)} ${r.ms.toFixed(2).padStart(10)} ms  (max ${r.max.toFixed(2)})  ${r.outcome}`);
    }
  }
}
