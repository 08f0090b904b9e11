/**
 * What `tree` and `top` show of a process beyond its identity, read from Linux's `/proc`:
 * its command line, CPU time and resident memory. Elsewhere (and for a process that is
 * gone or unreadable) each is null and shown as `?`. Everything read here is the process's
 * own choice (its name, its arguments): make it printable before it reaches a terminal.
 */
import { readFileSync } from 'node:fs';
import { redactCommand } from '../../policy/redact.js';
import { shq } from '../../remote/farshell.js';

/** Clock ticks per second of `/proc/<pid>/stat`'s times (`sysconf(_SC_CLK_TCK)`, 100 on every Linux build Node runs on). */
export const CLOCK_TICKS_PER_SECOND = 100;

function read(path: string): string | null {
  if (process.platform !== 'linux') return null;
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/**
 * The command line (`/proc/<pid>/cmdline`), redacted as a stored command is (`redactCommand`):
 * arguments joined by spaces, each holding a blank or a shell character quoted, so a
 * password flag's value is one word. `[name]` (`comm`) when it is empty (kernel threads,
 * zombies). Any process's command line may carry a secret (`app --api-key=…`).
 */
export function commandOf(pid: number): string | null {
  const args = read(`/proc/${pid}/cmdline`);
  if (args !== null && args !== '') return redactCommand(args.replace(/\0+$/, '').split('\0').map(quoted).join(' '));
  const comm = read(`/proc/${pid}/comm`);
  return comm !== null ? `[${comm.replace(/\n$/, '')}]` : null;
}

/** User + system CPU time in clock ticks (fields 14 and 15 of `/proc/<pid>/stat`, counted after the last `)`: the name may hold one). */
export function cpuTicks(pid: number): number | null {
  const stat = read(`/proc/${pid}/stat`);
  const rest = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the name: field 3 (state) is rest[0], so field N is rest[N - 3].
  const utime = Number(rest?.[11]);
  const stime = Number(rest?.[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? utime + stime : null;
}

/** Resident memory in bytes (`VmRSS` of `/proc/<pid>/status`, kB); null for a zombie or when unreadable. */
export function rssBytes(pid: number): number | null {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(read(`/proc/${pid}/status`) ?? '');
  return m ? Number(m[1]) * 1024 : null;
}

/** An argument as a shell word: as is when it holds nothing a shell reads specially. */
function quoted(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : shq(arg);
}
