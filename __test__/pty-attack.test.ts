// Attacks on the PTY terminal emulator and the plain view (issue 16 item 2), fixed: a job
// flooding its terminal with sequences that cost far more to draw than to send does not
// starve the other PTY jobs; a token wrapped over rows of the screen is masked on every row;
// a control string (DCS, APC, OSC, ...) between two halves of a token is removed whole, so
// the plain view shows the token whole and redaction masks it. Real PTY jobs throughout.
import { describe, expect, it } from 'vitest';
import { handleToolCall } from '../dist/index.mjs';
import { perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

/** A python3 job writing `chunk` (a Python bytes literal) to its PTY forever. */
const floodOf = (chunk: string) => `python3 -c "
import os
while True: os.write(1, ${chunk})"`;

describe('a terminal flood does not starve the other PTY jobs', () => {
  it.each([
    ['REP (x ESC[65535b)', "b'x\\x1b[65535b'"],
    ['insert lines and erase in display (ESC[999L ESC[2J)', "b'y\\x1b[999L\\x1b[2J'"],
  ])('%s on a 512x256 PTY: another PTY job still gets its cursor-position answer', async (_what, chunk) => {
    const flood = await ctx.start(floodOf(chunk), { pty: { cols: 512, rows: 256 } });
    try {
      // The flood is being drawn (and screen() returns while it goes on).
      await until(async () => (await ctx.registry.screen(flood.id)).pendingBytes > 0, 60_000, 'the flood queued faster than it is drawn');
      // read -t 60: a condition to wait for, not a margin; with no turns it never came.
      const p = await ctx.start(`printf '\\033[6n'; if IFS= read -rs -t 60 -d R reply; then echo ANSWERED; else echo NO-ANSWER; fi`, { pty: { cols: 80, rows: 24 } });
      const w = await ctx.registry.wait(p.id, { timeoutMs: 90_000 });
      expect(w.outputPreview).toContain('ANSWERED');
      const s = await ctx.registry.screen(flood.id);
      expect(s.lines[0]).toMatch(/^[xy]|^$/);
      expect(s.rows).toBe(256);
    } finally {
      await ctx.registry.kill(flood.id, { graceMs: 0 });
    }
  }, 180_000);
});

// A JWT longer than a row is drawn wrapped over several rows.
const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
const OPENAI = 'sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i';

describe('screen redaction of wrapped tokens (issue 16 item 2)', () => {
  it.each([
    ['a JWT wrapped over several rows', `echo "${JWT}"`, JWT, 'SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV'],
    ['an OpenAI key that starts four cells before the end of a row', `printf '%035d ${OPENAI}\\n' 0`, OPENAI, 'Ab3dEf6hIj9kLm2nOp5qRs8tUv1w'],
  ])('%s is masked on every row, as in the log', async (_what, command, token, secret) => {
    const s = await ctx.start(`${command}; sleep 30`, { pty: { cols: 40, rows: 10 } });
    let screen = await ctx.registry.screen(s.id);
    await until(async () => {
      screen = await ctx.registry.screen(s.id);
      return screen.lines.join('').includes(token.slice(-4));
    }, 20_000, 'the token on screen');
    const log = await ctx.registry.readLog(s.id, {});
    expect(log.text).not.toContain(secret);
    expect(screen.lines.join('')).not.toContain(secret);
    for (const row of screen.lines) expect(token.includes(row) && row.length >= 8 && !token.startsWith(row)).toBe(false);
    // The token's line still starts where it did, and every row keeps its place.
    expect(screen.lines).toHaveLength(10);
    expect(screen.wrapped[0]).toBe(true);
    await ctx.registry.kill(s.id, { graceMs: 0 });
  });

  it('a long line without a secret keeps its rows as drawn, marked wrapped', async () => {
    const s = await ctx.start(`printf '%s' ${'abcdefghij'.repeat(9)}; echo; sleep 30`, { pty: { cols: 40, rows: 5 } });
    await until(async () => (await ctx.registry.screen(s.id)).lines[2] === 'abcdefghij', 20_000, 'the line on screen');
    const screen = await ctx.registry.screen(s.id);
    expect(screen.lines.slice(0, 3)).toEqual(['abcdefghij'.repeat(4), 'abcdefghij'.repeat(4), 'abcdefghij']);
    expect(screen.wrapped).toEqual([true, true, false, false, false]);
    expect(screen.pendingBytes).toBe(0);
    await ctx.registry.kill(s.id, { graceMs: 0 });
  });
});

describe('plain view strips control strings whole', () => {
  const TOKEN = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
  const [HEAD, TAIL] = [TOKEN.slice(0, 20), TOKEN.slice(20)];
  it.each([
    ['a DCS string (ESC P ... ESC \\)', `\\033P1$r\\033\\\\`],
    ['an APC string (ESC _ ... ESC \\)', `\\033_Gi=1;AAAA\\033\\\\`],
    ['an OSC title ended by BEL', `\\033]0;title\\007`],
    ['a C1 DCS string (U+0090 ... U+009C)', `\\302\\220q#0\\302\\234`],
  ])("%s between the halves of a token: the tool's output masks the token whole", async (_what, string) => {
    const command = `printf '${HEAD}${string}${TAIL}\\n'`;
    const r = (await handleToolCall(ctx.registry, 'process_start', { command, yield_ms: 5000 })) as { output: string };
    expect(r.output).toContain('ghp_A1…Q7r8'); // the line is there, masked
    expect(r.output).not.toContain(HEAD);
    expect(r.output).not.toContain(TAIL);
    expect(r.output).not.toMatch(/1\$r|AAAA|title|q#0/);
  });

  it('an unterminated DCS string hides what a terminal would hide, and no more than 4096 characters', async () => {
    const r = (await handleToolCall(ctx.registry, 'process_start', {
      command: `printf 'before\\033Psecret-body'; echo; printf 'x\\033P%05000dafter\\n' 0`,
      yield_ms: 5000,
    })) as { output: string };
    expect(r.output).toContain('before');
    expect(r.output).not.toContain('secret-body');
    expect(r.output).toContain('after');
  });
});
