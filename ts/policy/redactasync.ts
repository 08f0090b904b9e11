/**
 * `redactAsync`: {@link redact} for large text without blocking the event loop.
 */
import { redactInSlices } from '../output/paging.js';
import { type RedactOptions, redact } from './redact.js';

/**
 * Resolves to what {@link redact} returns for `text`, redacting it in slices of about 64 KiB
 * that yield to the event loop between them (`setImmediate`), each read with the 64 lines
 * before it and the private-key state where those start, so a slice boundary hides no secret
 * that a line boundary would not. `redact()` itself blocks for the length of its input (about
 * 5 ms per 64 KiB of log text on one core here): use this for more than a page.
 */
export async function redactAsync(text: string, opts: RedactOptions = {}): Promise<string> {
  return redactInSlices('', 0, text, opts.startsInKeyBlock === true, (slice, inKey) => redact(slice, { startsInKeyBlock: inKey }));
}
