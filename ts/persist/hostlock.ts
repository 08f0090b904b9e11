/**
 * Which registries are open. An entry belongs to the host that wrote it while that host's
 * registry is open; a host process that lives on after closing its registry (a gateway that
 * reopens it later, a test runner) follows nothing any more, and a job of its that ends with
 * no exit status (its group SIGKILLed) would otherwise look running for ever to every other
 * host (issue 26).
 *
 * So each registry with a state directory holds an exclusive lock (`flock`, `LockFileEx`;
 * the kernel drops it when the holder dies) on `hosts/<pid>-<start time>-<instance>.lock`
 * from `open` to `close`. Another host asks {@link registryOpen}: the file is there and
 * locked (open), there and free (closed: the entry is anyone's), or missing (a writer from
 * a release before these locks, or a name this cannot be: judged by its process alone).
 * Files of processes that are gone are removed by the next `open`.
 */
import { lstatSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fromNative } from '../errors.js';
import { type NativeFileLock, native } from '../native.js';
import { type Identity, verdict } from '../processes.js';
import { assertTrustedDir } from './statedir.js';

/** The directory of the registries' locks, below the state directory. */
const HOSTS = 'hosts';
/** How long `open` waits for its own lock (only a host asking at that instant holds it). */
const LOCK_TIMEOUT_MS = 5_000;
/** An instance id as `writer.ts` draws it: anything else names no lock file. */
const INSTANCE = /^[0-9a-f]{8}$/;
/** A lock file's name: `<pid>-<start time>-<instance>.lock`. */
const NAME = /^(\d{1,10})-(\d{1,20})-([0-9a-f]{8})\.lock$/;
/** Most lock files of gone processes removed by one `open`. */
const MAX_SWEPT = 1000;

type Writer = { pid: number; startTime: string; instance?: string | undefined };

function lockPath(stateDir: string, w: Writer): string | null {
  return w.instance !== undefined && INSTANCE.test(w.instance) ? join(stateDir, HOSTS, `${w.pid}-${w.startTime}-${w.instance}.lock`) : null;
}

/**
 * Takes this registry's lock (creating `hosts/`, 0700, when missing), after removing the
 * lock files of processes that are gone. Resolves to the lock, which `close` releases.
 * Throws `STATE_DIR_UNTRUSTED` for a `hosts` that is not a private directory.
 */
export async function holdHostLock(stateDir: string, me: Writer & { bootId: string }): Promise<NativeFileLock | null> {
  const dir = join(stateDir, HOSTS);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  assertTrustedDir(dir, 'hosts directory');
  sweep(dir, me.bootId);
  const path = lockPath(stateDir, me);
  if (path === null) return null;
  return new Promise((resolve, reject) => {
    try {
      native.lockFile(path, LOCK_TIMEOUT_MS, (err, lock) => (err ? reject(fromNative(err)) : resolve(lock ?? null)));
    } catch (err) {
      reject(fromNative(err));
    }
  });
}

/** Removes the lock files of processes that are gone (free, so no registry holds them). */
function sweep(dir: string, bootId: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  let swept = 0;
  for (const name of names) {
    if (swept >= MAX_SWEPT) break;
    const m = NAME.exec(name);
    if (!m) continue;
    const who: Identity = { pid: Number(m[1]), startTime: m[2] as string, bootId };
    if (who.pid < 1 || who.pid > 2 ** 31 - 1 || verdict(who) !== 'gone') continue;
    rmSync(join(dir, name), { force: true });
    swept++;
  }
}

/**
 * Whether the registry that wrote as `w` is open: `true` while it holds its lock, `false`
 * once it released it (closed, its process living on), `undefined` when there is no lock
 * file to ask (a writer from an earlier release, or one whose file was never made).
 */
export function registryOpen(stateDir: string, w: Writer): boolean | undefined {
  const path = lockPath(stateDir, w);
  if (path === null) return undefined;
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st?.isFile()) return undefined;
  let lock: NativeFileLock | null;
  try {
    lock = native.tryLockFile(path);
  } catch {
    return undefined;
  }
  if (lock === null) return true;
  lock.release();
  return false;
}
