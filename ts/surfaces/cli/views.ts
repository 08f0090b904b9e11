/** Commands that show state: `list` (aliases `ps`, `ls`), `poll`, `probe`, `tree`, `recover`; and `prune` and `rm`, which forget ended sessions. */
import type { Command } from 'commander';
import type { ProbeResult, ProcessEntry } from '../../processes.js';
import type { ProcessRegistry } from '../../registry.js';
import type { SessionSummary } from '../../types.js';
import { int } from './args.js';
import { common } from './commonoptions.js';
import { age, ago, describeEnd, flags, logFooter, printable, shortStatus, table, terminalSafe } from './format.js';
import { withRegistry } from './host.js';
import { type Common, print } from './output.js';
import { commandOf } from './procfs.js';

/** The terminal's width for tables, or none in a pipe (nothing is cut there). */
function terminalWidth(): number | undefined {
  return process.stdout.isTTY ? process.stdout.columns || 80 : undefined;
}

/** `list`'s rows: id, PID, status, start, end, run time, notes and the command (cut to the terminal's width). */
function sessionTable(all: SessionSummary[], now = Date.now()): string {
  const columns = [{ header: 'SESSION' }, { header: 'PID', right: true }, { header: 'STATUS' }, { header: 'STARTED' }, { header: 'ENDED' }, { header: 'RAN', right: true }, { header: 'NOTES' }, { header: 'COMMAND' }];
  const rows = all.map((s) => [
    s.id,
    s.pid === null ? '-' : String(s.pid),
    shortStatus(s),
    ago(s.startedAt, now),
    s.status === 'exited' ? ago(s.exitedAt, now) : '-',
    age(s.uptimeMs),
    flags(s).join(', ') || '-',
    printable(s.command),
  ]);
  return table(columns, rows, terminalWidth());
}

/** `poll`'s text: the session, how it runs or ended, notes, and the output preview. */
function pollText(p: SessionSummary & { outputPreview: string }): string {
  const supervisor = p.supervisorPid !== undefined ? ` (supervisor ${p.supervisorPid})` : '';
  const head = `${p.id}  pid ${p.pid ?? '-'}${supervisor}  ${describeEnd(p)}  ${p.status === 'running' ? 'running for' : 'ran'} ${age(p.uptimeMs)}  started ${ago(p.startedAt)}`;
  const notes = [...flags(p)];
  if (p.status === 'exited' && p.leftovers) notes.push(`procward kill ${p.id} ends what it left running`);
  return [head, printable(p.command), ...(notes.length ? [`note: ${notes.join('; ')}`] : []), '', terminalSafe(p.outputPreview)].join('\n');
}

/** A tree of processes with their command lines: the root first, each child indented under its parent. */
function treeText(root: number, found: ProcessEntry[]): string {
  const children = new Map<number, ProcessEntry[]>();
  for (const d of found) children.set(d.ppid, [...(children.get(d.ppid) ?? []), d]);
  const label = (pid: number, alive = true) => `${pid}  ${alive ? printable(commandOf(pid) ?? '?') : '(zombie)'}`;
  const lines = [label(root)];
  const walk = (pid: number, prefix: string) => {
    const kids = children.get(pid) ?? [];
    kids.forEach((k, i) => {
      const last = i === kids.length - 1;
      lines.push(`${prefix}${last ? '└─ ' : '├─ '}${label(k.pid, k.alive)}`);
      walk(k.pid, `${prefix}${last ? '   ' : '│  '}`);
    });
  };
  walk(root, '');
  return lines.join('\n');
}

/** A recovered session's verdict, as `recover` lists it. */
function verdict(s: SessionSummary): { verdict: string; detail: string } {
  if (s.readOnly) return { verdict: 'read-only', detail: 'written by a newer procward or not understood: listed, never acted on' };
  if (s.status === 'running') return { verdict: s.detached ? 'adopted' : 'running', detail: `pid ${s.pid ?? '-'} is the same process that started (identity current)` };
  if (s.reason === 'lost') return { verdict: 'lost', detail: 'its process is gone and no exit file says how it ended' };
  return { verdict: 'ended', detail: describeEnd(s) };
}

async function sessionPid(r: ProcessRegistry, id: string): Promise<number> {
  const p = await r.poll(id);
  if (p.status !== 'running' || p.pid === null || p.pidScope === 'sandbox') {
    throw Object.assign(new Error(`${p.id} has no process on this machine to show (${describeEnd(p)})`), { code: 'SESSION_EXITED' });
  }
  return p.pid;
}

export function registerViews(program: Command): void {
  common(program.command('list'))
    .aliases(['ls', 'ps'])
    .description('list sessions: status, start and end, run time, what they left running, command')
    .option('--task <id>', 'only this task')
    .option('--session-key <key>', 'only this session key')
    .action(async (opts: Common & { task?: string; sessionKey?: string }) => {
      await withRegistry(opts, async (r) => {
        const filter = {
          ...(opts.task !== undefined && { taskId: opts.task }),
          ...(opts.sessionKey !== undefined && { sessionKey: opts.sessionKey }),
        };
        // The usage check measures the logs and enforces their budget first: the flags below are current.
        const usage = await r.logDiskUsage();
        const all = await r.list(filter);
        const footer = usage.usedBytes > 0 || usage.evictedSessions > 0 ? `\n${logFooter(usage)}` : '';
        await print(opts, all, all.length ? `${sessionTable(all)}${footer}` : 'no sessions');
      });
    });

  common(program.command('poll'))
    .description('status and output preview of a session')
    .argument('<id>', 'session id or unique prefix')
    .action(async (id: string, opts: Common) => {
      await withRegistry(opts, async (r) => {
        const p = await r.poll(id);
        await print(opts, p, pollText(p));
      });
    });

  common(program.command('probe'))
    .description('identity and state of PIDs, read from the kernel (/proc on Linux; no state directory needed)')
    .argument('<pid...>', 'process ids', (value: string, previous: number[] | undefined) => [...(previous ?? []), int('pid', 1)(value)])
    .action(async (pids: number[], opts: Common) => {
      const { probe } = await import('../../processes.js');
      const results = probe(pids);
      const line = (r: ProbeResult) =>
        r.exists ? `${r.pid}  ${r.alive ? 'alive' : 'zombie'}  state ${r.state ?? '?'}  ppid ${r.ppid ?? '?'}  pgid ${r.pgid ?? '?'}  start ${r.startTime ?? '?'}` : `${r.pid}  gone`;
      await print(opts, results, results.map(line).join('\n'));
    });

  common(program.command('tree'))
    .description("a process and its descendants as an indented tree with their command lines: a session's job (id or prefix) or any PID")
    .argument('<id-or-pid>', 'session id (or unique prefix; digits alone are a PID, so write such a prefix as proc_1234), or a process id')
    .action(async (target: string, opts: Common) => {
      const { descendants, probe } = await import('../../processes.js');
      const pid = /^\d+$/.test(target) ? int('pid', 1)(target) : await withRegistry(opts, (r) => sessionPid(r, target));
      if (probe([pid])[0]?.alive !== true) throw Object.assign(new Error(`no process ${pid}`), { code: 'NO_SUCH_PROCESS' });
      const found = descendants(pid);
      const json = found.map((d) => ({ ...d, command: commandOf(d.pid) }));
      await print(opts, json, treeText(pid, found));
    });

  common(program.command('recover'))
    .description('open the state directory, recover its sessions (adopting live jobs, recording how gone ones ended), and list each with its verdict')
    .action(async (opts: Common) => {
      await withRegistry(opts, async (r) => {
        const all = await r.list();
        const count = (status: string) => all.filter((s) => s.status === status).length;
        const verdicts = all.map((s) => ({ id: s.id, ...verdict(s), pid: s.pid, command: s.command }));
        const report = { sessions: all.length, running: count('running'), exited: count('exited'), verdicts, diagnostics: r.diagnostics };
        const rows = verdicts.map((v) => [v.id, v.verdict, v.detail, printable(v.command)]);
        const text = `${all.length ? table([{ header: 'SESSION' }, { header: 'VERDICT' }, { header: 'DETAIL' }, { header: 'COMMAND' }], rows, terminalWidth()) : 'no sessions'}
${report.sessions} session(s): ${report.running} running, ${report.exited} ended${r.diagnostics.length ? `\n${r.diagnostics.map((d) => `note: ${printable(d)}`).join('\n')}` : ''}`;
        await print(opts, report, text);
      });
    });

  common(program.command('prune'))
    .description('forget every ended session (and delete its log) that no other live host owns; running sessions stay')
    .action(async (opts: Common) => {
      // Which sessions ended, then a host that keeps ended sessions 1 ms (it prunes what it may as it opens and closes), then what is left.
      const ids = async (r: ProcessRegistry, ended: boolean) => (await r.list()).filter((s) => !ended || s.status === 'exited').map((s) => s.id);
      const ended = await withRegistry(opts, (r) => ids(r, true));
      await withRegistry(opts, (r) => r.list(), { finishedTtlMs: 1 });
      const left = new Set(await withRegistry(opts, (r) => ids(r, false)));
      const removed = ended.filter((id) => !left.has(id));
      await print(opts, { removed }, `${removed.length} ended session(s) removed${ended.length > removed.length ? `; ${ended.length - removed.length} kept (another live host owns them)` : ''}`);
    });

  common(program.command('rm'))
    .description('forget one ended session: its record, its log and exit file in the state directory (a running session is refused: kill it first)')
    .argument('<id>', 'session id or unique prefix of an ended session')
    .action(async (id: string, opts: Common) => {
      await withRegistry(opts, async (r) => {
        const f = await r.forget(id);
        await print(opts, { removed: [f.id] }, `${f.id}: removed`);
      });
    });
}
