/** The CLI's stdout: results as text or, with `--json`, as JSON. */

/** Options every command takes. */
export interface Common {
  stateDir?: string;
  json?: boolean;
}

/** Writes `value` as JSON (with `--json`) or `text` with a final line break. */
export function print(opts: Common, value: unknown, text: string): void {
  process.stdout.write(opts.json ? `${JSON.stringify(value, null, 2)}\n` : text.endsWith('\n') || text === '' ? text : `${text}\n`);
}
