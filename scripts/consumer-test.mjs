// Consumer test: packs procward and its linux-x64-gnu platform package, installs both into a
// fresh project outside the repository (no access to its node_modules), and there, from ESM
// and CommonJS, opens a registry, runs a real job, waits for it, kills a tree, and runs the
// installed CLI. Also checks what `npm pack` ships. Exits non-zero on any failure.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'procward-consumer-'));
const run = (cmd, args, cwd, env = {}) => execFileSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
let failures = 0;
let checks = 0;
const check = (ok, what) => {
  checks++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
};

try {
  // What the root package ships: the bundle, the loader and docs; no sources, no binaries.
  const [dry] = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], root));
  const files = dry.files.map((f) => f.path);
  check(files.includes('dist/index.js') && files.includes('dist/index.mjs') && files.includes('dist/cli.mjs') && files.includes('index.js'), 'root package ships dist/, the loader and the CLI');
  check(!files.some((f) => /^(ts|src|crates|__test__|bench|target|npm)\//.test(f) || f.endsWith('.node')), `root package ships no sources or binaries (${files.length} files)`);
  check(dry.unpackedSize < 1_000_000, `root package unpacked size ${dry.unpackedSize} bytes < 1 MB`);

  const rootTgz = join(work, run('npm', ['pack', '--ignore-scripts', '--pack-destination', work], root).trim().split('\n').pop());
  const platDir = join(root, 'npm', 'linux-x64-gnu');
  copyFileSync(join(root, 'procward.linux-x64-gnu.node'), join(platDir, 'procward.linux-x64-gnu.node'));
  copyFileSync(join(root, 'procward-supervise'), join(platDir, 'procward-supervise'));
  const [platDry] = JSON.parse(run('npm', ['pack', '--dry-run', '--json'], platDir));
  const platFiles = platDry.files.map((f) => f.path);
  check(platFiles.includes('procward.linux-x64-gnu.node') && platFiles.includes('procward-supervise'), `platform package ships the addon and the supervisor (${platFiles.join(', ')})`);
  const platTgz = join(work, run('npm', ['pack', '--pack-destination', work], platDir).trim().split('\n').pop());
  rmSync(join(platDir, 'procward.linux-x64-gnu.node'));
  rmSync(join(platDir, 'procward-supervise'));

  const app = join(work, 'app');
  run('mkdir', ['-p', app], work);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer-app', version: '1.0.0', private: true }));
  run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', rootTgz, platTgz], app);

  const scenario = (load) => `${load}
(async () => {
  const state = ${JSON.stringify(join(work, 'state'))} + Math.random();
  const r = await ProcessRegistry.open({ stateDir: state });
  const s = await r.spawn('echo consumer-ok; exit 3');
  const w = await r.wait(s.id, { timeoutMs: 10000 });
  const tree = await r.spawn('sleep 30 & sleep 30 & wait', { durable: false });
  await new Promise((res) => setTimeout(res, 200));
  const kids = descendants(tree.pid).length;
  const k = await r.kill(tree.id, { graceMs: 500 });
  await r.close();
  console.log(JSON.stringify({ exit: w.exitCode, out: w.outputPreview, kids, killed: k.outcome, survivors: k.survivors.length }));
})().catch((e) => { console.error(e); process.exit(1); });`;
  writeFileSync(join(app, 'esm.mjs'), scenario("import { ProcessRegistry, descendants } from 'procward';"));
  writeFileSync(join(app, 'cjs.cjs'), scenario("const { ProcessRegistry, descendants } = require('procward');"));
  for (const file of ['esm.mjs', 'cjs.cjs']) {
    const res = JSON.parse(run(process.execPath, [file], app));
    check(res.exit === 3 && res.out === 'consumer-ok\n' && res.kids >= 2 && res.killed === 'killed' && res.survivors === 0, `${file}: job ran, waited, tree killed ${JSON.stringify(res)}`);
  }

  const env = { PROCWARD_STATE_DIR: join(work, 'cli-state') };
  const id = run('npx', ['--no-install', 'procward', 'start', '--', 'echo from-cli; exit 5'], app, env).trim();
  check(/^proc_[0-9a-f]{12}$/.test(id), `installed CLI started a job (${id})`);
  let waited = '';
  let code = 0;
  try {
    waited = run('npx', ['--no-install', 'procward', 'wait', id], app, env);
  } catch (err) {
    code = err.status;
    waited = err.stdout;
  }
  check(code === 5 && waited === 'from-cli\n', `installed CLI waited: exit ${code}, output ${JSON.stringify(waited)}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(`consumer test: ${checks - failures} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
