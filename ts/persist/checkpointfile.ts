/**
 * The checkpoint's bytes on disk: reading one
 * generation's bytes as untrusted input: anything can sit at
 * `checkpoint.json` or `checkpoint.prev.json`. The file is opened without following a
 * symlink (`O_NOFOLLOW`) and without blocking (`O_NONBLOCK`: a FIFO there would hang
 * `open` forever), must be a regular file (a `/dev/zero`-like device never ends), at most
 * {@link MAX_CHECKPOINT_BYTES}, and have one link, or two when the second is the checkpoint's
 * own previous generation (see `writeGeneration` in `checkpoint.ts`, which keeps it by a hard link).
 */
import { constants, fstatSync, readdirSync, type Stats, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
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
