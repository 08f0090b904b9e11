// DESIGN section 6 (each entry validated on its own), issue 14: the fast path that reads the
// usual checkpoint entry gives what the schema gives, entry for entry, and refuses nothing
// the schema accepts nor accepts anything it refuses.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Checkpoint } from '../ts/persist/checkpoint.js';
import { SESSION_SCHEMA_VERSION, sessionRecordSchema, understood, wellFormed } from '../ts/session/record.js';
import { tempDir } from './support.js';

/** What the schema alone answers (the reference). */
function bySchema(raw: unknown): unknown {
  const parsed = sessionRecordSchema.safeParse(raw);
  return parsed.success && (parsed.data.schemaVersion ?? 1) <= SESSION_SCHEMA_VERSION ? parsed.data : null;
}

const base = {
  schemaVersion: 2,
  id: 'proc_0123456789ab',
  command: 'make test',
  cwd: '/tmp',
  pid: 4242,
  identity: { pid: 4242, startTime: '123456', bootId: 'b0071d' },
  jobIdentity: { pid: 4243, startTime: '123457', bootId: 'b0071d' },
  taskId: 'task-1',
  startedAt: 1_700_000_000_000,
  exitedAt: 1_700_000_001_000,
  status: 'exited',
  exitCode: 0,
  signal: null,
  reason: 'exited',
  terminationSource: 'process',
  durable: true,
  logPath: '/s/sessions/proc_0123456789ab/output.log',
  exitPath: null,
  writer: { pid: 77, startTime: '9', bootId: 'b0071d', instance: 'r1' },
  updatedAt: 1_700_000_001_000,
  notifyOnComplete: true,
  completionTail: 'done',
  timeoutMs: 60_000,
  timedOut: false,
  watchPatterns: ['ERROR'],
  watchEvents: [{ pattern: 'ERROR', line: 'ERROR x', at: 5 }],
  watchFired: 1,
};

/** Values to put in any field: valid for some fields, wrong for most. */
const VALUES: unknown[] = [
  undefined, null, 0, -1, 1, 1.5, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY, '', '0', '12', 'x', 'proc_0123456789ab', 'proc_0123456789AB',
  'a'.repeat(257), 'running', 'exited', 'killed', 'lost', 'failed_start', 'host', 'sandbox', true, false, [], ['a'], [1], {},
  { pid: 1, startTime: '1', bootId: 'b' }, { pid: 1, startTime: '1', bootId: 'b', instance: 'i' }, { pid: 1, startTime: '1', bootId: 'b', extra: 1 },
  { pid: 0, startTime: '1', bootId: 'b' }, { pid: 1, startTime: '1x', bootId: 'b' }, { pid: 1, startTime: '1', bootId: '' },
  [{ pattern: 'p', line: 'l', at: 1 }], [{ pattern: 'p', line: 'l', at: 1, more: 2 }], [{ pattern: 'p', line: 'l' }],
  [{ pattern: 'p', line: 'l', at: 1, offset: 3 }], [{ pattern: 'p', line: 'l', at: 1, offset: -1 }], [{ pattern: 'p', line: 'l', at: 1, offset: 1.5 }],
  // Out of range (issue 26): a PID past pid_t, a start time past u64, times a Date cannot hold,
  // an exit code past a DWORD, a negative count, a deadline past a Node timer.
  2 ** 31 - 1, 2 ** 31, 4294967297, 2 ** 32 - 1, 2 ** 32, -(2 ** 31), -(2 ** 31) - 1, 8.64e15, 8.64e15 + 1, -0.5, 2 ** 31 - 1 + 1,
  '18446744073709551615', '18446744073709551616', '123456789012345678901', '0000000000000000000001',
  { pid: 4294967297, startTime: '1', bootId: 'b' }, { pid: 2 ** 31 - 1, startTime: '18446744073709551615', bootId: 'b' }, { pid: 1, startTime: '18446744073709551616', bootId: 'b' },
  [{ pattern: 'p', line: 'l', at: -1 }], [{ pattern: 'p', line: 'l', at: 1, offset: 2 ** 53 }],
];
const FIELDS = [...Object.keys(sessionRecordSchema.shape), 'unknownField', '__proto__'];

/** The base entry with `field` set to `value` (removed for `undefined`), as JSON would give it, and as an object that keeps an `undefined`. */
function variants(field: string, value: unknown): unknown[] {
  const o: Record<string, unknown> = JSON.parse(JSON.stringify(base));
  if (value === undefined) delete o[field];
  else Object.defineProperty(o, field, { value, enumerable: true, writable: true, configurable: true });
  const kept = { ...JSON.parse(JSON.stringify(base)), [field]: value };
  return [o, JSON.parse(JSON.stringify(o)), kept];
}

describe('checkpoint entries: the fast path answers as the schema does', () => {
  it(`every field set to each of ${VALUES.length} values, and the entry without it: same record (same key order) or same refusal`, () => {
    let fast = 0;
    let cases = 0;
    for (const field of FIELDS) {
      for (const value of VALUES) {
        for (const raw of variants(field, value)) {
          cases++;
          const want = bySchema(raw);
          const got = understood(raw);
          expect(got, `${field} = ${String(value)}`).toStrictEqual(want);
          expect(JSON.stringify(got)).toBe(JSON.stringify(want));
          if (wellFormed(raw) !== undefined) {
            fast++;
            // Never accepts what the schema refuses.
            expect(sessionRecordSchema.safeParse(raw).success, `${field} = ${String(value)}`).toBe(true);
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(3000);
    // The usual entries do take the fast path.
    expect(fast).toBeGreaterThan(100);
    expect(wellFormed(JSON.parse(JSON.stringify(base)))).toStrictEqual(bySchema(base));
  });

  it('the parsed record shares nothing with the raw entry (nested objects and arrays are new)', () => {
    const raw = JSON.parse(JSON.stringify(base));
    const got = understood(raw) as typeof base;
    expect(got.identity).not.toBe(raw.identity);
    expect(got.writer).not.toBe(raw.writer);
    expect(got.watchPatterns).not.toBe(raw.watchPatterns);
    expect(got.watchEvents[0]).not.toBe(raw.watchEvents[0]);
  });

  it('a checkpoint of fast-path and schema-path entries loads them all; a damaged one is kept read-only with the reason', async () => {
    const dir = tempDir();
    const good = { ...base, id: 'proc_00000000000a', logPath: null, durable: false };
    const odd = { ...good, id: 'proc_00000000000b', identity: { pid: 5, startTime: '1', bootId: 'b', stray: true } };
    const bad = { ...good, id: 'proc_00000000000c', exitCode: 'zero' };
    writeFileSync(join(dir, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: [good, odd, bad] }), { mode: 0o600 });
    const { sessions, readOnly, diagnostics } = await new Checkpoint(dir).load();
    expect(sessions.map((r) => r.id)).toEqual(['proc_00000000000a', 'proc_00000000000b']);
    // The schema strips the stray key of a nested identity; the fast path leaves such an entry to it.
    expect(sessions[1]?.identity).toEqual({ pid: 5, startTime: '1', bootId: 'b' });
    expect(readOnly?.map((r) => r.id)).toEqual(['proc_00000000000c']);
    expect(diagnostics.join('\n')).toMatch(/proc_00000000000c.*kept read-only: exitCode/);
  });

  it('entries of one writer share one writer object once read', async () => {
    const dir = tempDir();
    const entries = Array.from({ length: 3 }, (_, i) => ({ ...base, id: `proc_00000000001${i}`, durable: false, logPath: null }));
    const other = { ...entries[0], id: 'proc_000000000020', writer: { ...base.writer, instance: 'r2' } };
    writeFileSync(join(dir, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: [...entries, other] }), { mode: 0o600 });
    const { sessions } = await new Checkpoint(dir).load();
    expect(sessions).toHaveLength(4);
    expect(sessions[0]?.writer).toBe(sessions[1]?.writer);
    expect(sessions[1]?.writer).toBe(sessions[2]?.writer);
    expect(sessions[3]?.writer).not.toBe(sessions[0]?.writer);
    expect(sessions[3]?.writer.instance).toBe('r2');
  });
});
