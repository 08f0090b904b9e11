// Issue 15, Deliver 7: the loader picks the native build of the running Node (glibc or musl on
// Linux from Node's own report, msvc on Windows, the CPU everywhere), and each build it can
// pick is a configured napi target whose platform package declares the same os, cpu and libc.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseTriple } from '@napi-rs/cli';
import { describe, expect, it } from 'vitest';
import { type HostFacts, hostFacts, loadNative, native, nativeOrigin, nativeTargets, supervisorPath } from '../ts/native.js';
import { ROOT, tempDir } from './support.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; napi: { targets: string[] } };
/** This Node's report header, as the loader reads it. */
const glibcHere = (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime;
/** musl's loader on this machine (Debian's musl-tools installs one beside glibc), if any. */
const muslLoaderHere = existsSync('/lib') ? readdirSync('/lib').find((f) => f.startsWith('ld-musl-')) : undefined;

describe('the loader chooses the native build of the running Node', () => {
  it('on this machine it chose and loaded the build its own facts name, and the supervisor beside it', () => {
    const facts = hostFacts();
    const [first] = nativeTargets(facts);
    expect(nativeOrigin.target).toBe(first);
    expect(nativeOrigin.path).toBe(join(ROOT, `procward.${first}.node`));
    expect(native.identity(process.pid)?.pid).toBe(process.pid);
    expect(supervisorPath()).toBe(join(ROOT, process.platform === 'win32' ? 'procward-supervise.exe' : 'procward-supervise'));
    if (process.platform === 'linux' && glibcHere) expect(first).toBe(`linux-${process.arch}-gnu`);
    // The report is read only where musl's loader makes musl possible, and then it is this Node's.
    expect(facts.muslLoader).toBe(process.platform === 'linux' ? muslLoaderHere !== undefined : undefined);
    expect(facts.glibcVersionRuntime).toBe(muslLoaderHere ? glibcHere : undefined);
  });

  it.runIf(process.platform === 'linux')("glibc: this Node's report of a glibc runtime picks -gnu, even with musl's loader installed", () => {
    expect(glibcHere).toMatch(/^\d+\.\d+/);
    for (const arch of ['x64', 'arm64']) {
      expect(nativeTargets({ platform: 'linux', arch, glibcVersionRuntime: glibcHere, muslLoader: true })).toEqual([`linux-${arch}-gnu`]);
      expect(nativeTargets({ platform: 'linux', arch, glibcVersionRuntime: glibcHere, muslLoader: false })).toEqual([`linux-${arch}-gnu`]);
    }
  });

  it("musl: no glibc in Node's report and musl's loader present pick -musl; with neither, -gnu", () => {
    // A musl Node's report has no glibcVersionRuntime (Node writes it under #ifdef __GLIBC__).
    expect(nativeTargets({ platform: 'linux', arch: 'x64', muslLoader: true })).toEqual(['linux-x64-musl']);
    expect(nativeTargets({ platform: 'linux', arch: 'arm64', muslLoader: true })).toEqual(['linux-arm64-musl']);
    expect(nativeTargets({ platform: 'linux', arch: 'x64', muslLoader: false })).toEqual(['linux-x64-gnu']);
  });

  it('win32 picks msvc (then a local mingw build on x64), darwin its CPU; libc facts play no part', () => {
    const libc = { glibcVersionRuntime: undefined, muslLoader: true };
    expect(nativeTargets({ platform: 'win32', arch: 'x64', ...libc })).toEqual(['win32-x64-msvc', 'win32-x64-gnu']);
    expect(nativeTargets({ platform: 'win32', arch: 'arm64' })).toEqual(['win32-arm64-msvc']);
    expect(nativeTargets({ platform: 'darwin', arch: 'x64', ...libc })).toEqual(['darwin-x64']);
    expect(nativeTargets({ platform: 'darwin', arch: 'arm64' })).toEqual(['darwin-arm64']);
  });

  it('a platform procward does not build for gets no target and a load error naming it', () => {
    for (const host of [
      { platform: 'freebsd', arch: 'x64' },
      { platform: 'linux', arch: 'ia32' },
      { platform: 'linux', arch: 'arm' },
      { platform: 'win32', arch: 'ia32' },
    ]) {
      expect(nativeTargets(host)).toEqual([]);
      expect(() => loadNative(host, createRequire(join(ROOT, 'dist', 'index.js')), pkg.version)).toThrow(`no native binding for ${host.platform}-${host.arch}`);
    }
  });

  it('every build it can pick (but the local mingw one) is a napi target whose npm/ package declares the same os, cpu and libc', () => {
    const configured = new Set(pkg.napi.targets.map((t) => parseTriple(t).platformArchABI));
    const chosen = new Set<string>();
    for (const platform of ['linux', 'darwin', 'win32'])
      for (const arch of ['x64', 'arm64'])
        for (const libc of [{ glibcVersionRuntime: glibcHere }, { muslLoader: true }]) {
          for (const target of nativeTargets({ platform, arch, ...libc })) chosen.add(target);
        }
    chosen.delete('win32-x64-gnu');
    expect([...chosen].sort()).toEqual([...configured].sort());
    for (const target of chosen) {
      const triple = parseTriple(pkg.napi.targets.find((t) => parseTriple(t).platformArchABI === target) as string);
      const plat = JSON.parse(readFileSync(join(ROOT, 'npm', target, 'package.json'), 'utf8'));
      expect(plat.name).toBe(`procward-${target}`);
      expect(plat.version).toBe(pkg.version);
      expect(plat.os).toEqual([triple.platform]);
      expect(plat.cpu).toEqual([triple.arch]);
      expect(plat.libc).toEqual(triple.platform === 'linux' ? [triple.abi === 'musl' ? 'musl' : 'glibc'] : undefined);
      expect(plat.main).toBe(`procward.${target}.node`);
      expect(plat.files).toEqual([`procward.${target}.node`, triple.platform === 'win32' ? 'procward-supervise.exe' : 'procward-supervise']);
    }
  });
});

describe('the loader finds the build where npm puts it', () => {
  const host: HostFacts = { platform: 'linux', arch: 'x64', glibcVersionRuntime: glibcHere };
  const here = `procward.linux-x64-gnu.node`;

  /** A consumer project: procward's dist/ and, when given, its platform package at `version`. */
  function project(version?: string): NodeJS.Require {
    const dir = tempDir();
    mkdirSync(join(dir, 'procward', 'dist'), { recursive: true });
    if (version) {
      const platDir = join(dir, 'node_modules', 'procward-linux-x64-gnu');
      mkdirSync(platDir, { recursive: true });
      writeFileSync(join(platDir, 'package.json'), JSON.stringify({ name: 'procward-linux-x64-gnu', version, main: here }));
      copyFileSync(join(ROOT, here), join(platDir, here));
    }
    return createRequire(join(dir, 'procward', 'dist', 'index.js'));
  }

  it.runIf(process.platform === 'linux' && process.arch === 'x64' && glibcHere)('loads the addon from the platform package, which answers', () => {
    const { binding, origin } = loadNative(host, project(pkg.version), pkg.version);
    expect(origin.target).toBe('linux-x64-gnu');
    expect(origin.path).toMatch(/node_modules[/\\]procward-linux-x64-gnu[/\\]procward\.linux-x64-gnu\.node$/);
    expect(binding.probe([process.pid])[0]?.alive).toBe(true);
  });

  it('refuses a platform package of another version, and says so with every place tried', () => {
    expect(() => loadNative(host, project('0.0.1'), pkg.version)).toThrow(
      `no native binding for linux-x64-gnu. Tried ../procward.linux-x64-gnu.node (not found); procward-linux-x64-gnu (version 0.0.1, procward is ${pkg.version}: reinstall procward)`,
    );
  });

  it('without any build names the platform package to install', () => {
    expect(() => loadNative({ platform: 'linux', arch: 'arm64', muslLoader: true }, project(), pkg.version)).toThrow(
      'Install the platform package procward-linux-arm64-musl',
    );
  });
});
