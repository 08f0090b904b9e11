/**
 * The CLI's exit statuses and how an error becomes one line on stderr (`procward: CODE:
 * message`), or with `--json` an `{ "error": { code, message, details } }` object on stdout.
 */
import { CommanderError } from 'commander';
import { environmentsHint } from './environments.js';
import { Interrupted } from './host.js';
import { EXIT_PIPE_CLOSED, OutputClosed } from './output.js';

/** Usage errors (unknown command or option, a bad or missing argument), as getopt-style tools exit. */
export const EXIT_USAGE = 2;

/**
 * `wait`'s own outcomes, apart from the job's (as GNU `timeout` keeps 124 and 125): it gave
 * up before the job ended (its `--timeout`, or it was interrupted), or it failed itself
 * (usage, unknown session, stdout closed, ...).
 */
export const WAIT_GAVE_UP = 124;
export const WAIT_FAILED = 125;

/** Set once the command line names `wait` (its parse or its action began): see {@link waitStatus}. */
export const waitCommand = { ran: false };

/** `wait`'s status for its own outcome (the status any other command would exit with). */
export function waitStatus(status: number): number {
  if (status === 0) return 0;
  return status === 130 || status === 143 ? WAIT_GAVE_UP : WAIT_FAILED;
}

/**
 * `wait`'s status for the job's outcome (its exit code, or 128+N for signal N): as it is,
 * but a job's own 124 or 125 is 1 (failed), so that those two always mean `wait`'s own; the
 * exact code is on stderr and in `--json`.
 */
export function jobStatus(status: number): number {
  return status === WAIT_GAVE_UP || status === WAIT_FAILED ? 1 : status;
}

/** The table `--help` ends with (the README has the same). */
export const EXIT_STATUS_HELP = `Exit status:
  0        success
  1        the operation failed (unknown session, kill survivors, ...): "procward: CODE: message" on stderr
  2        usage error (unknown command or option, bad or missing argument)
  130      interrupted by Ctrl-C (log -f, top); the job keeps running
  141      stdout's reader went away (| head)
  wait exits with the job's outcome, or with 124 or 125 for its own:
  0-255    the job's exit code (a job's own 124 or 125 is 1: the exact code is on stderr and in --json)
  128+N    the job was ended by signal N (137 = SIGKILL, 143 = SIGTERM)
  124      wait gave up first (--timeout, Ctrl-C, SIGTERM); the job keeps running
  125      wait itself failed (usage, unknown session, stdout closed, ...)`;

/** The exit status for `err`, after printing it (nothing for help, version and a closed stdout). */
export function exitFor(err: unknown, json: boolean): number {
  if (err instanceof OutputClosed || (err as { code?: unknown })?.code === 'EPIPE') return EXIT_PIPE_CLOSED;
  if (err instanceof CommanderError) {
    // Help and version (exit 0); help shown because no command was given (stderr, usage).
    if (err.exitCode === 0) return 0;
    if (err.code === 'commander.help') return EXIT_USAGE;
    const message = err.message.replace(/^error: /, '');
    report('INVALID_ARGUMENT', message, undefined, json, `see procward ${err.code === 'commander.unknownCommand' ? '' : commandOf()}--help`);
    return EXIT_USAGE;
  }
  if (err instanceof Interrupted || (err instanceof Error && err.name === 'AbortError' && err.cause instanceof Interrupted)) {
    const signal = err instanceof Interrupted ? err.signal : (err.cause as Interrupted).signal;
    process.stderr.write(`procward: interrupted (${signal}); the job keeps running\n`);
    return signal === 'SIGINT' ? 130 : 143;
  }
  const e = err as { code?: unknown; message?: unknown; details?: unknown };
  const code = typeof e?.code === 'string' ? e.code : 'ERROR';
  const message = err instanceof Error ? err.message : String(err);
  // The library refusing an argument the command line gave (`signal ID FOO`) is a usage error too.
  const usage = code === 'INVALID_ARGUMENT';
  // The environments file's errors: its mode's fix, or where its format is (not the command's help).
  const hint = environmentsHint(err) ?? (usage ? `see procward ${commandOf()}--help` : null);
  report(code, message, e?.details, json, hint);
  return usage ? EXIT_USAGE : 1;
}

/** Prints the error; `hint`: what to do, in parentheses after it (`see procward start --help`), null for none. */
function report(code: string, message: string, details: unknown, json: boolean, hint: string | null): void {
  if (json) {
    process.stdout.write(`${JSON.stringify({ error: { code, message, ...(details !== undefined && details !== null && { details }) } }, null, 2)}\n`);
    return;
  }
  process.stderr.write(`procward: ${code}: ${message.replace(/\s*\n\s*/g, ' ')}${hint !== null ? ` (${hint})` : ''}\n`);
}

/** The command named on the command line, for the help hint (`start `), or nothing. */
function commandOf(): string {
  const word = process.argv.slice(2).find((a) => !a.startsWith('-'));
  return word && /^[a-z]+$/.test(word) ? `${word} ` : '';
}
