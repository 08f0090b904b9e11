/**
 * `procward top`: a live view of the sessions, refreshed in place: status, CPU % and
 * resident memory of each job's whole process tree (Linux `/proc`, see `procfs.ts`), its
 * output rate in lines per second, run time and command. Keys change the sort (`c` CPU,
 * `m` memory, `o` output, `s` start, `t` status); `q` or Ctrl-C quits, leaving every job
 * running. Plain ANSI on the alternate screen; with stdout not a terminal (or `--once`)
 * it prints one frame and exits, as `top -b -n 1` does.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { ProcessEntry } from '../../processes.js';
import type { ProcessRegistry } from '../../registry.js';
import type { SessionSummary } from '../../types.js';
import { duration } from './args.js';
import { common } from './commonoptions.js';
import { age, bytes, printable, shortStatus, table } from './format.js';
import { Interrupted, interrupted, withRegistry } from './host.js';
import { type Common, out } from './output.js';
import { CLOCK_TICKS_PER_SECOND, cpuTicks, rssBytes } from './procfs.js';

/** Sort keys: the key pressed, the `--sort` name, and the order (largest first). */
const SORTS = {
  c: { name: 'cpu', by: (a: Row, b: Row) => (b.cpu ?? -1) - (a.cpu ?? -1) },
  m: { name: 'mem', by: (a: Row, b: Row) => (b.rss ?? -1) - (a.rss ?? -1) },
  o: { name: 'output', by: (a: Row, b: Row) => (b.rate ?? -1) - (a.rate ?? -1) },
  s: { name: 'started', by: (a: Row, b: Row) => b.s.startedAt - a.s.startedAt },
  t: { name: 'status', by: (a: Row, b: Row) => Number(b.s.status === 'running') - Number(a.s.status === 'running') || b.s.startedAt - a.s.startedAt },
} as const;
type SortKey = keyof typeof SORTS;

interface Row {
  s: SessionSummary;
  /** CPU % of the tree since the previous sample (100 = one core); null before the second sample or off Linux. */
  cpu: number | null;
  rss: number | null;
  /** Output lines per second since the previous sample. */
  rate: number | null;
}

/** What one sample remembers per session for the next: CPU ticks per PID and lines written, at a time. */
interface Prior {
  at: number;
  ticks: Map<number, number>;
  lines: number | null;
}

/** Samples every running session: its tree's CPU ticks and memory, and the lines its log holds. */
class Sampler {
  private prior = new Map<string, Prior>();
  constructor(
    private readonly r: ProcessRegistry,
    private readonly descendants: (pid: number) => ProcessEntry[],
  ) {}

  async sample(): Promise<Row[]> {
    const now = Date.now();
    const rows: Row[] = [];
    const next = new Map<string, Prior>();
    for (const s of await this.r.list()) {
      if (s.status !== 'running' || s.pid === null || s.pidScope === 'sandbox') {
        rows.push({ s, cpu: null, rss: null, rate: null });
        continue;
      }
      const pids = [s.pid, ...this.descendants(s.pid).filter((d) => d.alive).map((d) => d.pid)];
      const ticks = new Map<number, number>();
      let rss: number | null = null;
      for (const pid of pids) {
        const t = cpuTicks(pid);
        if (t !== null) ticks.set(pid, t);
        const m = rssBytes(pid);
        if (m !== null) rss = (rss ?? 0) + m;
      }
      const lines = await this.lines(s.id);
      const before = this.prior.get(s.id);
      const seconds = before ? (now - before.at) / 1000 : 0;
      let cpu: number | null = null;
      let rate: number | null = null;
      if (before && seconds > 0) {
        // Only processes seen in both samples count: one that ended took its ticks with it.
        let used = 0;
        for (const [pid, t] of ticks) used += Math.max(0, t - (before.ticks.get(pid) ?? t));
        cpu = ticks.size > 0 ? (used / CLOCK_TICKS_PER_SECOND / seconds) * 100 : null;
        rate = lines !== null && before.lines !== null ? Math.max(0, lines - before.lines) / seconds : null;
      }
      next.set(s.id, { at: now, ticks, lines });
      rows.push({ s, cpu, rss, rate });
    }
    this.prior = next;
    return rows;
  }

  /** Lines the job wrote so far (those the log cap dropped included), or null when unreadable. */
  private async lines(id: string): Promise<number | null> {
    try {
      const page = await this.r.readLog(id, { limit: 1, maxBytes: 256 });
      return (page.droppedLines ?? 0) + page.totalLines;
    } catch {
      return null;
    }
  }
}

/** One screen: a header line, the keys, and the table cut to the terminal's size. */
function frame(rows: Row[], sort: SortKey, width: number | undefined, height: number | undefined): string {
  const sorted = [...rows].sort(SORTS[sort].by);
  const running = rows.filter((r) => r.s.status === 'running').length;
  const head = `procward top: ${rows.length} session(s), ${running} running; sorted by ${SORTS[sort].name}   keys: c cpu  m mem  o output  s started  t status  q quit`;
  const columns = [{ header: 'SESSION' }, { header: 'PID', right: true }, { header: 'STATUS' }, { header: 'CPU%', right: true }, { header: 'RSS', right: true }, { header: 'LINES/S', right: true }, { header: 'RAN', right: true }, { header: 'COMMAND' }];
  const shown = height === undefined ? sorted : sorted.slice(0, Math.max(0, height - 3));
  const cells = shown.map(({ s, cpu, rss, rate }) => [
    s.id,
    s.pid === null ? '-' : String(s.pid),
    shortStatus(s),
    cpu === null ? '-' : cpu.toFixed(1),
    rss === null ? '-' : bytes(rss),
    rate === null ? '-' : rate < 10 ? rate.toFixed(1) : String(Math.round(rate)),
    age(s.uptimeMs),
    printable(s.command),
  ]);
  return `${width === undefined ? head : head.slice(0, width)}\n\n${table(columns, cells, width)}`;
}

/**
 * Runs the live view until `q`, Ctrl-C, SIGTERM or `signal` aborts. Ctrl-C (a key in raw
 * mode, or SIGINT) and SIGTERM throw {@link Interrupted} once the terminal is restored, so
 * the exit status is 130 (143) as documented; `q` and Ctrl-D end it with 0.
 */
async function live(sampler: Sampler, sort: SortKey, intervalMs: number, signal: AbortSignal): Promise<void> {
  const tty = process.stdout;
  const stdin = process.stdin;
  let rows = await sampler.sample();
  let timer: NodeJS.Timeout | undefined;
  let stop: () => void = () => {};
  let interruptedBy: Interrupted | null = null;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const draw = () => {
    const text = frame(rows, sort, tty.columns || 80, tty.rows || 24);
    // Home, each line then clear to its end, clear below: the screen is redrawn in place, without flicker.
    tty.write(`\x1b[H${text.split('\n').join('\x1b[K\n')}\x1b[K\x1b[J`);
  };
  const onKey = (data: Buffer) => {
    const key = data.toString('utf8');
    if (key === '\x03') interruptedBy = new Interrupted('SIGINT');
    if (key === 'q' || key === '\x03' || key === '\x04') stop();
    else if (key in SORTS) {
      sort = key as SortKey;
      draw();
    }
  };
  tty.write('\x1b[?1049h\x1b[?25l');
  if (stdin.isTTY) stdin.setRawMode(true);
  stdin.on('data', onKey);
  signal.addEventListener('abort', stop, { once: true });
  tty.on('resize', draw);
  const tick = async () => {
    rows = await sampler.sample();
    draw();
    timer = setTimeout(() => void tick().catch(stop), intervalMs);
  };
  try {
    draw();
    timer = setTimeout(() => void tick().catch(stop), intervalMs);
    await stopped;
  } finally {
    clearTimeout(timer);
    tty.off('resize', draw);
    stdin.off('data', onKey);
    if (stdin.isTTY) stdin.setRawMode(false);
    stdin.pause();
    tty.write('\x1b[?25h\x1b[?1049l');
  }
  const by = interruptedBy ?? interrupted();
  if (by) throw by;
}

/** `--sort`'s value: a key's name. */
function sortKey(value: string): SortKey {
  const key = (Object.keys(SORTS) as SortKey[]).find((k) => SORTS[k].name === value);
  if (key === undefined) throw new InvalidArgumentError(`--sort must be one of ${Object.values(SORTS).map((s) => s.name).join(', ')}, got ${JSON.stringify(value)}`);
  return key;
}

export function registerTop(program: Command): void {
  common(program.command('top'))
    .description('live view of the sessions: status, CPU %, memory and output rate of each job tree, refreshed in place (keys c m o s t sort, q quits)')
    // Defaults shown once, as words (commander would add "(default: 1000)" after the text's own).
    .addOption(new Option('--sort <key>', 'sort by cpu, mem, output, started or status').argParser(sortKey).default('c' as SortKey, 'cpu'))
    .addOption(new Option('--interval <duration>', 'time between refreshes').argParser(duration('interval', 100)).default(1000, '1s'))
    .option('--once', 'print one frame and exit (the default when stdout is not a terminal); CPU and rates need two samples, one interval apart')
    .action(async (opts: Common & { sort: SortKey; interval: number; once?: boolean }) => {
      const key = opts.sort;
      const { descendants } = await import('../../processes.js');
      await withRegistry(opts, async (r, signal) => {
        const sampler = new Sampler(r, descendants);
        if (process.stdout.isTTY && !opts.once && !opts.json) return live(sampler, key, opts.interval, signal);
        await sampler.sample();
        await new Promise((resolve) => setTimeout(resolve, opts.interval));
        const stop = interrupted();
        if (stop) throw stop;
        const rows = await sampler.sample();
        await out(opts.json ? `${JSON.stringify(rows.map(({ s, ...m }) => ({ id: s.id, pid: s.pid, status: s.status, ...m, command: s.command })), null, 2)}\n` : `${frame(rows, key, undefined, undefined)}\n`);
      });
    });
}
