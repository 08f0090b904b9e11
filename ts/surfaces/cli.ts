/**
 * `procward`: the command line. Every invocation is a fresh host that recovers from the
 * checkpoint in the state directory, so a job started by one invocation is listed, polled,
 * waited for and killed by the next. The commands live in `cli/`, by what they do; this
 * file builds the program and ends the process: with the command's exit status, once
 * stdout and stderr are flushed (see `cli/exits.ts` for the table).
 */
import { Command } from 'commander';
import { common } from './cli/common.js';
import { exitFor, EXIT_STATUS_HELP } from './cli/exits.js';
import { registerJobs } from './cli/jobs.js';
import { registerLogs } from './cli/logs.js';
import { type Common, finish } from './cli/output.js';
import { registerTop } from './cli/top.js';
import { registerViews } from './cli/views.js';

declare const __PROCWARD_VERSION__: string;
const version = typeof __PROCWARD_VERSION__ === 'string' ? __PROCWARD_VERSION__ : '0.0.0-dev';

/** With `--json`, usage errors too come out as `{ "error": … }` on stdout. */
const jsonOutput = process.argv.includes('--json');

const program = new Command('procward')
  .description('Background process registry: start jobs, read their output, wait for them, stop their whole tree.')
  .version(version)
  .exitOverride()
  // Errors are printed once, in one line, by exitFor; help goes where commander sends it.
  .configureOutput({ outputError: () => {} })
  .addHelpText('after', `\n${EXIT_STATUS_HELP}`);

registerJobs(program);
registerViews(program);
registerLogs(program);
registerTop(program);

common(program.command('mcp'))
  .description('serve the process tools over stdio for an MCP client (the registry stays open until the client disconnects)')
  .action(async (opts: Common) => {
    // Ctrl-C ends the server at once, as before: no interrupt handling of withRegistry here.
    const [{ serveMcpStdio }, { ProcessRegistry }, { defaultStateDir }] = await Promise.all([import('./mcp.js'), import('../registry.js'), import('../persist/statedir.js')]);
    const registry = await ProcessRegistry.open({ stateDir: opts.stateDir ?? defaultStateDir() });
    for (const d of registry.diagnostics) process.stderr.write(`procward: ${d}\n`);
    await serveMcpStdio(registry, version);
    await registry.close();
  });

program.parseAsync(process.argv).then(
  () => finish(typeof process.exitCode === 'number' ? process.exitCode : 0),
  (err: unknown) => finish(exitFor(err, jsonOutput)),
);
