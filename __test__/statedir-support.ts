// Helpers of the state-directory tests (statedir.test.ts, statedir-records.test.ts): a
// state directory holding given checkpoint entries, and the error code of a call.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deadHostEntry, tempDir } from './support.js';

/** A state directory with one finished session entry (the given fields override). */
export function stateWith(entries: Record<string, unknown>[], doc: Record<string, unknown> = {}): string {
  const state = tempDir();
  writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: entries, ...doc }), { mode: 0o600 });
  return state;
}

let n = 0;
/** A plausible entry written by a host that is gone (a dead writer). */
export function entry(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return deadHostEntry(`proc_${(0xabc000000000 + n++).toString(16)}`, fields);
}

/** The error code a call rejects with, or `resolved` when it succeeds. */
export const code = (p: Promise<unknown>) => p.then(() => 'resolved', (e: { code?: string }) => e.code);
