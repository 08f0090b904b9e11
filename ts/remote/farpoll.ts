/**
 * One look at a sandbox session's far-side directory (see `sandbox.ts` for its files): the
 * log's identity and size, new bytes from an offset, the end if any, and whether anything of
 * the job still runs there. One round trip per look.
 */
import { constants } from 'node:os';
import type { ExecutionEnvironment } from './environments.js';
import { farDir, OWN, WRAPPER_ALIVE } from './farshell.js';

/** How the job ended, from the exit file: a code, or the name of the signal that ended it. */
export type FarExit = { exitCode: number; signal: null } | { exitCode: null; signal: string };

/** One poll: new log bytes from the offset asked for (at most `max`), the log's identity and size, and the end if any. */
export interface PollChunk {
  size: number;
  /** The log's inode on the far side (null when it could not be read). */
  inode: string | null;
  /** Up to 16 bytes of the log just before the offset asked for, to compare with what was read there. */
  before: Buffer;
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
}

/** Bytes of the log before the offset each poll returns, to notice a log replaced in place. */
export const CHECK_BYTES = 16;

/** Parses the exit file: `<code>` or `signal:<NAME or number>`; null when it says neither. */
export function parseExit(text: string): FarExit | null {
  if (/^\d+$/.test(text)) return { exitCode: Number(text), signal: null };
  const m = /^signal:([A-Z0-9+-]+)$/.exec(text);
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

/** Reads the session's state in one round trip. `late`: also count the job's processes still running after its end. */
export async function pollOnce(env: ExecutionEnvironment, dir: string, offset: number, opts: { max?: number; late?: boolean } = {}): Promise<PollChunk> {
  const max = opts.max ?? 256 * 1024;
  const from = Math.max(0, offset - CHECK_BYTES);
  const script = [
    farDir(dir),
    // The exit file first: once it exists, the size read next covers all the job wrote.
    'E=$(cat "$D/exit" 2>/dev/null || echo -)',
    'P=$(cat "$D/pid" 2>/dev/null || true)',
    WRAPPER_ALIVE,
    'I=$(ls -di "$D/output.log" 2>/dev/null || true); I=${I%% *}',
    'S=$(wc -c < "$D/output.log" 2>/dev/null || echo 0); S=$((S + 0))',
    'L=0',
    ...(opts.late ? [OWN, 'case "$P" in ""|*[!0-9]*) ;; *) [ -d /proc/1 ] && [ -n "$PS" ] && L=$(own "$P" "$PS" | wc -l);; esac'] : []),
    'echo "$S $E ${P:--} $A ${I:--} $((L + 0))"',
    `if [ "$S" -gt ${from} ]; then tail -c +${from + 1} "$D/output.log" | head -c ${max + offset - from}; fi`,
  ].join('\n');
  const res = await env.exec(script, { timeoutMs: 20_000 });
  if (res.code !== 0 || res.timedOut) throw new Error(`poll failed (${res.timedOut ? 'timed out' : `exit ${res.code}`}): ${res.stderr.trim()}`);
  const nl = res.stdout.indexOf(10);
  const [sizeText, exitText, pidText, alive, inode, lingering] = res.stdout.subarray(0, nl).toString().trim().split(/\s+/);
  const exit = exitText !== undefined && exitText !== '-' ? parseExit(exitText) : null;
  const pid = pidText && pidText !== '-' ? Number(pidText) : null;
  const body = res.stdout.subarray(nl + 1);
  const skip = Math.min(offset - from, body.length);
  return {
    size: Number(sizeText) || 0,
    inode: inode && inode !== '-' ? inode : null,
    before: body.subarray(0, skip),
    data: body.subarray(skip),
    exit,
    exited: exitText !== undefined && exitText !== '-',
    pid,
    wrapperAlive: alive === 'alive',
    lingering: Number(lingering) || 0,
  };
}

