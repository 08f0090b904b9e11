// Adversarial findings against issues 16 item 2, 17 and 18 (attack of 2026-12-01).
//
// KNOWN BUGS, written as `it.fails`: each test states the RIGHT behaviour, and vitest
// reports it as passing only while the bug is still there. When a bug is fixed, its test
// starts failing: turn `it.fails` into `it` then. Reproductions are in the comments.
import { describe, expect, it } from 'vitest';
import { handleToolCall } from '../dist/index.mjs';
import { perTestRegistry } from './support.js';

const ctx = perTestRegistry();

describe('plain view and preview redaction of terminal-drawn tokens', () => {
  // What a person sees on the terminal is the whole token; the plain view (previews, the
  // tool's output, readLog) shows both halves, each too short to look like a token.
  // Cursor addressing (CHA/CUP) drawing the second half first: ts/output/views.ts plainText
  // only removes escapes: a byte-stream view cannot know where the cursor drew. (A DCS string
  // between the halves is fixed; its test is in pty-attack.test.ts.)
  const TOKEN = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
  const [HEAD, TAIL] = [TOKEN.slice(0, 20), TOKEN.slice(20)];
  const drawn = {
    'second half drawn first (CHA)': `printf '\\033[21G${TAIL}\\033[1G${HEAD}\\n'`,
  };
  for (const [what, command] of Object.entries(drawn)) {
    it.fails(`${what}: the tool's output does not hold both halves (BUG: it does)`, async () => {
      const r = (await handleToolCall(ctx.registry, 'process_start', { command, yield_ms: 5000 })) as { output: string };
      expect(r.output).toContain('I9j0'); // the line is there
      expect(r.output.includes(HEAD) && r.output.includes(TAIL)).toBe(false);
    });
  }
});
