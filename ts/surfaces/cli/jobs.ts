/** Commands that act on jobs: `start`, `kill`, and the job's input (`write`, `submit`, `close`). */
import type { Command } from 'commander';
import type { ProcessRegistry } from '../../registry.js';
import { int } from './args.js';
import { commandLine } from './cmdline.js';
import { common } from './common.js';
import { withRegistry } from './host.js';
import { type Common, print } from './output.js';

export function registerJobs(program: Command): void {
  common(program.command('start'))
    .description('start a command in the background (durable: survives this process) and print its session id')
    .argument('<command...>', 'the shell command (one quoted string, or words after --)')
    .option('--cwd <dir>', 'working directory')
    .option('--task <id>', 'task id to record')
    .option('--session-key <key>', 'session key to record')
    .option('--stdin', 'keep its stdin open for write/submit/close from later invocations (default: no input, the null device)')
    .action(async (words: string[], opts: Common & { cwd?: string; task?: string; sessionKey?: string; stdin?: boolean }) => {
      await withRegistry(opts, async (r) => {
        const s = await r.spawn(commandLine(words), {
          ...(opts.cwd !== undefined && { cwd: opts.cwd }),
          ...(opts.task !== undefined && { taskId: opts.task }),
          ...(opts.sessionKey !== undefined && { sessionKey: opts.sessionKey }),
          ...(opts.stdin && { stdin: true }),
        });
        print(opts, s, s.id);
      });
    });

  common(program.command('kill'))
    .description('stop a session and its whole process tree (SIGTERM, grace period, SIGKILL)')
    .argument('<id>', 'session id or unique prefix')
    .option('--grace <ms>', 'grace period before SIGKILL (0 = never escalate)', int('grace', 0))
    .action(async (id: string, opts: Common & { grace?: number }) => {
      await withRegistry(opts, async (r) => {
        const k = await r.kill(id, opts.grace !== undefined ? { graceMs: opts.grace } : {});
        const what = `${k.signalled.length} process(es) signalled${k.escalated ? ', escalated to SIGKILL' : ''}`;
        print(opts, k, k.outcome === 'already_exited' ? `${k.id}: already exited (leftovers: ${what})` : `${k.id}: killed (${what})`);
      });
    });

  const inputCommands = [
    ['write', 'write text to the stdin of a session started with --stdin (no newline added)', 'data', (r: ProcessRegistry, id: string, t: string) => r.write(id, t)],
    ['submit', 'send a line (text + Enter) to the stdin of a session started with --stdin', 'text', (r: ProcessRegistry, id: string, t: string) => r.submit(id, t)],
  ] as const;
  for (const [name, description, what, send] of inputCommands) {
    common(program.command(name))
      .description(description)
      .argument('<id>', 'session id or unique prefix')
      .argument(`<${what}>`, 'the text')
      .action(async (id: string, text: string, opts: Common) => {
        await withRegistry(opts, async (r) => {
          const w = await send(r, id, text);
          print(opts, w, `${w.id}: ${w.bytes} byte(s) written`);
        });
      });
  }

  common(program.command('close'))
    .description("close a session's stdin: the job reads end-of-file")
    .argument('<id>', 'session id or unique prefix')
    .action(async (id: string, opts: Common) => {
      await withRegistry(opts, async (r) => {
        const c = await r.closeStdin(id);
        print(opts, c, `${c.id}: stdin closed`);
      });
    });
}
