/**
 * `procward`: the command line. Every invocation is a fresh host that recovers from the
 * checkpoint in the state directory, so a job started by one invocation is listed, polled,
 * waited for and killed by the next.
 */
import { once } from 'node:events';
import { constants as osConstants } from 'node:os';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import shellQuote from 'shell-quote';
import { ProcwardError } from '../errors.js';
import { MAX_PAGE_BYTES, MIN_PAGE_BYTES } from '../output/paging.js';
import { descendants, probe, type ProbeResult, type ProcessEntry } from '../processes.js';
import { serveMcpStdio } from './mcp.js';
import { type LogDiskUsage, ProcessRegistry, type SessionSummary } from '../registry.js';
import { defaultStateDir } from '../persist/statedir.js';

declare const __PROCWARD_VERSION__: string;
const version = typeof __PROCWARD_VERSION__ === 'string' ? __PROCWARD_VERSION__ : '0.0.0-dev';

interface Common {
  stateDir?: string;
  json?: boolean;
}

function int(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer ${range}, got ${JSON.stringify(value)}`);
    return n;
  };
}

function common(cmd: Command): Command {
  return cmd
    .option('--state-dir <dir>', 'state directory (default: $PROCWARD_STATE_DIR or the platform state dir)')
    .option('--json', 'print JSON');
}

async function withRegistry<T>(opts: Common, fn: (r: ProcessRegistry) => Promise<T>): Promise<T> {
  const registry = await ProcessRegistry.open({ stateDir: opts.stateDir ?? defaultStateDir() });
  for (const d of registry.diagnostics) process.stderr.write(`procward: ${d}\n`);
  try {
    return await fn(registry);
  } finally {
    // The command's own result stands; a checkpoint that could not be written is a warning.
    await registry.close().catch((err: unknown) => process.stderr.write(`procward: warning: the checkpoint was not written: ${(err as Error).message}\n`));
  }
}

function print(opts: Common, value: unknown, text: string): void {
  process.stdout.write(opts.json ? `${JSON.stringify(value, null, 2)}\n` : text.endsWith('\n') || text === '' ? text : `${text}\n`);
}

function describeEnd(s: SessionSummary): string {
  if (s.status === 'running') return 'running';
  const how = s.signal ? `killed by ${s.signal}` : s.exitCode !== null ? `exit code ${s.exitCode}` : 'exit status unknown';
  return `${s.reason ?? 'exited'} (${how})`;
}

/** Bytes in binary units, e.g. `1.5 MiB`. */
function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 1 : 0).replace(/\.0$/, '')} ${units[i]}`;
}

/** `list`'s last line: the durable logs' disk use against their budget (see `RegistryOptions.maxTotalLogBytes`). */
function logFooter(u: LogDiskUsage): string {
  const evicted = u.evictedSessions > 0 ? `, ${u.evictedSessions} evicted` : '';
  const over = u.overBudget ? ` (over budget: running jobs' logs hold ${bytes(u.runningBytes)})` : '';
  return `durable logs: ${bytes(u.usedBytes)} of ${bytes(u.budgetBytes)} budget${evicted}${over}`;
}

function signalNumber(name: string): number {
  return osConstants.signals[name as keyof typeof osConstants.signals] ?? 0;
}

/**
 * Words as one command line for cmd.exe (Windows' default shell), each reaching the program
 * as one argument. A word of only `[\w\-+=:./\\@]` is kept as it is; any other is quoted as
 * programs split their command line (CommandLineToArgvW: `"` becomes `\"`, and backslashes
 * before a quote or the closing quote are doubled), then every cmd metacharacter in it,
 * the quotes included, gets cmd's escape `^`, so cmd never enters its quote mode (where `\"`
 * would end it) and passes the quoted word on with the carets removed.
 */
function cmdCommandLine(words: string[]): string {
  const quote = (w: string) => `"${w.replace(/(\\*)"/g, '$1$1\\"').replace(/(\\+)$/, '$1$1')}"`.replace(/[()\][%!^"`<>&|;, *?\t]/g, '^$&');
  return words.map((w) => (/^[\w\-+=:./\\@]+$/.test(w) ? w : quote(w))).join(' ');
}

function age(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${s % 60}s` : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** With `--json`, usage errors too come out as `{ "error": … }` on stdout (see the end). */
const jsonOutput = process.argv.includes('--json');

const program = new Command('procward')
  .description('Background process registry: start jobs, read their output, wait for them, stop their whole tree.')
  .version(version)
  .showHelpAfterError()
  .exitOverride()
  .configureOutput({ writeErr: (text) => void (jsonOutput || process.stderr.write(text)) });

common(program.command('start'))
  .description('start a command in the background (durable: survives this process) and print its session id')
  .argument('<command...>', 'the shell command (one quoted string, or words after --)')
  .option('--cwd <dir>', 'working directory')
  .option('--task <id>', 'task id to record')
  .option('--session-key <key>', 'session key to record')
  .option('--stdin', 'keep its stdin open for write/submit/close from later invocations (default: no input, the null device)')
  .action(async (words: string[], opts: Common & { cwd?: string; task?: string; sessionKey?: string; stdin?: boolean }) => {
    const command = words.length === 1 ? (words[0] as string) : process.platform === 'win32' ? cmdCommandLine(words) : shellQuote.quote(words);
    await withRegistry(opts, async (r) => {
      const s = await r.spawn(command, {
        ...(opts.cwd !== undefined && { cwd: opts.cwd }),
        ...(opts.task !== undefined && { taskId: opts.task }),
        ...(opts.sessionKey !== undefined && { sessionKey: opts.sessionKey }),
        ...(opts.stdin && { stdin: true }),
      });
      print(opts, s, s.id);
    });
  });

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
      const row = (id: string, pid: string, ran: string, state: string, command: string) =>
        `${id.padEnd(17)}  ${pid.padStart(7)}  ${ran.padStart(6)}  ${state.padEnd(28)}  ${command}`;
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

common(program.command('log'))
  .description('output lines of a session (default: the last 200)')
  .argument('<id>', 'session id or unique prefix')
  .option('--offset <n>', 'first line, 0-based', int('offset', 0))
  .option('--limit <n>', 'number of lines', int('limit', 1))
  .option('--max-bytes <n>', 'byte cap of the page (default 1 MiB, at most 4 MiB; a longer line is cut with a marker)', int('max-bytes', MIN_PAGE_BYTES, MAX_PAGE_BYTES))
  .action(async (id: string, opts: Common & { offset?: number; limit?: number; maxBytes?: number }) => {
    await withRegistry(opts, async (r) => {
      const page = await r.readLog(id, {
        ...(opts.offset !== undefined && { offset: opts.offset }),
        ...(opts.limit !== undefined && { limit: opts.limit }),
        ...(opts.maxBytes !== undefined && { maxBytes: opts.maxBytes }),
      });
      print(opts, page, page.lines.length ? `${page.text}\n` : '');
      if (!opts.json) process.stderr.write(`[${page.showing}]\n`);
    });
  });

/**
 * Writes a session's whole output to stdout, one capped page (1 MiB) at a time and waiting
 * for stdout to drain between pages, so a log of any size streams in bounded memory. A job
 * still running (a timed-out wait) is shown up to the lines it had written at the first page.
 */
async function streamLog(r: ProcessRegistry, id: string): Promise<void> {
  let offset = 0;
  let end = Number.POSITIVE_INFINITY;
  while (offset < end) {
    const page = await r.readLog(id, { offset, limit: Math.min(100_000, end - offset) });
    end = Math.min(end, page.totalLines);
    if (page.lines.length > 0 && !process.stdout.write(`${page.text}\n`)) await once(process.stdout, 'drain');
    if (page.lines.length === 0) return;
    offset = page.offset + page.lines.length;
  }
}

common(program.command('wait'))
  .description(
    "wait for a session to end; print its output (stdout) and how it ended (stderr); exit with the job's exit code, 128+N for signal N, 124 on timeout",
  )
  .argument('<id>', 'session id or unique prefix')
  .option('--timeout <ms>', 'give up after this many milliseconds', int('timeout', 1))
  .action(async (id: string, opts: Common & { timeout?: number }) => {
    await withRegistry(opts, async (r) => {
      const w = await r.wait(id, opts.timeout !== undefined ? { timeoutMs: opts.timeout } : {});
      if (opts.json) print(opts, w, '');
      else {
        await streamLog(r, w.id);
        process.stderr.write(`${w.id}: ${w.timedOut ? 'still running (timed out)' : describeEnd(w)}\n`);
      }
      if (w.timedOut) process.exitCode = 124;
      else process.exitCode = w.exitCode ?? (w.signal ? 128 + signalNumber(w.signal) : 1);
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

common(program.command('mcp'))
  .description('serve the process tools over stdio for an MCP client (the registry stays open until the client disconnects)')
  .action(async (opts: Common) => {
    const registry = await ProcessRegistry.open({ stateDir: opts.stateDir ?? defaultStateDir() });
    for (const d of registry.diagnostics) process.stderr.write(`procward: ${d}\n`);
    await serveMcpStdio(registry, version);
    await registry.close();
  });

program.parseAsync(process.argv).then(
  () => process.exit(),
  (err: unknown) => {
    // Commander's own ends: help and version (exit 0), usage errors (already printed
    // unless --json).
    if (err instanceof CommanderError && err.exitCode === 0) process.exit(0);
    const e = err instanceof ProcwardError ? err : null;
    const code = err instanceof CommanderError ? 'INVALID_ARGUMENT' : (e?.code ?? (err as { code?: string }).code ?? 'ERROR');
    const message = err instanceof Error ? err.message.replace(/^error: /, '') : String(err);
    if (jsonOutput) process.stdout.write(`${JSON.stringify({ error: { code, message, ...(e?.details && { details: e.details }) } }, null, 2)}\n`);
    else if (!(err instanceof CommanderError)) process.stderr.write(`procward: ${code}: ${message}\n`);
    process.exit(1);
  },
);
