/** How the CLI writes sessions, sizes and times as text for people. */
import type { LogDiskUsage, SessionSummary } from '../../types.js';
import { paint } from './color.js';

/** `running`, or how the session ended: `exited (exit code 0)`, `killed (killed by SIGTERM)`. */
export function describeEnd(s: SessionSummary): string {
  if (s.status === 'running') return 'running';
  // Every field of a record may be anyone's bytes (a crafted state file): printed escaped.
  const how = s.signal ? `killed by ${printable(s.signal)}` : s.exitCode !== null ? `exit code ${s.exitCode}` : 'exit status unknown';
  return `${printable(s.reason ?? 'exited')} (${how}${s.deadlineExceeded ? ', its timeout passed' : ''})`;
}

/** Short status for tables: `running`, `stopped`, `exit 0`, `exit 3`, `SIGTERM`, `lost`, coloured by how it went. */
export function shortStatus(s: SessionSummary): string {
  if (s.status === 'running') return s.stopped ? paint('yellow', 'stopped') : paint('green', 'running');
  if (s.reason === 'lost') return paint('magenta', 'lost');
  if (s.reason === 'failed_start') return paint('red', 'failed');
  if (s.signal) return paint(s.reason === 'killed' ? 'yellow' : 'red', printable(s.signal));
  // A kill ended it, the job exiting by itself (a TERM trap): its own code, in the kill's colour.
  if (s.reason === 'killed') return paint('yellow', `exit ${s.exitCode ?? '?'}`);
  return s.exitCode === 0 ? 'exit 0' : paint('red', `exit ${s.exitCode ?? '?'}`);
}

/**
 * What a session left behind or lost, and where it runs, for the table's notes column and
 * `poll`: `in NAME` (an environment of the environments file; its PID is that side's),
 * leftovers, an evicted log, read-only.
 */
export function flags(s: SessionSummary): string[] {
  const out: string[] = [];
  if (s.pidScope === 'sandbox') out.push(s.environment !== undefined ? `in ${printable(s.environment)}` : 'in another environment');
  if (s.status === 'exited' && s.leftovers) out.push(paint('yellow', `${s.leftovers} left running`));
  if (s.logEvicted) out.push('log evicted');
  if (s.readOnly) out.push('read-only');
  return out;
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

/** A duration in milliseconds as `42s`, `3m5s`, `2h10m`, `3d4h`. */
export function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600)}h`;
}

/** A moment (ms since the epoch) relative to `now`: `12s ago`, `3 min ago`, `5 h ago`, `4 days ago`. */
export function ago(at: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  const d = Math.floor(s / 86_400);
  return `${d} day${d === 1 ? '' : 's'} ago`;
}

/**
 * `text` safe to show on a terminal: control characters (C0, DEL, C1: escape sequences,
 * carriage returns, bells) written as `\n`, `\t`, `\xNN`, `\u{NNNN}`, so a command or a
 * process name chosen by anyone cannot move the cursor, recolour or retitle the terminal.
 */
export function printable(text: string): string {
  return escapeControls(text, /[\u0000-\u001f\u007f-\u009f]/g);
}

/**
 * Output text safe for a terminal: as {@link printable}, but line breaks and tabs stay.
 * The plain view has no colour sequences left, but may still hold a bell, shift-out/in
 * or a character-set switch (`ESC ( 0`) that would garble the terminal.
 */
export function terminalSafe(text: string): string {
  return escapeControls(text, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g);
}

function escapeControls(text: string, controls: RegExp): string {
  return text.replace(controls, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\t') return '\\t';
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
  });
}

/** Text length on a terminal, without colour escapes (the text itself was made {@link printable}). */
export function visibleLength(text: string): number {
  return text.replace(/\u001b\[[0-9;]*m/g, '').length;
}

/** `text` cut to `width` columns with `…` (code points; wide characters count as one). */
export function shorten(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : width <= 1 ? '…'.slice(0, width) : `${chars.slice(0, width - 1).join('')}…`;
}

/** A column of a {@link table}: its header and whether it is aligned right. */
export interface Column {
  header: string;
  right?: boolean;
}

/**
 * Rows as aligned columns separated by two spaces. The last column takes what is left of
 * `width` (when given: a terminal's width) and is cut with `…`; without a width nothing is cut.
 */
export function table(columns: Column[], rows: string[][], width?: number): string {
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map((r) => visibleLength(r[i] ?? ''))));
  const pad = (cell: string, i: number) => {
    const gap = ' '.repeat(Math.max(0, (widths[i] as number) - visibleLength(cell)));
    return columns[i]?.right ? gap + cell : cell + gap;
  };
  const last = columns.length - 1;
  const room = width === undefined ? undefined : Math.max(8, width - widths.slice(0, last).reduce((n, w) => n + w + 2, 0));
  const line = (cells: string[], header: boolean) => {
    const lead = cells.slice(0, last).map(pad).join('  ');
    const tail = cells[last] ?? '';
    const cut = room === undefined || visibleLength(tail) <= room ? tail : shorten(tail, room);
    const text = `${lead}  ${cut}`.trimEnd();
    return header ? paint('bold', text) : text;
  };
  return [line(columns.map((c) => c.header), true), ...rows.map((r) => line(r, false))].join('\n');
}
