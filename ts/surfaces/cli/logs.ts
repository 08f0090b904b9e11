/** `log` and `wait`: a session's output on stdout. */
import { once } from 'node:events';
import { constants as osConstants } from 'node:os';
import type { Command } from 'commander';
import { MAX_PAGE_BYTES, MIN_PAGE_BYTES } from '../../output/paging.js';
import type { ProcessRegistry } from '../../registry.js';
import { int } from './args.js';
import { common } from './common.js';
import { describeEnd } from './format.js';
import { withRegistry } from './host.js';
import { type Common, print } from './output.js';

function signalNumber(name: string): number {
  return osConstants.signals[name as keyof typeof osConstants.signals] ?? 0;
}

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

export function registerLogs(program: Command): void {
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

  common(program.command('wait'))
    .description("wait for a session to end; print its output (stdout) and how it ended (stderr); exit with the job's exit code, 128+N for signal N, 124 on timeout")
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
}
