/**
 * The CLI's stdout and stderr. Every write respects backpressure (a slow reader such as
 * `procward wait ID | (sleep 1; wc -l)` gets every byte), and the process ends only once
 * both streams are flushed (`finish`). A reader that goes away (`| head`) ends the command
 * with exit status 141, as SIGPIPE ends `cat`.
 */

/** Options every command takes. */
export interface Common {
  stateDir?: string;
  json?: boolean;
}

/** Exit status when stdout's reader closed the pipe: 128 + SIGPIPE, as a shell reports `cat` ended by it. */
export const EXIT_PIPE_CLOSED = 141;

/** Thrown by {@link out} once stdout's reader is gone: the command stops, cleans up and exits 141. */
export class OutputClosed extends Error {
  constructor() {
    super('stdout was closed by its reader');
  }
}

let closed = false;
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  // EPIPE (reader gone) and its kin end the output; the command notices at its next write.
  closed = true;
  if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') process.stderr.write(`procward: stdout: ${err.message}\n`);
});

/** Whether stdout's reader went away. */
export function stdoutClosed(): boolean {
  return closed;
}

/** Writes to stdout and resolves once it may take more (at once, unless its buffer is full). */
export async function out(text: string): Promise<void> {
  if (closed) throw new OutputClosed();
  if (text === '') return;
  if (process.stdout.write(text)) return;
  // Drained, or the reader went away (an error or the stream's close): every listener goes after.
  await new Promise<void>((resolve) => {
    const done = () => {
      process.stdout.off('drain', done).off('close', done).off('error', done);
      resolve();
    };
    process.stdout.on('drain', done).on('close', done).on('error', done);
  });
  if (closed) throw new OutputClosed();
}

/** Writes a line to stderr (notes and warnings; never data). */
export function note(text: string): void {
  process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** Writes `value` as JSON (with `--json`) or `text` with a final line break. */
export function print(opts: Common, value: unknown, text: string): Promise<void> {
  return out(opts.json ? `${JSON.stringify(value, null, 2)}\n` : text.endsWith('\n') || text === '' ? text : `${text}\n`);
}

function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableEnded) return Promise.resolve();
  // The callback of an empty write runs after every write queued before it.
  return new Promise((resolve) => stream.write('', () => resolve()));
}

/** Ends the process with `code` once stdout and stderr hold nothing unwritten. */
export async function finish(code: number): Promise<never> {
  process.exitCode = code;
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}
