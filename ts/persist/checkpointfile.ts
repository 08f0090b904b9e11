/**
 * The checkpoint's bytes on disk: replacing the file (`replaceFile`), and reading one
 * generation's bytes as untrusted input: anything can sit at
 * `checkpoint.json` or `checkpoint.prev.json`. The file is opened without following a
 * symlink (`O_NOFOLLOW`) and without blocking (`O_NONBLOCK`: a FIFO there would hang
 * `open` forever), must be a regular file (a `/dev/zero`-like device never ends), at most
 * {@link MAX_CHECKPOINT_BYTES}, and have one link, or two when the second is the checkpoint's
 * own previous generation (see `writeGeneration` in `checkpoint.ts`, which keeps it by a hard link).
 */
import { constants, fstatSync, readdirSync, type Stats, statSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ProcwardError } from '../errors.js';

/** Largest checkpoint read: 256 MiB (about a million sessions); a bigger file is set aside as corrupt. */
export const MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024;

const PAIR: Record<string, string> = { 'checkpoint.json': 'checkpoint.prev.json', 'checkpoint.prev.json': 'checkpoint.json' };
/** The temporary name a previous generation has between its link and its rename. */
const PREV_TEMP = /^checkpoint\.prev\.json\.\d+$/;

/** Whether `ino` is also the checkpoint's other generation, or the temporary name one passes through. */
function ownSecondLink(path: string, ino: number): boolean {
  const dir = dirname(path);
  const other = PAIR[basename(path)];
  const same = (p: string) => statSync(p, { throwIfNoEntry: false })?.ino === ino;
  if (other && same(join(dir, other))) return true;
  // Between the link and the rename (the writer holds the lock; we do not): the temp name,
  // then the previous generation once renamed, so look at it again after the listing.
  for (const name of readdirSync(dir)) if (PREV_TEMP.test(name) && same(join(dir, name))) return true;
  return other !== undefined && same(join(dir, other));
}

/**
 * The text of the checkpoint file at `path` and the file's status as it was read; `null`
 * when it does not exist. Throws
 * `CHECKPOINT_CORRUPT` for a symlink, anything but a regular file, a hard link that is not
 * the previous generation, or a file over {@link MAX_CHECKPOINT_BYTES}.
 */
export async function readCheckpointText(path: string): Promise<{ text: string; st: Stats } | null> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw new ProcwardError('CHECKPOINT_CORRUPT', `${path}: is a symlink; refusing to follow it`);
    if (code === 'EISDIR') throw new ProcwardError('CHECKPOINT_CORRUPT', `${path}: is not a regular file`);
    throw err;
  }
  try {
    const st = fstatSync(handle.fd);
    if (!st.isFile()) throw new ProcwardError('CHECKPOINT_CORRUPT', `${path}: is not a regular file`);
    if (st.nlink > 2 || (st.nlink === 2 && !ownSecondLink(path, st.ino))) {
      throw new ProcwardError('CHECKPOINT_CORRUPT', `${path}: has ${st.nlink} hard links, not only its previous generation; not read`);
    }
    if (st.size > MAX_CHECKPOINT_BYTES) {
      throw new ProcwardError('CHECKPOINT_CORRUPT', `${path}: is ${st.size} bytes, more than a checkpoint may hold (${MAX_CHECKPOINT_BYTES} bytes)`);
    }
    // Read what fstat said (a file that grows meanwhile is cut there; JSON.parse then says so).
    const buf = Buffer.alloc(st.size);
    let n = 0;
    while (n < buf.length) {
      const { bytesRead } = await handle.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    return { text: buf.subarray(0, n).toString('utf8'), st };
  } finally {
    await handle.close();
  }
}

let tempSerial = 0;

/**
 * Replaces the file at `path` with `parts` (written in order) atomically and durably: a new
 * temporary file `<path>.<digits>` (0600, `O_EXCL | O_NOFOLLOW`, so nothing there is written
 * through), one `writev` of the parts, `fsync`, then a rename over `path`. The caller
 * fsyncs the directory. A failed write removes the temporary file and leaves `path` as it
 * was. The parts are the checkpoint's cached blocks (see `entryblocks.ts`): written as they
 * are, without the copy into one buffer that `write-file-atomic` would need (4 MB a write
 * at 10 000 sessions).
 */
export async function replaceFile(path: string, parts: Buffer[]): Promise<void> {
  const temp = `${path}.${process.pid}${String(++tempSerial).padStart(6, '0')}`;
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    const rest = parts.filter((p) => p.length > 0);
    while (rest.length > 0) {
      let { bytesWritten } = await handle.writev(rest);
      // A short write: go on from where it stopped.
      while (rest.length > 0 && bytesWritten >= (rest[0] as Buffer).length) bytesWritten -= (rest.shift() as Buffer).length;
      if (bytesWritten > 0) rest[0] = (rest[0] as Buffer).subarray(bytesWritten);
    }
    await handle.sync();
    await handle.close();
    await rename(temp, path);
  } catch (err) {
    await handle.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw err;
  }
}
