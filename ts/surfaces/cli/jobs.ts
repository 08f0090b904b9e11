/** Commands that act on jobs: `start`, `kill` (alias `stop`), `signal`, and the job's input (`write`, `submit`, `close`). */
import type { Command } from 'commander';
import type { ProcessRegistry } from '../../registry.js';
import type { KillResult } from '../../types.js';
import { duration, envNames, envPair, size } from './args.js';
import { commandLine } from './cmdline.js';
import { common } from './commonoptions.js';
import { environmentNamed, hostEnvironments } from './environments.js';
import { withRegistry } from './host.js';
import { type Common, note, print } from './output.js';

interface StartOpts extends Common {
  cwd?: string;
  task?: string;
  sessionKey?: string;
  stdin?: boolean;
  env?: Record<string, string>;
  allowEnv?: string[];
  logMaxBytes?: number;
  timeout?: number;
  quiet?: boolean;
  in?: string;
}

/** `killed (3 processes signalled, escalated to SIGKILL)`: what the kill did, nothing it did not. */
function killText(k: KillResult): string {
  const n = k.signalled.length;
  const what = `${n} process${n === 1 ? '' : 'es'} signalled${k.escalated ? ', escalated to SIGKILL' : ''}`;
  return k.outcome === 'already_exited' ? `${k.id}: had already exited${n > 0 ? ` (its leftovers: ${what})` : ''}` : `${k.id}: killed (${what})`;
}

/**
 * The library keeps killing survivors in the background for as long as its registry is
 * open; this invocation closes it as it exits, so its error must not say so. The survivors
 * and the report stay (`details`).
 */
function noBackgroundPromise(err: unknown): never {
  const e = err as { code?: unknown; message?: unknown; details?: { report?: { survivors?: number[] } } };
  if (e?.code !== 'KILL_SURVIVORS' || typeof e.message !== 'string') throw err;
  const survivors = e.details?.report?.survivors ?? [];
  const what = survivors.length > 0 ? `PID ${survivors.join(', ')} survived SIGKILL` : 'processes survived SIGKILL';
  throw Object.assign(new Error(`${what} (a process in uninterruptible sleep, state D, ends when its I/O does); nothing keeps trying after this command: run procward kill again`), {
    code: 'KILL_SURVIVORS',
    details: e.details,
  });
}

export function registerJobs(program: Command): void {
  common(program.command('start'))
    .description('start a command in the background (durable: it outlives this process, with its output and exit code) and print its session id')
    .argument('<command...>', 'the shell command (one quoted string, or words after --)')
    .option('--cwd <dir>', 'working directory')
    .option('-e, --env <NAME=VALUE>', 'set a variable for the job (repeatable)', envPair)
    .option('--allow-env <NAME>', "pass the caller's variable NAME although it looks like a secret (repeatable; by default such variables are withheld)", envNames)
    .option('--log-max-bytes <size>', 'disk cap of the output log (64KiB, 10MiB; default 64MiB); it rotates at half and keeps the newest output', size('log-max-bytes', 4096))
    .option('--timeout <duration>', "kill the job's tree after this long (SIGTERM, then SIGKILL after 2s), also with no procward running", duration('timeout', 1))
    .option('--task <id>', 'task id to record')
    .option('--session-key <key>', 'session key to record')
    .option('--in <name>', 'run it in an environment of the environments file (procward environments lists them; its format: procward environments --help): a container, an SSH host, a pod')
    .option('--stdin', 'keep its stdin open for write/submit/close from later invocations (default: no input, the null device)')
    .option('-q, --quiet', 'print only the session id (no note of the variables withheld from the job)')
    .addHelpText(
      'after',
      "\nThe job gets this shell's environment except variables that look like secrets (API keys, tokens, passwords, DATABASE_URL, ...): start names them on stderr, never their values. Pass one with --allow-env NAME or set it with --env NAME=VALUE.",
    )
    .action(async (words: string[], opts: StartOpts) => {
      const environments = opts.in !== undefined ? await hostEnvironments(true) : undefined;
      if (opts.in !== undefined) await environmentNamed(opts.in, environments ?? {});
      await withRegistry(
        opts,
        async (r) => {
          const s = await r.spawn(commandLine(words), {
            ...(opts.cwd !== undefined && { cwd: opts.cwd }),
            ...(opts.task !== undefined && { taskId: opts.task }),
            ...(opts.sessionKey !== undefined && { sessionKey: opts.sessionKey }),
            ...(opts.stdin && { stdin: true }),
            ...(opts.env !== undefined && { env: opts.env }),
            ...(opts.allowEnv !== undefined && { allowEnv: opts.allowEnv }),
            ...(opts.timeout !== undefined && { timeoutMs: opts.timeout }),
            ...(opts.in !== undefined && { environment: opts.in }),
          });
          if (s.withheldEnv.length > 0 && !opts.quiet && !opts.json) {
            note(`procward: withheld from the job (they look like secrets): ${s.withheldEnv.join(', ')}; pass one with --allow-env NAME or --env NAME=VALUE`);
          }
          await print(opts, s, s.id);
        },
        { ...(opts.logMaxBytes !== undefined && { logMaxBytes: opts.logMaxBytes }), ...(environments && { environments }) },
      );
    });

  common(program.command('kill'))
    .alias('stop')
    .description('stop a session and its whole process tree: SIGTERM, a grace period, then SIGKILL to what is left')
    .argument('<id>', 'session id or unique prefix')
    .option('-t, --grace <duration>', 'time between SIGTERM and SIGKILL (500ms, 5s; default 2s; 0 = SIGKILL right after SIGTERM, as docker stop -t 0)', duration('grace', 0))
    .action(async (id: string, opts: Common & { grace?: number }) => {
      await withRegistry(opts, async (r) => {
        const k = await r.kill(id, opts.grace !== undefined ? { graceMs: opts.grace } : {}).catch(noBackgroundPromise);
        await print(opts, k, killText(k));
      });
    });

  common(program.command('signal'))
    .description(
      "send one signal to a session's job and its descendants (on the far side for a job started with --in; to the process group of a library host's job that is not durable), no grace period, no SIGKILL after it: SIGINT to a dev server, SIGHUP to reload, SIGUSR1, SIGSTOP/SIGCONT",
    )
    .argument('<id>', 'session id or unique prefix')
    .argument('<signal>', 'HUP INT QUIT TERM KILL USR1 USR2 ALRM CONT STOP TSTP WINCH (SIG prefix optional, any case)')
    .action(async (id: string, name: string, opts: Common) => {
      await withRegistry(opts, async (r) => {
        const s = await r.signal(id, name);
        // A durable or sandbox job's own tree gets it one process at a time (never its supervisor or wrapper).
        const more = (s.signalled?.length ?? 1) - 1;
        const tree = more > 0 ? ` and ${more} descendant${more === 1 ? '' : 's'}` : '';
        await print(opts, s, `${s.id}: ${s.signal} sent to ${s.processGroup ? 'process group' : 'process'} ${s.pid}${tree}`);
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
          await print(opts, w, `${w.id}: ${w.bytes} byte(s) written`);
        });
      });
  }

  common(program.command('close'))
    .description("close a session's stdin: the job reads end-of-file")
    .argument('<id>', 'session id or unique prefix')
    .action(async (id: string, opts: Common) => {
      await withRegistry(opts, async (r) => {
        const c = await r.closeStdin(id);
        await print(opts, c, `${c.id}: stdin closed`);
      });
    });
}
