/**
 * The native binding and the path of the durable-job supervisor built beside it.
 *
 * The addon is `procward.<target>.node`, where the target is napi's platform name
 * (`linux-x64-gnu`, `linux-x64-musl`, `win32-x64-msvc`, `darwin-arm64`, ...). It is looked for
 * beside the package root first (a build from source, `npm run build`), then in the platform
 * package `procward-<target>`, an optional dependency of procward of which npm installs only
 * the one whose `os`, `cpu` and `libc` match. {@link nativeTargets} makes the choice from facts
 * of the running Node; on Linux glibc or musl is decided by Node's own report.
 */
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Binding from '../index.js';

const require = createRequire(import.meta.url);

/** What the choice of native build depends on, read from the running Node by {@link hostFacts}. */
export interface HostFacts {
  /** `process.platform`: `linux`, `darwin`, `win32`, ... */
  platform: string;
  /** `process.arch`: `x64`, `arm64`, ... */
  arch: string;
  /**
   * `process.report.getReport().header.glibcVersionRuntime`: the glibc this Node runs against
   * (`'2.36'`). Node writes it only when built against glibc (`gnu_get_libc_version()` under
   * `#ifdef __GLIBC__`), so it is absent on a musl Node. Read only where it decides something.
   */
  glibcVersionRuntime?: string;
  /** Whether musl's dynamic loader `/lib/ld-musl-<arch>.so.1` exists (Alpine; or a glibc distro with musl installed). */
  muslLoader?: boolean;
}

/**
 * The napi targets whose addon can load in a Node described by `host`, best first; `[]` when
 * procward has none (FreeBSD, 32-bit, ...). Pure: the same facts give the same answer.
 *
 * - Linux: `-gnu` when Node reports a glibc runtime; otherwise `-musl` when musl's loader
 *   exists; otherwise `-gnu` (nothing says musl).
 * - Windows x64: `win32-x64-msvc` (the published build), then `win32-x64-gnu`, a local build
 *   from the mingw toolchain such as the Wine test runs use.
 * - macOS: `darwin-x64` or `darwin-arm64`.
 */
export function nativeTargets(host: HostFacts): string[] {
  const arch = host.arch;
  if (arch !== 'x64' && arch !== 'arm64') return [];
  switch (host.platform) {
    case 'linux': {
      const musl = host.glibcVersionRuntime === undefined && host.muslLoader === true;
      return [`linux-${arch}-${musl ? 'musl' : 'gnu'}`];
    }
    case 'win32':
      return arch === 'x64' ? ['win32-x64-msvc', 'win32-x64-gnu'] : ['win32-arm64-msvc'];
    case 'darwin':
      return [`darwin-${arch}`];
    default:
      return [];
  }
}

/** Whether `/lib` holds musl's loader (`ld-musl-*`). */
function hasMuslLoader(): boolean {
  try {
    return readdirSync('/lib').some((name) => name.startsWith('ld-musl-'));
  } catch {
    return false;
  }
}

/** The glibc runtime version from Node's diagnostic report, without its network section. */
function glibcOfThisNode(): string | undefined {
  // excludeNetwork (Node 20.13+) skips the report's socket listing, its slow part.
  const report = process.report as (NodeJS.ProcessReport & { excludeNetwork?: boolean }) | undefined;
  if (typeof report?.getReport !== 'function') return undefined;
  const excluded = report.excludeNetwork;
  report.excludeNetwork = true;
  try {
    const header = (report.getReport() as { header?: { glibcVersionRuntime?: unknown } }).header;
    return typeof header?.glibcVersionRuntime === 'string' ? header.glibcVersionRuntime : undefined;
  } finally {
    report.excludeNetwork = excluded;
  }
}

/**
 * The facts of this process. The report (a few ms) is read only on Linux where musl's loader
 * exists, the one case where glibc and musl are both possible.
 */
export function hostFacts(): HostFacts {
  const facts: HostFacts = { platform: process.platform, arch: process.arch };
  if (process.platform !== 'linux') return facts;
  facts.muslLoader = hasMuslLoader();
  if (facts.muslLoader) facts.glibcVersionRuntime = glibcOfThisNode();
  return facts;
}

/** Where the binding came from: its napi target and the file loaded. */
export interface NativeOrigin {
  target: string;
  path: string;
}

/**
 * Loads the addon for `host` with `req` (a `require` rooted in this module's folder): for each
 * of {@link nativeTargets}, `../procward.<target>.node`, then the package `procward-<target>`,
 * whose version must equal `version`. `NAPI_RS_NATIVE_LIBRARY_PATH` names a file to load
 * instead. Throws an `Error` naming the platform and every place tried when none loads.
 */
export function loadNative(host: HostFacts, req: NodeJS.Require, version: string): { binding: typeof Binding; origin: NativeOrigin } {
  const override = process.env.NAPI_RS_NATIVE_LIBRARY_PATH;
  if (override) return { binding: req(override), origin: { target: 'override', path: req.resolve(override) } };
  const targets = nativeTargets(host);
  const tried: string[] = [];
  for (const target of targets) {
    for (const spec of [`../procward.${target}.node`, `procward-${target}`]) {
      let path: string;
      try {
        path = req.resolve(spec);
      } catch {
        tried.push(`${spec} (not found)`);
        continue;
      }
      try {
        if (!spec.endsWith('.node')) {
          const found = (req(`${spec}/package.json`) as { version: string }).version;
          if (found !== version) throw new Error(`version ${found}, procward is ${version}: reinstall procward`);
        }
        return { binding: req(path), origin: { target, path } };
      } catch (err) {
        tried.push(`${spec} (${(err as Error).message})`);
      }
    }
  }
  if (targets.length === 0) {
    throw new Error(`procward: no native binding for ${host.platform}-${host.arch}: procward builds for Linux, macOS and Windows on x64 and arm64 only.`);
  }
  throw new Error(
    `procward: no native binding for ${targets[0]}. Tried ${tried.join('; ')}. Install the platform package procward-${targets[0]} (an optional dependency of procward: check that optional dependencies were not omitted) or build from source with \`npm run build:native\` (Rust 1.88+).`,
  );
}

const loaded = loadNative(hostFacts(), require, (require('../package.json') as { version: string }).version);

/** The raw binding. Prefer the typed wrappers in `processes.ts` and the registry. */
export const native: typeof Binding = loaded.binding;

/** Which napi target's addon was loaded, and from which file. */
export const nativeOrigin: NativeOrigin = loaded.origin;

export type {
  Identity,
  Verdict,
  ProbeResult,
  ProcessEntry,
  KillReport as NativeKillReport,
  JobEvent,
  NativeJob,
  PtySize,
  WatchMatcher,
  WriteOutcome,
  FileLock as NativeFileLock,
} from '../index.js';

/**
 * Path of `procward-supervise`, the parent process of durable jobs. `PROCWARD_SUPERVISOR`
 * overrides it. Looked for beside the loaded addon (the package root of a build from source,
 * or the platform package), then beside the package root. Throws `ENOENT` with the paths
 * tried when it is missing.
 */
let supervisorFound: string | undefined;

export function supervisorPath(): string {
  const override = process.env.PROCWARD_SUPERVISOR;
  if (override) return override;
  if (supervisorFound && existsSync(supervisorFound)) return supervisorFound;
  const exe = process.platform === 'win32' ? 'procward-supervise.exe' : 'procward-supervise';
  const candidates = [...new Set([join(dirname(nativeOrigin.path), exe), join(dirname(require.resolve('../package.json')), exe)])];
  const found = candidates.find((c) => existsSync(c));
  supervisorFound = found;
  if (!found) {
    const err = new Error(`ENOENT: durable jobs need ${exe}; looked in ${candidates.join(', ')} (run \`npm run build:native\`)`);
    throw Object.assign(err, { code: 'ENOENT' });
  }
  return found;
}
