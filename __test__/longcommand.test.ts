// DESIGN section 4 (issue 16 item 5): a command of any reasonable size runs. Over 64 KiB
// it reaches the shell through an inherited descriptor (never a file, never stdin); at most
// 1 MiB, and past that the error names the limit.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, tempDir } from './support.js';

const LIMIT = 1024 * 1024;

const ctx = perTestRegistry();

/** About `bytes` bytes of every character a quoted heredoc passes but NUL: controls, quotes, `$`, backslashes, newlines, multi-byte. */
function binaryish(bytes: number): string {
  const alphabet = [...Array.from({ length: 0x7f }, (_, i) => String.fromCharCode(i + 1)), '\u00a0', 'é', 'α', '€', '😀'];
  const out: string[] = [];
  for (let i = 0, n = 0; n < bytes; i = (i * 31 + 7) % 100_003) {
    const c = alphabet[i % alphabet.length] as string;
    out.push(c);
    n += Buffer.byteLength(c);
  }
  return out.join('');
}

/** A heredoc that writes `payload` to `file`, then says `done`. */
const heredoc = (file: string, payload: string) => `cat > '${file}' <<'PROCWARD_END'\n${payload}\nPROCWARD_END\necho done\n`;

describe('long commands', () => {
  it('a 200 KB heredoc of quotes, newlines and binary-ish bytes runs byte for byte, in pipe and PTY jobs', async () => {
    const dir = tempDir();
    const payload = binaryish(200 * 1024);
    for (const [name, opts] of [
      ['pipe', {}],
      ['pty', { pty: { cols: 80, rows: 24 } }],
    ] as const) {
      const file = join(dir, name);
      const s = await ctx.start(heredoc(file, payload), opts);
      const w = await ctx.registry.wait(s.id, { timeoutMs: 20_000 });
      expect(w).toMatchObject({ status: 'exited', exitCode: 0 });
      expect(w.outputPreview).toContain('done');
      expect(readFileSync(file, 'utf8')).toBe(`${payload}\n`);
    }
  });

  it('dash takes a long command too', async () => {
    const dir = tempDir();
    const registry = await ProcessRegistry.open({ shell: '/bin/dash' });
    try {
      const payload = binaryish(100 * 1024);
      const s = await registry.spawn(heredoc(join(dir, 'out'), payload));
      cleanupGroup(s.pid);
      const w = await registry.wait(s.id, { timeoutMs: 20_000 });
      expect(w).toMatchObject({ exitCode: 0, outputPreview: 'done\n' });
      expect(readFileSync(join(dir, 'out'), 'utf8')).toBe(`${payload}\n`);
    } finally {
      await registry.close();
    }
  });

  it('a durable job gets it through its supervisor, and the command is not written unredacted', async () => {
    const state = tempDir();
    const registry = await ProcessRegistry.open({ stateDir: state });
    try {
      const payload = binaryish(200 * 1024);
      const secret = 'ghp_0123456789abcdefghijABCDEFGHIJ012345';
      const s = await registry.spawn(`${heredoc(join(state, 'out'), payload)}: token=${secret}\n`, { durable: true });
      cleanupGroup(s.pid);
      const w = await registry.wait(s.id, { timeoutMs: 20_000 });
      expect(w).toMatchObject({ exitCode: 0, outputPreview: 'done\n' });
      expect(readFileSync(join(state, 'out'), 'utf8')).toBe(`${payload}\n`);
      expect(readFileSync(join(state, 'sessions', s.id, 'session.json'), 'utf8')).not.toContain(secret);
    } finally {
      await registry.close();
    }
  });

  it('exactly 1 MiB runs; one byte more is INVALID_ARGUMENT naming the limit, before anything starts', async () => {
    const head = 'echo ran\n#';
    const at = head + 'z'.repeat(LIMIT - head.length);
    expect(Buffer.byteLength(at)).toBe(LIMIT);
    const s = await ctx.start(at);
    expect(await ctx.registry.wait(s.id, { timeoutMs: 20_000 })).toMatchObject({ exitCode: 0, outputPreview: 'ran\n' });
    const err = await ctx.registry.spawn(`${at}z`).catch((e) => e);
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(err.message).toContain('1048577 bytes long; procward takes at most 1048576');
    expect(await ctx.registry.list()).toHaveLength(1);
  });
});
