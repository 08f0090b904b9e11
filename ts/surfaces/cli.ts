/**
 * `procward`: the command line. Every invocation is a fresh host that recovers from the
 * checkpoint in the state directory, so a job started by one invocation is listed, polled,
 * waited for and killed by the next. The commands live in `cli/`, by what they do.
 */
import { Command, CommanderError } from 'commander';
import { ProcwardError } from '../errors.js';
import { defaultStateDir } from '../persist/statedir.js';
import { ProcessRegistry } from '../registry.js';
import { common } from './cli/common.js';
import { registerJobs } from './cli/jobs.js';
import { registerLogs } from './cli/logs.js';
import type { Common } from './cli/output.js';
import { registerViews } from './cli/views.js';
import { serveMcpStdio } from './mcp.js';

declare const __PROCWARD_VERSION__: string;
const version = typeof __PROCWARD_VERSION__ === 'string' ? __PROCWARD_VERSION__ : '0.0.0-dev';

/** With `--json`, usage errors too come out as `{ "error": … }` on stdout (see the end). */
const jsonOutput = process.argv.includes('--json');

const program = new Command('procward')
  .description('Background process registry: start jobs, read their output, wait for them, stop their whole tree.')
  .version(version)
  .showHelpAfterError()
  .exitOverride()
  .configureOutput({ writeErr: (text) => void (jsonOutput || process.stderr.write(text)) });

registerJobs(program);
registerViews(program);
registerLogs(program);

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
