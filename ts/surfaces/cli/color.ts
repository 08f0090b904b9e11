/**
 * Colour on the CLI's stdout: on when stdout is a terminal that has colours, off in pipes
 * and files. `NO_COLOR` (any non-empty value) turns it off and `FORCE_COLOR` (anything but
 * `0`/`false`) on, everywhere (https://no-color.org, https://force-color.org); both checked
 * by Node's `tty.WriteStream.hasColors` on a terminal. The styles are Node's `util.styleText`.
 */
import { styleText } from 'node:util';

type Style = Parameters<typeof styleText>[0];

function decide(stream: NodeJS.WriteStream): boolean {
  const force = process.env.FORCE_COLOR;
  if (force !== undefined && force !== '') return force !== '0' && force !== 'false';
  if (process.env.NO_COLOR) return false;
  return stream.isTTY === true && stream.hasColors();
}

/** Whether stdout gets colour. */
export const colorOut = decide(process.stdout);

/** `text` in `style` when stdout gets colour, else as it is. */
export function paint(style: Style, text: string): string {
  // validateStream (Node 22.13+) would decide again from process.stdout alone: the decision is made above.
  return colorOut && text !== '' ? (styleText as (f: Style, t: string, o?: object) => string)(style, text, { validateStream: false }) : text;
}
