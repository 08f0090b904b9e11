/** `log` (alias `logs`) and `wait`: a session's output on stdout, streamed. */
import { constants as osConstants } from 'node:os';
import type { Command } from 'commander';
import { duration, int } from './args.js';
import { common } from './commonoptions.js';
import { jobStatus, WAIT_GAVE_UP, waitCommand } from './exits.js';
import { describeEnd, terminalSafe } from './format.js';
import { interrupted, withRegistry } from './host.js';
import { type Common, note, print } from './output.js';
import { type StreamReport, streamOutput } from './stream.js';

/** Exit status of `wait` for a job ended by signal N: 128 + N, as a shell reports it. */
function signalExit(name: string): number {
  return 128 + (osConstants.signals[name as keyof typeof osConstants.signals] ?? 0);
}

/**
 * What a stream left out, on stderr: output the log cap dropped, an evicted log. Nothing when
 * it showed all. Line numbers count from the first line the job wrote, as `--offset` does:
 * `not all output was kept: printed lines 1042-2000 of the 2000 the job wrote; lines 1-1041
 * (4098 bytes) were dropped by the log cap (--log-max-bytes) and are gone`.
 */
function reportGaps(id: string, s: StreamReport): void {
  if (s.logEvicted) note(`procward: ${id}: the log was evicted to keep the state directory within its disk budget: ${s.showing}`);
  else if (s.droppedLines > 0) {
    const shown = s.firstLine === null ? 'printed no lines' : `printed lines ${s.firstLine + 1}-${s.firstLine + s.lines}`;
    const gone = `lines 1-${s.droppedLines} (${s.droppedChars} bytes) were dropped by the log cap (--log-max-bytes) and are gone`;
    note(`procward: ${id}: not all output was kept: ${shown} of the ${s.totalLines} the job wrote; ${gone}`);
  } else if (s.droppedChars > 0) note(`procward: ${id}: not all output was kept: ${s.showing}`);
}

/** On a terminal, the plain view's leftover control characters are shown escaped; in a pipe the text goes as it is. */
function forTerminal(view: 'plain' | 'raw'): { transform?: (text: string) => string } {
  return view === 'plain' && process.stdout.isTTY ? { transform: terminalSafe } : {};
}

interface LogOpts extends Common {
  follow?: boolean;
  tail?: number;
  offset?: number;
  limit?: number;
  raw?: boolean;
}

export function registerLogs(program: Command): void {
  common(program.command('log'))
    .alias('logs')
    .description('print the output of a session (all of it by default), or follow it while the job runs')
    .argument('<id>', 'session id or unique prefix')
    .option('-f, --follow', 'keep printing new output until the job ends (Ctrl-C stops following, the job keeps running); follows across log rotations')
    .option('-n, --tail <n>', 'only the last N lines', int('tail', 0))
    .option('--offset <n>', 'start at line N (0-based, counted from the first line the job wrote, lines the log cap dropped included)', int('offset', 0))
    .option('--limit <n>', 'at most N lines', int('limit', 1))
    .option('--raw', 'output as the job wrote it, colour escapes included (default: escape sequences removed, progress bars as their last frame)')
    .addHelpText('after', "\nWith --json: one page (the last 200 lines, or --offset/--limit) as a JSON object; there offset and totalLines count the lines the log still holds, droppedLines the lines its cap dropped before them (add it for the job's own line numbers; showing gives both).")
    .action(async (id: string, opts: LogOpts) => {
      await withRegistry(opts, async (r, signal) => {
        const view = opts.raw ? 'raw' : 'plain';
        if (opts.json) {
          const page = await r.readLog(id, { ...(opts.offset !== undefined && { offset: opts.offset }), limit: opts.limit ?? opts.tail ?? 200, view });
          await print(opts, page, '');
          return;
        }
        const from = opts.tail !== undefined ? { tail: opts.tail } : (opts.offset ?? 0);
        const s = await streamOutput(r, id, { from, view, follow: opts.follow === true, signal, ...(opts.limit !== undefined && { limit: opts.limit }), ...forTerminal(view) });
        reportGaps(id, s);
        const stop = interrupted();
        if (stop) throw stop;
      });
    });

  common(program.command('wait'))
    .description("wait for a session to end; print its whole output (stdout) and how it ended (stderr); exit with the job's exit code")
    .argument('<id>', 'session id or unique prefix')
    .option('--timeout <duration>', 'give up after this long (500ms, 30s, 5m): exit 124, the job keeps running', duration('timeout', 1))
    .option('-q, --quiet', 'do not print the output, only wait')
    .addHelpText(
      'after',
      "\nExit status: the job's exit code (a job's own 124 or 125 is 1; the exact code is on stderr and in --json); 128+N when signal N ended it; 1 when the exit code is unknown (lost). wait's own: 124 when it gave up first (--timeout, Ctrl-C, SIGTERM; the job keeps running), 125 when it failed (usage, unknown session, ...).",
    )
    // Its usage errors too exit with wait's own status (see exits.ts).
    .exitOverride((err) => {
      waitCommand.ran = true;
      throw err;
    })
    .hook('preAction', () => {
      waitCommand.ran = true;
    })
    .action(async (id: string, opts: Common & { timeout?: number; quiet?: boolean }) => {
      await withRegistry(opts, async (r, signal) => {
        const w = await r.wait(id, { ...(opts.timeout !== undefined && { timeoutMs: opts.timeout }), signal });
        if (opts.json) await print(opts, w, '');
        else {
          if (!opts.quiet) reportGaps(w.id, await streamOutput(r, w.id, { from: 0, ...forTerminal('plain') }));
          note(`${w.id}: ${w.timedOut ? 'still running (timed out)' : describeEnd(w)}`);
        }
        process.exitCode = w.timedOut ? WAIT_GAVE_UP : jobStatus(w.exitCode ?? (w.signal ? signalExit(w.signal) : 1));
      });
    });
}
