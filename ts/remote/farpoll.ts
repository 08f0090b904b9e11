/**
 * One look at a sandbox session's far-side directory (see `sandbox.ts` for its files): the
 * log's identity and size, new bytes from an offset, the end if any, and whether anything of
 * the job still runs there. One round trip per look.
 */
import { constants } from 'node:os';
import type { ExecutionEnvironment } from './environments.js';
import { farDir, KILL_STATE, OWN, WRAPPER_ALIVE } from './farshell.js';

/** How the job ended, from the exit file: a code, or the name of the signal that ended it. */
export type FarExit = { exitCode: number; signal: null } | { exitCode: null; signal: string };

/** One poll: new log bytes from the offset asked for (at most `max`), the log's identity and size, and the end if any. */
export interface PollChunk {
  size: number;
  /** The log's inode on the far side (null when it could not be read). */
  inode: string | null;
  /** Up to 16 bytes of the log just before the offset asked for, to compare with what was read there. */
  before: Buffer;
  /** Where `data` starts in the log: the offset asked for, or later when `keep` left out the bytes between. */
  start: number;
  data: Buffer;
  /** The job's end, once the exit file exists. */
  exit: FarExit | null;
  exited: boolean;
  /** The wrapper's PID from the pid file (null before the launch wrote it). */
  pid: number | null;
  /** Whether the wrapper (by PID and start time, or its command line naming the session directory) still runs. */
  wrapperAlive: boolean;
  /** After the end: how many of the job's processes still run there (they may still write to the log). */
  lingering: number;
  /** A kill's claim (see `KILL_CLAIM` in `farshell.ts`): `pending` before its deadline, `expired` after it, null without one. */
  kill: 'pending' | 'expired' | null;
  /** The signal that ended the job, as the kill that ended it wrote it (`killed`); null without one. */
  killedBy: string | null;
}

/** Bytes of the log before the offset each poll returns, to notice a log replaced in place. */
export const CHECK_BYTES = 16;

/**
 * Parses the exit file: `<code>` (0 to 255, what a shell status can be) or `signal:<NAME or
 * number>` (16 characters at most); null when it says neither. The job can write the file:
 * a code no status can be (say 30 digits, which no checkpoint entry validates) is not one.
 */
export function parseExit(text: string): FarExit | null {
  if (/^\d{1,3}$/.test(text) && Number(text) <= 255) return { exitCode: Number(text), signal: null };
  const m = /^signal:([A-Z0-9+-]{1,16})$/.exec(text);
  if (!m) return null;
  const raw = m[1] as string;
  if (/^\d+$/.test(raw)) {
    const name = Object.entries(osSignals()).find(([, n]) => n === Number(raw))?.[0];
    return { exitCode: null, signal: name ?? `SIG${raw}` };
  }
  return { exitCode: null, signal: raw.startsWith('SIG') ? raw : `SIG${raw}` };
}

function osSignals(): Record<string, number> {
  return constants.signals as Record<string, number>;
}

/** Options of {@link pollOnce}. */
export interface PollOptions {
  /** Bytes of the log to read at most (default 256 KiB). */
  max?: number;
  /** Also count the job's processes still running after its end. */
  late?: boolean;
  /** Read only the last `keep` new bytes: the ones before them are left out (`start` says where the read began). */
  keep?: number;
}

/**
 * Reads the session's state in one round trip. Every file of the session directory is read
 * as the job may have left it (see `SAFE_READ`): only regular files, sizes from the
 * directory entry, every read capped. Throws when the far side could not be reached.
 */
export async function pollOnce(env: ExecutionEnvironment, dir: string, offset: number, opts: PollOptions = {}): Promise<PollChunk> {
  const max = opts.keep ?? opts.max ?? 256 * 1024;
  const from = Math.max(0, offset - CHECK_BYTES);
  const script = [
    farDir(dir),
    WRAPPER_ALIVE,
    // The exit file first: once it exists, the size read next covers all the job wrote.
    'E=-; if [ -e "$D/exit" ] || [ -L "$D/exit" ]; then E=$(rd "$D/exit" 64); case "$E" in ""|*[!A-Za-z0-9:+-]*) E=?;; esac; fi',
    KILL_STATE,
    'I=$(ls -di "$D/output.log" 2>/dev/null || true); I=${I%% *}; num "$I" || I=-',
    'S=$(sz "$D/output.log")',
    'L=0',
    ...(opts.late ? [OWN, '[ -n "$P" ] && [ -d /proc/1 ] && [ -n "$PS" ] && L=$(own "$P" "$PS" | wc -l)'] : []),
    // The bytes before the offset (to see the log was not replaced), then the new ones.
    `B=0; if [ "$S" -ge ${offset} ]; then B=${offset - from}; elif [ "$S" -gt ${from} ]; then B=$((S - ${from})); fi`,
    `DS=${offset}; ${opts.keep !== undefined ? `[ $((S - DS)) -gt ${opts.keep} ] && DS=$((S - ${opts.keep}))` : ':'}`,
    'echo "$S $E ${P:--} $A $I $((L + 0)) $K $KS $DS $B"',
    `if [ "$B" -gt 0 ]; then tail -c +${from + 1} "$D/output.log" | head -c "$B"; fi`,
    `if [ "$S" -gt "$DS" ] && reg "$D/output.log"; then tail -c +$((DS + 1)) "$D/output.log" | head -c ${max}; fi`,
  ].join('\n');
  const res = await env.exec(script, { timeoutMs: 20_000 });
  if (res.code !== 0 || res.timedOut) throw new Error(`poll failed (${res.timedOut ? 'timed out' : `exit ${res.code}`}): ${res.stderr.trim()}`);
  const nl = res.stdout.indexOf(10);
  const [sizeText, exitText, pidText, alive, inode, lingering, kill, killedBy, startText, beforeText] = res.stdout.subarray(0, nl).toString().trim().split(/\s+/);
  const exited = exitText !== undefined && exitText !== '-';
  const pid = pidText && pidText !== '-' ? Number(pidText) : null;
  const body = res.stdout.subarray(nl + 1);
  const skip = Math.min(Number(beforeText) || 0, body.length);
  return {
    size: Number(sizeText) || 0,
    inode: inode && inode !== '-' ? inode : null,
    before: body.subarray(0, skip),
    start: Math.max(offset, Number(startText) || 0),
    data: body.subarray(skip),
    exit: exited ? parseExit(exitText) : null,
    exited,
    pid,
    wrapperAlive: alive === 'alive',
    lingering: Number(lingering) || 0,
    kill: kill === 'pending' || kill === 'expired' ? kill : null,
    killedBy: killedBy !== undefined && /^SIG[A-Z0-9]{1,12}$/.test(killedBy) ? killedBy : null,
  };
}
