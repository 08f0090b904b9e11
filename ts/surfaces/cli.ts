/**
 * `procward`: the command line. Every invocation is a fresh host that recovers from the
 * checkpoint in the state directory, so a job started by one invocation is listed, polled,
 * waited for and killed by the next. The commands live in `cli/`, by what they do.
 *
 * This entry loads as little as it can: `procward --version` answers before the argument
 * parser loads, and the registry, the native addon and the MCP SDK load only in the
 * commands that use them, so start-up stays close to Node's own (bench/cli-startup.mjs).
 */
import { version } from './cli/version.js';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) process.stdout.write(`${version}\n`);
else void import('./cli/program.js').then((p) => p.run());
