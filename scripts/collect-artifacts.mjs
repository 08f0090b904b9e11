// Puts each platform's binaries (the napi addon `procward.<target>.node` and the durable-job
// supervisor `procward-supervise[.exe]`) into its package folder under npm/, and optionally
// packs the platform packages and the root package as they are published.
//
//   node scripts/collect-artifacts.mjs [--artifacts <dir>] [--local] [--platforms]
//                                      [--only <t,t>] [--require <t,t>] [--out <dir>] [--pack <dir>]
//
// Sources, searched in this order (the first that has a target wins):
//   --artifacts <dir>  a CI artifacts folder (the build matrix's `bindings-<triple>/` uploads):
//                      every `procward.<target>.node` in it, with the supervisor of its folder.
//   --local            this machine's build in the repository root (`npm run build`).
//   --platforms        the cross builds of scripts/platforms/ in target-platforms/<triple>/
//                      (release or debug, the newer). The x86_64-pc-windows-gnu build stands in
//                      for win32-x64-msvc: for the Wine tests only, so it is written with --out
//                      only, never into npm/ where a release would publish it.
// Without a source flag: --local --platforms.
//
// `napi artifacts` does not fit: it moves the .node files only (not the supervisor) and fails
// unless every configured target is present. Each pair is checked before it is copied: the
// file format and CPU must be the target's (ELF/PE/Mach-O header), and on Linux the libc the
// binary links (readelf's NEEDED: libc.so.6 is glibc's, a musl build must not need it).
//
// --out <dir>     write the package folders there (a copy of npm/<target>/ each) instead of
//                 into npm/, so test runs leave the tree alone. Default: npm/.
// --pack <dir>    then `npm pack` every collected platform package and the root package into
//                 <dir>. The root tarball gets the manifest `napi prepublish` publishes: each
//                 configured target's package as an optionalDependency at the exact version.
// --only <t,t>    collect these targets (napi names, comma-separated) and no other.
// --require <t,t> fail unless these targets were collected.
import { execFileSync } from 'node:child_process';
import { chmodSync, closeSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseTriple, readNapiConfig } from '@napi-rs/cli';

const root = resolve(import.meta.dirname, '..');
const shell = process.platform === 'win32';

/** The supervisor's file name for a napi target (`win32-x64-msvc` -> `procward-supervise.exe`). */
export const supervisorName = (target) => (target.startsWith('win32-') ? 'procward-supervise.exe' : 'procward-supervise');

/** Cargo's name for the addon library of a Rust triple (the cdylib of crate procward-node). */
const cdylibName = (triple) => (triple.includes('windows') ? 'procward_node.dll' : triple.includes('apple') ? 'libprocward_node.dylib' : 'libprocward_node.so');

/** The napi target a local cross build of this triple is packaged as, and why if it differs. */
const standIns = { 'x86_64-pc-windows-gnu': { target: 'win32-x64-msvc', note: 'gnu build standing in for msvc: Wine tests only' } };

function readHead(path, bytes) {
  const buf = Buffer.alloc(bytes);
  const fd = openSync(path, 'r');
  try {
    return buf.subarray(0, readSync(fd, buf, 0, bytes, 0));
  } finally {
    closeSync(fd);
  }
}

/**
 * Platform and CPU of a binary read from its header: ELF (e_machine), PE (the COFF machine
 * field after the `PE\0\0` signature) or Mach-O (cputype; a fat binary is `universal`).
 * Returns `{ platform, arch }` with Node's names, or `undefined` for anything else.
 */
export function binaryKind(path) {
  const h = readHead(path, 4096);
  if (h.length >= 20 && h.readUInt32BE(0) === 0x7f454c46) {
    const arch = new Map([[62, 'x64'], [183, 'arm64']]).get(h.readUInt16LE(18)) ?? `e_machine ${h.readUInt16LE(18)}`;
    return { platform: 'linux', arch };
  }
  if (h.length >= 64 && h.toString('latin1', 0, 2) === 'MZ') {
    const pe = h.readUInt32LE(0x3c);
    if (pe + 6 <= h.length && h.readUInt32BE(pe) === 0x50450000) {
      const machine = h.readUInt16LE(pe + 4);
      const arch = new Map([[0x8664, 'x64'], [0xaa64, 'arm64']]).get(machine) ?? `machine 0x${machine.toString(16)}`;
      return { platform: 'win32', arch };
    }
  }
  if (h.length >= 8 && h.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = h.readUInt32LE(4);
    const arch = new Map([[0x01000007, 'x64'], [0x0100000c, 'arm64']]).get(cpu) ?? `cputype 0x${cpu.toString(16)}`;
    return { platform: 'darwin', arch };
  }
  if (h.length >= 4 && h.readUInt32BE(0) === 0xcafebabe) return { platform: 'darwin', arch: 'universal' };
  return undefined;
}

/** The shared libraries an ELF file needs (readelf -d), or `undefined` without readelf. */
function neededLibraries(path) {
  try {
    const out = execFileSync('readelf', ['-d', path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return [...out.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
  } catch {
    return undefined;
  }
}

/** Why `path` cannot be the `role` of napi `target` (a parsed triple), or `undefined` if it can. */
export function refusal(path, role, target) {
  const kind = binaryKind(path);
  if (!kind) return `${role} ${path} is not an ELF, PE or Mach-O file`;
  const archOk = kind.arch === target.arch || (kind.platform === 'darwin' && kind.arch === 'universal');
  if (kind.platform !== target.platform || !archOk) return `${role} ${path} is a ${kind.platform}-${kind.arch} binary, not ${target.platformArchABI}`;
  if (target.platform !== 'linux') return undefined;
  const needed = neededLibraries(path);
  if (!needed) return undefined;
  const glibc = needed.some((lib) => lib === 'libc.so.6' || lib.startsWith('ld-linux'));
  const musl = needed.some((lib) => lib.startsWith('libc.musl') || lib.startsWith('ld-musl'));
  if (target.abi === 'musl' && glibc) return `${role} ${path} links glibc (${needed.join(', ')}): not a musl build`;
  if (target.abi === 'gnu' && musl) return `${role} ${path} links musl (${needed.join(', ')}): not a glibc build`;
  return undefined;
}

/** Finds `{ target, addon, supervisor, from, note }` pairs in a CI artifacts folder. */
function fromArtifacts(dir) {
  const found = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      const m = /^procward\.([a-z0-9-]+)\.node$/.exec(e.name);
      if (m && e.isFile()) found.push({ target: m[1], addon: p, supervisor: join(d, supervisorName(m[1])), from: `artifacts ${d}` });
    }
  };
  walk(dir);
  return found;
}

/** This machine's build in the repository root: each `procward.<target>.node` there. */
function fromLocal() {
  return readdirSync(root)
    .map((f) => /^procward\.([a-z0-9-]+)\.node$/.exec(f))
    .filter(Boolean)
    .map((m) => ({ target: m[1], addon: join(root, m[0]), supervisor: join(root, supervisorName(m[1])), from: 'local build' }));
}

/**
 * The cross builds under target-platforms/: `<triple>/{release,debug}/`, and the same below a
 * nested target dir (`musl-dylib/<triple>/...`, where musl.sh builds the musl cdylib). Every
 * build found, newest addon first, so a newer good build wins and an old broken one is tried
 * only after it. The supervisor is the one beside the addon, else the target dir's own.
 */
function fromPlatforms(dir = process.env.PROCWARD_PLATFORMS_TARGET_DIR ?? join(root, 'target-platforms')) {
  if (!existsSync(dir)) return [];
  const nested = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  const found = [];
  for (const triple of nested) {
    let parsed;
    try {
      parsed = parseTriple(triple);
    } catch {
      continue;
    }
    const standIn = standIns[triple];
    const target = standIn?.target ?? parsed.platformArchABI;
    for (const base of [dir, ...nested.map((n) => join(dir, n))]) {
      for (const profile of ['release', 'debug']) {
        const out = join(base, triple, profile);
        const addon = join(out, cdylibName(triple));
        if (!existsSync(addon)) continue;
        const own = join(out, supervisorName(target));
        const supervisor = existsSync(own) ? own : join(dir, triple, profile, supervisorName(target));
        const from = `target-platforms ${join(base, triple, profile).slice(dir.length + 1)}`;
        found.push({ target, addon, supervisor, from, note: standIn?.note, mtime: statSync(addon).mtimeMs });
      }
    }
  }
  return found.sort((a, b) => b.mtime - a.mtime);
}

/**
 * Copies each target's addon and supervisor into `<out>/<target>/`, after checking both.
 * `only` (napi names) limits the targets. Returns `{ collected: [{ target, dir, from, note }],
 * refused: [{ target, reason }] }`.
 * A target with a missing or wrong binary is refused, never copied half.
 */
export async function collect({ artifacts, local = false, platforms = false, only, out = join(root, 'npm') } = {}) {
  const { targets } = await readNapiConfig(join(root, 'package.json'));
  const configured = new Map(targets.map((t) => [t.platformArchABI, t]));
  const candidates = [...(artifacts ? fromArtifacts(resolve(artifacts)) : []), ...(local ? fromLocal() : []), ...(platforms ? fromPlatforms() : [])];
  const collected = [];
  const refused = [];
  const done = new Set();
  for (const c of candidates) {
    if (done.has(c.target) || (only && !only.includes(c.target))) continue;
    const target = configured.get(c.target);
    if (!target) {
      refused.push({ target: c.target, reason: `not a target of package.json napi.targets (${c.from})` });
      continue;
    }
    const intoNpm = resolve(out) === join(root, 'npm');
    let reason;
    if (c.note && intoNpm) reason = `${c.note}: written only with --out, never into npm/`;
    else if (!existsSync(c.supervisor)) reason = `no ${basename(c.supervisor)} beside ${c.addon}`;
    else reason = refusal(c.addon, 'addon', target) ?? refusal(c.supervisor, 'supervisor', target);
    if (reason) {
      refused.push({ target: c.target, reason: `${reason} (${c.from})` });
      continue;
    }
    const dir = join(out, c.target);
    if (!intoNpm) {
      rmSync(dir, { recursive: true, force: true });
      cpSync(join(root, 'npm', c.target), dir, { recursive: true });
    }
    copyFileSync(c.addon, join(dir, `procward.${c.target}.node`));
    copyFileSync(c.supervisor, join(dir, supervisorName(c.target)));
    if (!c.target.startsWith('win32-')) chmodSync(join(dir, supervisorName(c.target)), 0o755);
    done.add(c.target);
    collected.push({ target: c.target, dir, from: c.from, note: c.note });
  }
  // A target refused in one build and collected from another was not refused.
  return { collected, refused: refused.filter((r) => !done.has(r.target)) };
}

/**
 * The root manifest as `napi prepublish` publishes it: every configured target's platform
 * package in `optionalDependencies` at exactly this version. The repository's package.json
 * cannot list them before they are on the registry: `npm ci` refuses a lock file without them.
 */
export function releaseManifest(pkg, targets) {
  const optional = Object.fromEntries(targets.map((t) => [`${pkg.name}-${t.platformArchABI}`, pkg.version]));
  return { ...pkg, optionalDependencies: { ...pkg.optionalDependencies, ...optional } };
}

const npmPack = (dir, dest, extra = []) => {
  const [info] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dest, ...extra], { cwd: dir, encoding: 'utf8', shell, stdio: ['ignore', 'pipe', 'inherit'] }));
  return join(dest, info.filename);
};

/**
 * Packs the root package with its release manifest and each collected platform folder into
 * `dest`. Returns `{ root, platforms: { [target]: tarball } }`. A platform package's own
 * `prepack` refuses to pack a folder whose binaries are missing.
 */
export async function packRelease({ collected, dest }) {
  mkdirSync(dest, { recursive: true });
  const { targets } = await readNapiConfig(join(root, 'package.json'));
  const stage = mkdtempSync(join(tmpdir(), 'procward-release-'));
  try {
    // Pack the repository as npm would, then repack it with the release manifest.
    const plain = npmPack(root, stage, ['--ignore-scripts']);
    execFileSync('tar', ['-xzf', basename(plain), '-C', '.'], { cwd: stage });
    const manifestPath = join(stage, 'package', 'package.json');
    const pkg = JSON.parse(readFileSync(manifestPath, 'utf8'));
    writeFileSync(manifestPath, `${JSON.stringify(releaseManifest(pkg, targets), null, 2)}\n`);
    const rootTgz = npmPack(join(stage, 'package'), resolve(dest), ['--ignore-scripts']);
    const platforms = {};
    for (const c of collected) platforms[c.target] = npmPack(c.dir, resolve(dest));
    return { root: rootTgz, platforms };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

function parseArgs(argv) {
  const opts = { local: false, platforms: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--local') opts.local = true;
    else if (a === '--platforms') opts.platforms = true;
    else if (['--artifacts', '--out', '--pack'].includes(a) && argv[i + 1]) opts[a.slice(2)] = argv[++i];
    else if (['--only', '--require'].includes(a) && argv[i + 1]) opts[a.slice(2)] = argv[++i].split(',').filter(Boolean);
    else throw new Error(`unknown argument ${a} (see the header of scripts/collect-artifacts.mjs)`);
  }
  if (!opts.artifacts && !opts.local && !opts.platforms) Object.assign(opts, { local: true, platforms: true });
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const { collected, refused } = await collect({ ...opts, out: opts.out ? resolve(opts.out) : undefined });
  for (const c of collected) console.log(`collected ${c.target.padEnd(16)} from ${c.from}${c.note ? ` (${c.note})` : ''}`);
  for (const r of refused) console.log(`refused   ${r.target.padEnd(16)} ${r.reason}`);
  const missing = (opts.require ?? []).filter((t) => !collected.some((c) => c.target === t));
  if (missing.length > 0) {
    console.error(`collect-artifacts: required targets missing: ${missing.join(', ')}`);
    process.exit(1);
  }
  if (opts.pack) {
    const packed = await packRelease({ collected, dest: resolve(opts.pack) });
    for (const tgz of [packed.root, ...Object.values(packed.platforms)]) console.log(`packed    ${tgz}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((err) => {
    console.error(`collect-artifacts: ${err.message}`);
    process.exit(1);
  });
}
