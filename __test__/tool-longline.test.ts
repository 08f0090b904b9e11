// Issue 28, kind 2: a reader following cursors reaches the newest output whatever the length
// of a line. A line longer than a result holds is returned in parts, the cursor inside it at
// its column, each part's note saying which characters it holds and how to read on; nothing
// is returned twice and nothing is skipped.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, tempDir, until } from './support.js';

const ctx = perTestRegistry();

type Read = { output?: string; output_preview?: string; text?: string; cursor: string; note?: string; status: string };

/**
 * Follows cursors with `action` from `cursor` until a read brings nothing: the parts read,
 * each with a line break after it unless its note says its line goes on, and the notes.
 */
async function follow(r: ProcessRegistry, id: string, action: 'poll' | 'log', cursor: string, maxChars: number): Promise<{ body: string; notes: string[]; cursor: string }> {
  let body = '';
  const notes: string[] = [];
  for (let i = 0; i < 100; i++) {
    const got = (await handleToolCall(r, 'process', { action, session_id: id, cursor, max_chars: maxChars })) as Read;
    const text = (action === 'poll' ? got.output : got.text) ?? '';
    cursor = got.cursor;
    if (text === '') return { body, notes, cursor };
    notes.push(got.note ?? '');
    body += text + ((got.note ?? '').includes('which goes on for') ? '' : '\n');
  }
  throw new Error(`no end after 100 reads: ${JSON.stringify(notes.slice(-3))}`);
}

describe('cursors reach the newest output past a line longer than a result', () => {
  it('the report: a poll, then cursor polls through an 89 990-character line reach TAILMARK, every part once', async () => {
    const s = await ctx.registry.spawn("head -c 89990 /dev/zero | tr '\\0' a; printf TAILMARK");
    cleanupGroup(s.pid);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    const first = (await handleToolCall(ctx.registry, 'process', { action: 'poll', session_id: s.id, max_chars: 20_000 })) as Read;
    const { body, notes } = await follow(ctx.registry, s.id, 'poll', first.cursor, 20_000);
    expect(body).toBe(`${'a'.repeat(89990)}TAILMARK\n`);
    expect(notes.slice(0, 4)).toEqual([1, 20001, 40001, 60001].map((from) => expect.stringMatching(new RegExp(`^this is characters ${from}-${from + 19999} of line 0, which goes on for \\d+ more characters: call again with this cursor`))));
  });

  it('poll and log after a first line: a long line and the lines after it arrive whole and once, in memory and durable', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      for (const durable of [false, true]) {
        const s = await r.spawn("printf 'first\\n'; head -c 70001 /dev/zero | tr '\\0' b; printf 'END\\nafter1\\nafter2\\n'", { durable });
        cleanupGroup(s.supervisorPid ?? s.pid);
        await r.wait(s.id, { timeoutMs: 20_000 });
        for (const action of ['poll', 'log'] as const) {
          const start = (await handleToolCall(r, 'process', { action: 'log', session_id: s.id, offset: 0, limit: 1, max_chars: 10_000 })) as Read;
          expect(start.text).toBe('first');
          const { body, notes } = await follow(r, s.id, action, start.cursor, 10_000);
          expect(body, `${durable ? 'durable' : 'in memory'} ${action}`).toBe(`${'b'.repeat(70001)}END\nafter1\nafter2\n`);
          expect(notes[0]).toMatch(/^this is characters 1-10000 of line 1, which goes on for 60004 more characters: call again with this cursor/);
          expect(notes.filter((n) => n.includes('which goes on for'))).toHaveLength(7);
        }
      }
    } finally {
      await r.close();
    }
  });

  it('a long line still growing (no line break yet) goes on from its column; a character of two UTF-16 units is never split', async () => {
    const gate = join(tempDir(), 'gate');
    const s = await ctx.registry.spawn(`head -c 30000 /dev/zero | tr '\\0' c; for i in $(seq 1 30); do printf '🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉'; done; while [ ! -e ${gate} ]; do sleep 0.05; done; printf 'dd\\nnext\\n'`);
    cleanupGroup(s.pid);
    await until(async () => ((await ctx.registry.readLog(s.id, { view: 'raw' })).text.match(/🎉/g) ?? []).length === 3000, 10_000, 'the line so far');
    const first = (await handleToolCall(ctx.registry, 'process', { action: 'poll', session_id: s.id, max_chars: 7001 })) as Read;
    const before = await follow(ctx.registry, s.id, 'poll', first.cursor, 7001);
    writeFileSync(gate, '');
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    const after = await follow(ctx.registry, s.id, 'poll', before.cursor, 7001);
    const parts = before.body + after.body;
    // Line breaks aside (a growing line's part ends where the line ended then), every
    // character once, in order.
    expect(parts.replace(/\n/g, '')).toBe(`${'c'.repeat(30000)}${'🎉'.repeat(3000)}ddnext`);
    expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(before.body.replace(/\n/g, '') + after.body.replace(/\n/g, ''))).toBe(false);
    for (const part of [...before.body.split('\n'), ...after.body.split('\n')]) expect(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/.test(part)).toBe(false);
  });
});

// Issue 28, kind 12: choices kept or changed, as the closing note says.
describe('choices of kind 12', () => {
  it('a cursor read that leaves lines for later says how many and where the newest output is', async () => {
    const s = await ctx.registry.spawn('seq 1 3000');
    cleanupGroup(s.pid);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    const start = (await handleToolCall(ctx.registry, 'process', { action: 'log', session_id: s.id, offset: 0, limit: 1, max_chars: 1000 })) as Read;
    const next = (await handleToolCall(ctx.registry, 'process', { action: 'poll', session_id: s.id, cursor: start.cursor, max_chars: 1000 })) as Read & { first_line: number; lines_read: number };
    const after = 3000 - next.first_line - next.lines_read;
    expect(next.note).toContain(`more output follows: call again with this cursor (${after} lines after this read; a poll without a cursor shows the newest output)`);
  });

  it('submit without text is Enter alone', async () => {
    const s = await ctx.registry.spawn('read x; echo "got[$x]"', { stdin: true });
    cleanupGroup(s.pid);
    expect(await handleToolCall(ctx.registry, 'process', { action: 'submit', session_id: s.id })).not.toHaveProperty('error');
    expect(await ctx.registry.wait(s.id, { timeoutMs: 10_000 })).toMatchObject({ exitCode: 0, outputPreview: 'got[]\n' });
  });
});
