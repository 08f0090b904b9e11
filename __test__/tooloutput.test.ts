// Issue 17: output through the LLM tool — the character budget (head and tail, with a
// marker that says what went), cursors for the output since a read, the linear-time regex
// filter, and redaction before every cut.
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { handleToolCall, type ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, tempDir, until } from './support.js';

// Big enough to hold a 3 MB line and 200 000 lines in memory.
const ctx = perTestRegistry({ maxOutputChars: 8_000_000, maxTotalOutputChars: 40_000_000 });

type Result = Record<string, any>;
const call = (name: string, input: unknown, r: ProcessRegistry = ctx.registry) => handleToolCall(r, name, input) as Promise<Result>;

/** Calls `get` until `ok` holds for its result (at most 10 s), and returns that result. */
async function eventually(get: () => Promise<Result>, ok: (r: Result) => boolean, what: string): Promise<Result> {
  let last: Result = {};
  await until(
    async () => {
      last = await get();
      return ok(last);
    },
    10_000,
    what,
  );
  return last;
}

/** Runs `command` to its end through the tool and returns its session id. */
async function finished(command: string): Promise<string> {
  const s = await call('process_start', { command });
  const w = await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 60_000 });
  expect(w).toMatchObject({ status: 'exited', exit_code: 0 });
  return s.session_id;
}

/** Prints a file the test wrote (exact bytes, no quoting in the command). */
function fileOf(text: string): string {
  const path = join(tempDir(), 'out.txt');
  writeFileSync(path, text);
  return path;
}

const TOKEN = 'sk-proj-' + 'Zq8rT2vX9wY4uP6sN1mK3jH5gF7dS0aLbCe';
/** Pieces of the token that would be part of the secret if they showed. */
const PIECES = [TOKEN.slice(8, 18), TOKEN.slice(-10), TOKEN.slice(14, 24)];

describe('output budget', () => {
  it('a 3 MB single-line log through log comes back within the budget, head and tail, with a marker that says what was cut', async () => {
    const id = await finished(`head -c 3000000 /dev/zero | tr '\\0' a; echo END`);
    const log = await call('process', { action: 'log', session_id: id });
    expect(log).not.toHaveProperty('lines');
    expect(log.text.length).toBeLessThanOrEqual(16_000);
    expect(log.text.startsWith('aaaa')).toBe(true);
    expect(log.text.endsWith('aaEND')).toBe(true);
    expect(log.text).toMatch(/\[… \d+ characters cut here \(line 0, in part\)/);
    expect(log.truncated).toMatchObject({ from_line: 0, to_line: 0, lines: 0 });
    expect(log.truncated.chars).toBeGreaterThan(2_980_000);
    expect(JSON.stringify(log).length).toBeLessThan(17_000);
    // max_chars within limits is honoured; outside them is an error naming it.
    const small = await call('process', { action: 'log', session_id: id, max_chars: 2000 });
    expect(small.text.length).toBeLessThanOrEqual(2000);
    expect(await call('process', { action: 'log', session_id: id, max_chars: 10 })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('max_chars') } });
  }, 60_000);

  it('a 200 000-line log: the page is cut to the budget, and the marker names the lines to read with offset/limit', async () => {
    const id = await finished('seq 1 200000');
    const all = await call('process', { action: 'log', session_id: id, offset: 0, limit: 200_000 });
    expect(all.total_lines).toBe(200_000);
    expect(all.text.length).toBeLessThanOrEqual(16_000);
    expect(all.text.startsWith('1\n2\n3\n')).toBe(true);
    expect(all.text.endsWith('199999\n200000')).toBe(true);
    const { from_line, to_line, lines } = all.truncated;
    expect(lines).toBe(to_line - from_line + 1);
    expect(all.text).toContain(`read them with offset=${from_line} limit=${to_line - from_line + 1}`);
    // What the marker names is exactly what was cut: the head ends before it, the tail starts after it.
    const shown = all.text.split('\n').filter((l: string) => /^\d+$/.test(l)).map(Number);
    expect(shown).toContain(from_line);
    expect(shown).not.toContain(from_line + 1);
    expect(shown).toContain(to_line + 2);
    expect(shown).not.toContain(to_line + 1);
    // offset 0 is the first line; the default page is the last 200 lines.
    expect((await call('process', { action: 'log', session_id: id, offset: 0, limit: 1 })).text).toBe('1');
    expect((await call('process', { action: 'log', session_id: id })).text.split('\n')).toHaveLength(200);
  }, 60_000);

  it('a secret straddling the cut point, and one written in two chunks across it, never shows in part', async () => {
    // The head of a 16 000 budget ends about 7850 characters in: the token sits across it.
    const line = `${'x'.repeat(7830)} ${TOKEN} ${'y'.repeat(30_000)}\n`;
    const one = await finished(`cat ${fileOf(line)}`);
    const split = TOKEN.length / 2;
    const two = await finished(`printf '%s' '${'x'.repeat(7830)} ${TOKEN.slice(0, split)}'; sleep 0.3; printf '%s\\n' '${TOKEN.slice(split)} ${'y'.repeat(30_000)}'`);
    // Inline results of process_start (yield_ms) are cut the same way.
    const inline = await call('process_start', { command: `cat ${fileOf(line)}`, yield_ms: 20_000 });
    expect(inline).toMatchObject({ status: 'exited', exit_code: 0, truncated: { from_line: 0, to_line: 0 } });
    for (const piece of PIECES) expect(inline.output).not.toContain(piece);
    for (const id of [one, two]) {
      for (const input of [{}, { max_chars: 1000 }, { max_chars: 15_900 }, { offset: 0 }, { filter: 'x' }]) {
        const log = await call('process', { action: 'log', session_id: id, ...input });
        expect(log.truncated ?? log.text.length, JSON.stringify(input)).toBeTruthy();
        for (const piece of PIECES) expect(JSON.stringify(log), `${piece} with ${JSON.stringify(input)}`).not.toContain(piece);
      }
    }
  }, 60_000);
});

describe('cursors', () => {
  it('two independent readers following their own cursors each get every line once, while the job writes', async () => {
    const s = await call('process_start', { command: 'for i in $(seq 1 3000); do echo "line $i"; if [ $((i % 500)) = 0 ]; then sleep 0.1; fi; done' });
    const readers = [{ cursor: undefined as string | undefined, seen: [] as string[] }, { cursor: undefined as string | undefined, seen: [] as string[] }];
    let done = false;
    while (!done) {
      for (const [i, reader] of readers.entries()) {
        // The second reader reads with a small budget: more, shorter reads.
        const input = { action: 'poll', session_id: s.session_id, max_chars: i === 0 ? 16_000 : 1000, ...(reader.cursor && { cursor: reader.cursor }) };
        const r = reader.cursor === undefined ? await call('process', { ...input, action: 'log', offset: 0, limit: 1 }) : await call('process', input);
        expect(r.error).toBeUndefined();
        const text: string = r.output ?? r.text;
        if (text !== '') reader.seen.push(...text.split('\n'));
        reader.cursor = r.cursor;
        if (i === 0) done = r.status === 'exited' && !(r.note ?? '').includes('more output follows');
      }
    }
    // The second reader catches up after the job ended.
    for (let more = true; more; ) {
      const r = await call('process', { action: 'log', session_id: s.session_id, cursor: readers[1]!.cursor, max_chars: 1000 });
      if (r.text !== '') readers[1]!.seen.push(...r.text.split('\n'));
      readers[1]!.cursor = r.cursor;
      more = (r.note ?? '').includes('more output follows');
    }
    const expected = Array.from({ length: 3000 }, (_, i) => `line ${i + 1}`);
    for (const reader of readers) expect(reader.seen).toEqual(expected);
  }, 60_000);

  it('a line without its line break yet comes back whole once it grew; an unchanged one does not come back', async () => {
    const s = await call('process_start', { command: "printf 'Password: '; read x; echo \"got $x\"; sleep 30", stdin: true });
    cleanupGroup(s.pid);
    const first = await eventually(() => call('process', { action: 'log', session_id: s.session_id, offset: 0 }), (r) => r.text === 'Password: ', 'the prompt');
    const again = await call('process', { action: 'poll', session_id: s.session_id, cursor: first.cursor });
    expect(again.output).toBe('');
    await call('process', { action: 'submit', session_id: s.session_id, text: 'hunter2-not-a-secret' });
    const next = await eventually(() => call('process', { action: 'poll', session_id: s.session_id, cursor: first.cursor }), (r) => r.output.includes('got'), 'the answer');
    // A pipe does not echo the answer: the prompt's line grew, and comes back whole.
    expect(next.output).toBe('Password: got hunter2-not-a-secret');
    await call('process', { action: 'kill', session_id: s.session_id, grace_ms: 100 });
  }, 30_000);

  it('in a small in-memory tail, a cursor follows its line when the front is dropped, and says so when its line itself was dropped', async () => {
    const { ProcessRegistry } = await import('../dist/index.mjs');
    const r = await ProcessRegistry.open({ maxOutputChars: 4096 });
    try {
      const s = await call('process_start', { command: 'seq 1 500; read a; seq 501 1000; read b; seq 1001 3000; sleep 30', stdin: true }, r);
      cleanupGroup(s.pid);
      const lastIs = (n: number) => until(async () => (await call('process', { action: 'log', session_id: s.session_id, limit: 1 }, r)).text === String(n), 10_000, `line ${n}`);
      await lastIs(500);
      const head = await call('process', { action: 'log', session_id: s.session_id, offset: 0, limit: 500 }, r);
      expect(head.text.split('\n')).toHaveLength(500);
      await call('process', { action: 'submit', session_id: s.session_id, text: '' }, r);
      await lastIs(1000);
      // About 4.4 KB were written: the front moved, line 500 is still held.
      const next = await call('process', { action: 'log', session_id: s.session_id, cursor: head.cursor }, r);
      expect(next.text.split('\n')).toEqual(Array.from({ length: 500 }, (_, i) => String(501 + i)));
      expect(next.note).toBeUndefined();
      await call('process', { action: 'submit', session_id: s.session_id, text: '' }, r);
      await lastIs(3000);
      const after = await call('process', { action: 'log', session_id: s.session_id, cursor: next.cursor }, r);
      expect(after.note).toContain('dropped by the in-memory cap');
      const numbers = after.text.split('\n').map(Number);
      expect(numbers[0]).toBeGreaterThan(1000);
      expect(numbers.at(-1)).toBe(3000);
      await call('process', { action: 'kill', session_id: s.session_id, grace_ms: 0 }, r);
    } finally {
      await r.close();
    }
  }, 30_000);

  it('a forged, cut or other-session cursor is a clear INVALID_ARGUMENT', async () => {
    const a = await finished('echo a');
    const b = await finished('echo b');
    const { cursor } = await call('process', { action: 'log', session_id: a });
    for (const bad of ['nonsense', `${cursor}x`, cursor.slice(0, -3), Buffer.from('1:000000000000:t:0:0:0:0').toString('base64url')]) {
      expect(await call('process', { action: 'log', session_id: a, cursor: bad }), bad).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('cursor') } });
    }
    expect(await call('process', { action: 'poll', session_id: b, cursor })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('another session') } });
    expect(await call('process', { action: 'log', session_id: a, cursor, offset: 0 })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  });

  it('a durable job: the cursor counts lines from the job’s first, across a recovery by another registry', async () => {
    const { ProcessRegistry } = await import('../dist/index.mjs');
    const stateDir = join(tempDir(), 'state');
    const r = await ProcessRegistry.open({ stateDir });
    try {
      const s = await call('process_start', { command: 'seq 1 5' }, r);
      await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 30_000 }, r);
      const head = await call('process', { action: 'log', session_id: s.session_id, offset: 0, limit: 2 }, r);
      expect(head.text).toBe('1\n2');
      await r.close();
      const again = await ProcessRegistry.open({ stateDir });
      try {
        expect(await call('process', { action: 'log', session_id: s.session_id, cursor: head.cursor }, again)).toMatchObject({ text: '3\n4\n5', first_line: 2 });
      } finally {
        await again.close();
      }
    } finally {
      await r.close();
    }
  }, 60_000);
});

describe('filter', () => {
  it('keeps only matching lines, each with its number, in the linear-time engine: (a+)+$ on a long line completes and is right', async () => {
    const text = `${'a'.repeat(50_000)}!\nplain\n${'a'.repeat(40_000)}\nerror: disk full\n`;
    const id = await finished(`cat ${fileOf(text)}`);
    const nested = await call('process', { action: 'log', session_id: id, filter: '(a+)+$', offset: 0, max_chars: 200_000 });
    // Only the third line ends in a run of a's; the first ends with '!'.
    expect(nested.matched_lines).toBe(1);
    expect(nested.text).toBe(`2: ${'a'.repeat(40_000)}`);
    const errors = await call('process', { action: 'log', session_id: id, filter: '^error:', offset: 0 });
    expect(errors).toMatchObject({ text: '3: error: disk full', matched_lines: 1, lines_read: 4 });
    expect(await call('process', { action: 'log', session_id: id, filter: '(?=x)' })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('filter') } });
    expect(await call('process', { action: 'poll', session_id: id, filter: 'x' })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  }, 30_000);

  it('with a cursor, a filter returns the matching lines since it, and the cursor moves past the lines read', async () => {
    const id = await finished('seq 1 100');
    const first = await call('process', { action: 'log', session_id: id, offset: 0, limit: 50 });
    const tens = await call('process', { action: 'log', session_id: id, cursor: first.cursor, filter: '0$' });
    expect(tens.text).toBe('59: 60\n69: 70\n79: 80\n89: 90\n99: 100');
    expect((await call('process', { action: 'log', session_id: id, cursor: tens.cursor })).text).toBe('');
  });
});
