/**
 * The LLM tool's `filter`: a regular expression that keeps only the output lines it
 * matches. A model writes it, so it runs where watch patterns run: compiled and matched by
 * the Rust `regex` crate (`procward_core::patterns`, through the binding's `WatchMatcher`),
 * in time linear in the line, never by JavaScript's backtracking `RegExp` (`(a+)+$` on one
 * long line would hold the event loop for minutes). The same limits apply: at most 512
 * characters, no look-around or backreferences, and a line is matched on its head (its
 * first 64 KiB of UTF-8, less for a pattern that compiles to many automaton states).
 */
import { fromNative, ProcwardError } from '../../errors.js';
import { native, type WatchMatcher } from '../../native.js';

/** Milliseconds one filter may spend matching lines; the lines after that are counted as not searched. */
const FILTER_BUDGET_MS = 2_000;

/** Lines a filter kept, with their 0-based numbers. */
export interface Filtered {
  lines: string[];
  numbers: number[];
  /** Lines not searched because the time budget was spent on the ones before them. */
  unsearched: number;
}

/** Compiles a filter; `INVALID_ARGUMENT` with the engine's reason when it refuses it. */
export function compileFilter(pattern: string): WatchMatcher {
  try {
    return new native.WatchMatcher([pattern]);
  } catch (err) {
    throw new ProcwardError('INVALID_ARGUMENT', `filter: ${fromNative(err).message.replace(/^invalid input: /, '')}`);
  }
}

/** The lines (the first numbered `firstLine`) that `matcher` matches. */
export function filterLines(matcher: WatchMatcher, lines: string[], firstLine: number): Filtered {
  const hits = matcher.matchLines(lines, FILTER_BUDGET_MS);
  const out: Filtered = { lines: [], numbers: [], unsearched: 0 };
  hits.forEach((hit, i) => {
    if (hit === -2) out.unsearched++;
    if (hit < 0) return;
    out.lines.push(lines[i] as string);
    out.numbers.push(firstLine + i);
  });
  return out;
}
