/**
 * The program: every command, registered from the modules that hold them, and the end of
 * the process with the command's exit status once stdout and stderr are flushed (see
 * `exits.ts` for the table).
 */
import { Command } from 'commander';
import { common } from './commonoptions.js';
import { exitFor, EXIT_STATUS_HELP, waitCommand, waitStatus } from './exits.js';
import { closeEnvironments, hostEnvironments, registerEnvironments } from './environments.js';
import { registerJobs } from './jobs.js';
import { registerLogs } from './logs.js';
import { type Common, finish } from './output.js';
import { registerTop } from './top.js';
import { registerViews } from './views.js';

import { version } from './version.js';

/** With `--json`, usage errors too come out as `{ "error": … }` on stdout. */
const jsonOutput = process.argv.includes('--json');

export const program = new Command('procward')
  .description('Background process registry: start jobs, read their output, wait for them, stop their whole tree.')
  .version(version)
  .exitOverride()
  // Errors are printed once, in one line, by exitFor; help goes where commander sends it.
  .configureOutput({ outputError: () => {} })
  .addHelpText('after', `\n${EXIT_STATUS_HELP}`);

// `procward --state-dir D ps` and `procward --json ps`: the options every command takes are
// also accepted before the command (program options only there, so a job's own words after
// the command stay its own), and handed to the command unless it was given them itself.
common(program).enablePositionalOptions();
program.hook('preAction', (_program, command) => {
  for (const [key, value] of Object.entries(program.opts())) {
    if (command !== program && command.getOptionValue(key) === undefined) command.setOptionValue(key, value);
  }
});

registerJobs(program);
registerViews(program);
registerLogs(program);
registerTop(program);
registerEnvironments(program);

common(program.command('mcp'))
  .description('serve the process tools over stdio for an MCP client (the registry stays open until the client disconnects)')
  .action(async (opts: Common) => {
    // Ctrl-C ends the server at once, as before: no interrupt handling of withRegistry here.
    const [{ serveMcpStdio }, { ProcessRegistry }, { defaultStateDir }] = await Promise.all([import('../mcp.js'), import('../../registry.js'), import('../../persist/statedir.js')]);
    const environments = await hostEnvironments(false);
    const registry = await ProcessRegistry.open({ ...(environments && { environments }), stateDir: opts.stateDir ?? defaultStateDir() });
    for (const d of registry.diagnostics) process.stderr.write(`procward: ${d}\n`);
    await serveMcpStdio(registry, version);
    await registry.close();
    await closeEnvironments(environments);
  });

/** Runs the command line and ends the process. */
export function run(): void {
  program.parseAsync(process.argv).then(
    () => finish(typeof process.exitCode === 'number' ? process.exitCode : 0),
    (err: unknown) => {
      const status = exitFor(err, jsonOutput);
      finish(waitCommand.ran ? waitStatus(status) : status);
    },
  );
}
