/** Commands that show state: `list`, `poll`, `probe`, `tree`, `recover`. */
import type { Command } from 'commander';
import { descendants, type ProbeResult, type ProcessEntry, probe } from '../../processes.js';
import type { SessionSummary } from '../../types.js';
import { int } from './args.js';
import { common } from './common.js';
import { age, describeEnd, logFooter } from './format.js';
import { withRegistry } from './host.js';
import { type Common, print } from './output.js';

export function registerViews(program: Command): void {
  common(program.command('list'))
    .description('list sessions')
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
        const row = (id: string, pid: string, ran: string, state: string, command: string) => `${id.padEnd(17)}  ${pid.padStart(7)}  ${ran.padStart(6)}  ${state.padEnd(28)}  ${command}`;
        const state = (s: SessionSummary) => `${describeEnd(s)}${s.logEvicted ? ', log evicted' : ''}`;
        const rows = all.map((s) => row(s.id, String(s.pid ?? '-'), age(s.uptimeMs), state(s), s.command));
        const footer = usage.usedBytes > 0 || usage.evictedSessions > 0 ? `\n${logFooter(usage)}` : '';
        print(opts, all, rows.length ? `${[row('SESSION', 'PID', 'RAN', 'STATE', 'COMMAND'), ...rows].join('\n')}${footer}` : 'no sessions');
      });
    });

  common(program.command('poll'))
    .description('status and output preview of a session')
    .argument('<id>', 'session id or unique prefix')
    .action(async (id: string, opts: Common) => {
      await withRegistry(opts, async (r) => {
        const p = await r.poll(id);
        print(opts, p, `${p.id} pid ${p.pid ?? '-'} ${describeEnd(p)} after ${age(p.uptimeMs)}\n${p.outputPreview}`);
      });
    });

  common(program.command('probe'))
    .description('identity and state of PIDs, read from the kernel (/proc on Linux; no state directory needed)')
    .argument('<pid...>', 'process ids', (value: string, previous: number[] | undefined) => [...(previous ?? []), int('pid', 1)(value)])
    .action(async (pids: number[], opts: Common) => {
      const results = probe(pids);
      const line = (r: ProbeResult) =>
        r.exists ? `${r.pid}  ${r.alive ? 'alive' : 'zombie'}  state ${r.state ?? '?'}  ppid ${r.ppid ?? '?'}  pgid ${r.pgid ?? '?'}  start ${r.startTime ?? '?'}` : `${r.pid}  gone`;
      print(opts, results, results.map(line).join('\n'));
    });

  common(program.command('tree'))
    .description('descendants of a PID, found in one pass over the process table')
    .argument('<pid>', 'root process id', int('pid', 1))
    .action(async (pid: number, opts: Common) => {
      const found = descendants(pid);
      const line = (d: ProcessEntry) => `${String(d.pid).padStart(7)}  ppid ${String(d.ppid).padStart(7)}  pgid ${String(d.pgid).padStart(7)}  ${d.alive ? d.state : 'zombie'}`;
      print(opts, found, found.length ? found.map(line).join('\n') : 'no descendants');
    });

  common(program.command('recover'))
    .description('open the state directory, recover its sessions (adopting live jobs, recording how gone ones ended), and report')
    .action(async (opts: Common) => {
      await withRegistry(opts, async (r) => {
        const all = await r.list();
        const count = (status: string) => all.filter((s) => s.status === status).length;
        const report = { sessions: all.length, running: count('running'), exited: count('exited'), diagnostics: r.diagnostics };
        print(opts, report, `${report.sessions} session(s): ${report.running} running, ${report.exited} ended${r.diagnostics.length ? `\n${r.diagnostics.join('\n')}` : ''}`);
      });
    });
}
