// Consumer test: packs procward and its platform package the way they are published
// (scripts/collect-artifacts.mjs), installs both into a fresh project outside the repository,
// and there, from ESM and CommonJS, checks which addon the loader took, opens a registry,
// runs a real job, waits for it, kills a tree, and runs the installed CLI. Also checks what
// `npm pack` ships and that a platform package without its binaries refuses to pack.
//
//   node scripts/consumer-test.mjs             this machine (linux-x64-gnu from `npm run build`)
//   node scripts/consumer-test.mjs --windows   win32-x64-msvc under Wine: the gnu cross build of
//       scripts/platforms/windows.sh stands in for the msvc one; npm installs on Linux with
//       --os=win32 --cpu=x64 --force and the smoke runs in Node for Windows under Wine, its stdout and
//       stderr in files (Node under Wine fails on a Linux pipe). Needs PROCWARD_WINDOWS_NODE
//       (node.exe) and the Wine prefix in WINEPREFIX: run through
//       scripts/platforms/consumer-windows.sh. What the platform does not have yet (a spawn or a
//       durable job that throws ENOTSUP) is reported as skipped: a durable job falls back to a
//       live one; without spawn the run checks the loader, probe and identity.
// Exits non-zero on any failure; the last line is "consumer test: N passed, N failed".
import { execFileSync } from 'node:child_process';
import { closeSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readNapiConfig } from '@napi-rs/cli';
import { collect, packRelease, supervisorName } from './collect-artifacts.mjs';

const root = join(import.meta.dirname, '..');
const windows = process.argv.includes('--windows');
const target = windows ? 'win32-x64-msvc' : `linux-${process.arch}-gnu`;
const work = mkdtempSync(join(tmpdir(), 'procward-consumer-'));
const run = (cmd, args, cwd, env = {}) => execFileSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
let failures = 0;
let checks = 0;
const check = (ok, what) => {
  checks++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
};

/**
 * Runs `args` in Node for Windows under Wine with stdout and stderr in files; `{ code, out, err }`.
 * A run that outlasts 120 s is stopped (SIGTERM to wine) and no later run is tried: a Node
 * that hangs under Wine here has always been a prefix held by another run (wineboot, a
 * wineserver -k), and each further try would wait as long.
 */
let wineHung = '';
function wineNode(args, cwd, env = {}) {
  if (wineHung) return { code: 1, out: '', err: `not run: ${wineHung}` };
  const [outPath, errPath] = ['out', 'err'].map((s) => join(cwd, `wine-node.${s}`));
  const fds = [openSync(outPath, 'w'), openSync(errPath, 'w')];
  let code = 0;
  try {
    execFileSync('wine', [process.env.PROCWARD_WINDOWS_NODE, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', ...fds], timeout: 120_000 });
  } catch (err) {
    code = err.status ?? 1;
    if (err.signal) wineHung = `node.exe ${args.join(' ')} under Wine did not end within 120 s (${err.signal}); is another run using ${process.env.WINEPREFIX}?`;
  } finally {
    for (const fd of fds) closeSync(fd);
  }
  return { code, out: readFileSync(outPath, 'utf8'), err: readFileSync(errPath, 'utf8') + (wineHung ? `\n${wineHung}` : '') };
}

/** Runs the installed procward in the app: this Node, or Node for Windows under Wine. */
function runNode(args, cwd, env = {}) {
  if (windows) return wineNode(args, cwd, env);
  try {
    return { code: 0, out: run(process.execPath, args, cwd, env), err: '' };
  } catch (err) {
    return { code: err.status ?? 1, out: err.stdout ?? '', err: String(err.stderr ?? '') };
  }
}

// The scenario each module format runs: the loaded addon (from the report's shared objects),
// probe and identity of itself, then a job, its exit and output, and a tree kill.
const job = windows ? 'echo consumer-ok& exit 3' : 'echo consumer-ok; exit 3';
const tree = windows ? 'start /b ping -n 30 127.0.0.1 >nul& ping -n 30 127.0.0.1 >nul' : 'sleep 30 & sleep 30 & wait';
const scenario = (load) => `${load}
(async () => {
  const res = {};
  res.addon = process.report.getReport().sharedObjects.find((p) => /procward\\.[a-z0-9-]+\\.node$/.test(p));
  res.alive = probe([process.pid])[0].alive;
  res.identity = identity(process.pid).pid === process.pid;
  const r = await ProcessRegistry.open({ stateDir: require('node:path').join(process.cwd(), 'state-' + Math.random()) });
  res.unsupported = [];
  // A durable job (the default) first, a live one where durable jobs are not written yet.
  const spawn = async (command, options) => {
    try {
      return await r.spawn(command, options);
    } catch (e) {
      if (!/ENOTSUP|not supported on this platform/.test(String(e.code) + e.message)) throw e;
      res.unsupported.push(e.message);
      return options ? undefined : spawn(command, { durable: false });
    }
  };
  const s = await spawn(${JSON.stringify(job)});
  if (s) {
    const w = await r.wait(s.id, { timeoutMs: 30000 });
    const t = await spawn(${JSON.stringify(tree)}, { durable: false });
    await new Promise((ok) => setTimeout(ok, 1000));
    const kids = descendants(t.pid).length;
    const k = await r.kill(t.id, { graceMs: 500 });
    Object.assign(res, { exit: w.exitCode, out: w.outputPreview.replace(/\\r\\n/g, '\\n'), kids, killed: k.outcome, survivors: k.survivors.length });
  }
  await r.close();
  console.log(JSON.stringify(res));
})().catch((e) => { console.error(e); process.exit(1); });`;

try {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const { targets } = await readNapiConfig(join(root, 'package.json'));

  // What the root package ships: the bundle, the types and docs; no sources, no binaries.
  const [dry] = JSON.parse(run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], root));
  const files = dry.files.map((f) => f.path);
  check(['dist/index.js', 'dist/index.mjs', 'dist/cli.mjs', 'index.d.ts'].every((f) => files.includes(f)), 'root package ships dist/, the CLI and the binding types');
  check(!files.some((f) => /^(ts|src|crates|__test__|bench|target|npm|scripts)\//.test(f) || f.endsWith('.node') || f === 'index.js'), `root package ships no sources, binaries or second loader (${files.length} files)`);
  // Two bundles of the facade (ESM, CJS; ~410 KB each), the lazily loaded CLI and MCP
  // chunks, the three framework adapters and the types: 1.52 MB on 2026-12-01. A binary or a
  // bundled dependency (a framework, the MCP SDK) would add megabytes.
  check(dry.unpackedSize < 2_000_000, `root package unpacked size ${dry.unpackedSize} bytes < 2 MB`);

  // A platform folder without its binaries must refuse to pack (its prepack), not ship empty.
  const empty = join(work, 'empty', target);
  cpSync(join(root, 'npm', target), empty, { recursive: true });
  rmSync(join(empty, `procward.${target}.node`), { force: true });
  let refusal = '';
  try {
    execFileSync('npm', ['pack', '--dry-run'], { cwd: empty, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    refusal = String(err.stderr);
  }
  check(/refusing to pack procward-[a-z0-9-]+: missing procward\./.test(refusal), `npm pack of ${target} without its binaries fails: ${refusal.match(/refusing[^\n]*/)?.[0] ?? 'it packed'}`);

  const { collected, refused } = await collect(windows ? { platforms: true, only: [target], out: join(work, 'npm') } : { local: true, only: [target], out: join(work, 'npm') });
  check(collected.length === 1, `collected ${target}: ${collected.map((c) => `${c.from}${c.note ? ` (${c.note})` : ''}`).join('') || refused.map((r) => r.reason).join('; ') || 'no build found'}`);
  if (collected.length !== 1) throw new Error(`no ${target} build to test`);
  const packed = await packRelease({ collected, dest: join(work, 'tgz') });

  const manifest = JSON.parse(run('tar', ['-xzOf', packed.root, 'package/package.json'], work));
  const installScripts = Object.keys(manifest.scripts ?? {}).filter((s) => ['preinstall', 'install', 'postinstall', 'prepare'].includes(s));
  check(installScripts.length === 0, `root tarball runs nothing on install (scripts: ${Object.keys(manifest.scripts ?? {}).join(', ')})`);
  const optional = manifest.optionalDependencies ?? {};
  check(targets.every((t) => optional[`procward-${t.platformArchABI}`] === pkg.version), `root tarball lists the ${targets.length} platform packages as optionalDependencies at ${pkg.version}`);
  const listing = run('tar', ['-tvzf', packed.platforms[target]], work);
  const supervisorLine = listing.split('\n').find((l) => l.endsWith(`package/${supervisorName(target)}`)) ?? '';
  check(listing.includes(`package/procward.${target}.node`) && supervisorLine.startsWith('-rwx'), `platform package ships the addon and the executable supervisor (${supervisorLine.trim()})`);

  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer-app', version: '1.0.0', private: true }));
  // --os/--cpu make npm resolve procward's optional dependencies for Windows; they do not lift
  // the platform check of a tarball named on the command line, which --force does.
  const platformFlags = windows ? ['--os=win32', '--cpu=x64'] : [];
  run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', ...platformFlags, ...(windows ? ['--force'] : []), packed.root, packed.platforms[target]], app);
  const installed = JSON.parse(run('npm', ['ls', '--all', '--json', ...platformFlags], app));
  const resolved = installed.dependencies?.procward?.dependencies?.[`procward-${target}`];
  check(resolved?.version === pkg.version, `procward's optional dependency procward-${target} resolves to the installed tarball (${JSON.stringify(resolved ?? null)})`);

  writeFileSync(join(app, 'esm.mjs'), `import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n${scenario("import { ProcessRegistry, descendants, identity, probe } from 'procward';")}`);
  writeFileSync(join(app, 'cjs.cjs'), scenario("const { ProcessRegistry, descendants, identity, probe } = require('procward');"));
  let durableWorks = true;
  for (const file of ['esm.mjs', 'cjs.cjs']) {
    const { code, out, err } = runNode([file], app);
    let res = {};
    try {
      res = JSON.parse(out.trim().split('\n').pop());
    } catch {}
    if (code !== 0 || !res.addon) console.log(`${file} exited ${code}; stdout: ${out}\nstderr: ${err}`);
    const where = (res.addon ?? '').replace(/\\/g, '/');
    check(where.endsWith(`/node_modules/procward-${target}/procward.${target}.node`), `${file}: the loader took the platform package's addon (${res.addon})`);
    check(res.alive === true && res.identity === true, `${file}: probe and identity of itself answer`);
    const unsupported = res.unsupported ?? [];
    for (const what of unsupported) console.log(`skip ${file}: ${what}`);
    if (unsupported.length > 0 || res.exit === undefined) durableWorks = false;
    if (res.exit === undefined && unsupported.length > 0) continue;
    check(res.exit === 3 && res.out === 'consumer-ok\n' && res.kids >= 2 && res.killed === 'killed' && res.survivors === 0, `${file}: job ran, waited, tree killed ${JSON.stringify(res)}`);
  }

  // The framework adapters: subpath exports whose framework is an optional peer. Without it,
  // importing the subpath fails naming the package (procward itself loads none); with it,
  // ESM and CommonJS both give the tools, and the AI SDK's tool runs a real job.
  const adapters = { 'ai-sdk': 'ai', langchain: '@langchain/core', 'openai-agents': '@openai/agents' };
  for (const [sub, peer] of Object.entries(adapters)) {
    for (const [file, load] of [
      [`missing-${sub}.mjs`, `import('procward/${sub}')`],
      [`missing-${sub}.cjs`, `Promise.resolve().then(() => require('procward/${sub}'))`],
    ]) {
      writeFileSync(join(app, file), `${load}.then(() => console.log('loaded'), (e) => console.log(String(e.message).split('\\n')[0]));`);
      const { out } = runNode([file], app);
      check(out.includes(`'${peer}`) && !out.includes('loaded'), `${file}: without ${peer} the import fails naming it (${out.trim()})`);
    }
  }
  if (!windows) {
    const peerVersion = (name) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
    run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', ...Object.values(adapters).map((p) => `${p}@${peerVersion(p)}`)], app);
    const body = (load) => `${load}
(async () => {
  const r = await ProcessRegistry.open({});
  const names = [Object.keys(ai.procwardTools(r)), lc.procwardTools(r).map((t) => t.name), oa.procwardTools(r).map((t) => t.name)];
  const res = await ai.procwardTools(r).process_start.execute({ command: 'echo adapter-ok', yield_ms: 30000 }, { toolCallId: 'c1', messages: [] });
  await r.close();
  console.log(JSON.stringify({ names, exit: res.exit_code, out: JSON.stringify(res) }));
})().catch((e) => { console.error(e); process.exit(1); });`;
    writeFileSync(join(app, 'adapters.mjs'), body("import { ProcessRegistry } from 'procward';\nimport * as ai from 'procward/ai-sdk';\nimport * as lc from 'procward/langchain';\nimport * as oa from 'procward/openai-agents';"));
    writeFileSync(join(app, 'adapters.cjs'), body("const { ProcessRegistry } = require('procward');\nconst ai = require('procward/ai-sdk');\nconst lc = require('procward/langchain');\nconst oa = require('procward/openai-agents');"));
    for (const file of ['adapters.mjs', 'adapters.cjs']) {
      const { code, out, err } = runNode([file], app);
      let res = {};
      try {
        res = JSON.parse(out.trim().split('\n').pop());
      } catch {}
      const names = JSON.stringify(res.names);
      check(code === 0 && names === JSON.stringify([['process_start', 'process'], ['process_start', 'process'], ['process_start', 'process']]) && res.exit === 0 && /adapter-ok/.test(res.out ?? ''), `${file}: the three adapters load with their frameworks and the AI SDK tool ran a job (${out.trim() || err.trim()})`);
    }
  }

  // `procward start` makes a durable job.
  if (durableWorks) {
    // The CLI through its bin link (npx) here; under Wine through Node for Windows.
    const cli = (args) => (windows ? runNode([join('node_modules', 'procward', 'dist', 'cli.mjs'), ...args], app, env) : runNode([join(app, 'node_modules', '.bin', 'procward'), ...args], app, env));
    const env = { PROCWARD_STATE_DIR: join(work, 'cli-state') };
    const started = cli(['start', '--', windows ? 'echo from-cli& exit 5' : 'echo from-cli; exit 5']);
    const id = started.out.trim();
    check(/^proc_[0-9a-f]{12}$/.test(id), `installed CLI started a job (${id || started.err})`);
    const waited = cli(['wait', id, '--timeout', '60s']);
    const output = waited.out.replace(/\r\n/g, '\n');
    check(waited.code === 5 && output === 'from-cli\n', `installed CLI waited: exit ${waited.code}, output ${JSON.stringify(output)}`);
  }
} catch (err) {
  check(false, `consumer test threw: ${err.stack}`);
} finally {
  if (existsSync(work)) rmSync(work, { recursive: true, force: true, maxRetries: 3 });
}
console.log(`consumer test: ${checks - failures} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
