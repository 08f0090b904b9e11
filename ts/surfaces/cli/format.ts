/** How the CLI writes sessions, sizes and times as text. */
import type { LogDiskUsage, SessionSummary } from '../../types.js';

/** `running`, or how the session ended: `exited (exit code 0)`, `killed (killed by SIGTERM)`. */
export function describeEnd(s: SessionSummary): string {
  if (s.status === 'running') return 'running';
  const how = s.signal ? `killed by ${s.signal}` : s.exitCode !== null ? `exit code ${s.exitCode}` : 'exit status unknown';
  return `${s.reason ?? 'exited'} (${how})`;
}

/** Bytes in binary units, e.g. `1.5 MiB`. */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 1 : 0).replace(/\.0$/, '')} ${units[i]}`;
}

/** `list`'s last line: the durable logs' disk use against their budget (see `RegistryOptions.maxTotalLogBytes`). */
export function logFooter(u: LogDiskUsage): string {
  const evicted = u.evictedSessions > 0 ? `, ${u.evictedSessions} evicted` : '';
  const over = u.overBudget ? ` (over budget: running jobs' logs hold ${bytes(u.runningBytes)})` : '';
  return `durable logs: ${bytes(u.usedBytes)} of ${bytes(u.budgetBytes)} budget${evicted}${over}`;
}

/** A duration in milliseconds as `42s`, `3m5s`, `2h10m`. */
export function age(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${s % 60}s` : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}
