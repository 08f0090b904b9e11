// Streaming a durable log whole, page after page (issue 14): each page starts where the
// last one ended (a line start the index remembers), every line comes once, and redaction
// holds across page and slice boundaries as it does over the whole text.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry, redact } from '../dist/index.mjs';
import { cleanupGroup, tempDir } from './support.js';

/** Every page of a session's log from line 0, each starting where the last ended. */
async function streamed(r: ProcessRegistry, id: string, opts: { maxBytes?: number; view?: 'plain' | 'raw'; limit?: number } = {}) {
  const lines: string[] = [];
  let pages = 0;
  for (let offset = 0; ; pages++) {
    const page = await r.readLog(id, { offset, limit: opts.limit ?? 1e9, ...opts });
    expect(page.offset).toBe(offset);
    expect(page.text).toBe(page.lines.join('\n'));
    if (opts.maxBytes !== undefined) expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(opts.maxBytes);
    lines.push(...page.lines);
    offset += page.lines.length;
    if (page.lines.length === 0 || offset >= page.totalLines) return { lines, pages, totalLines: page.totalLines };
  }
}

/** Runs `body` with a registry on a state directory in `dir`, closed after it. */
async function withRegistry(dir: string, options: { logMaxBytes?: number }, body: (r: ProcessRegistry) => Promise<void>) {
  const r = await ProcessRegistry.open({ stateDir: join(dir, 'state'), ...options });
  try {
    await body(r);
  } finally {
    await r.close();
  }
}

/** Small pages (2 lines, 1 KiB cap) at `offsets` show only masked key lines. */
async function expectKeyMasked(r: ProcessRegistry, id: string, offsets: number[]) {
  for (const offset of offsets) {
    const page = await r.readLog(id, { offset, limit: 2, maxBytes: 1024 });
    expect(page.lines, `offset ${offset}`).toEqual(Array(2).fill('[REDACTED PRIVATE KEY]'));
  }
}

/** A fake private key body: `n` lines of 64 base64 characters. */
function keyBody(n: number): string[] {
  return Array.from({ length: n }, (_, i) => Buffer.from(`key line ${i} `.repeat(6)).toString('base64').slice(0, 64));
}

/** Build output with tokens, URL passwords and a private key that spans many small pages. */
function output(): { text: string; secrets: string[]; body: string[] } {
  const body = keyBody(400);
  const secrets: string[] = [];
  const out: string[] = [];
  for (let i = 0; i < 30_000; i++) {
    if (i % 997 === 5) {
      const token = `ghp_${String(i).padStart(6, '0')}${'Ab3'.repeat(10)}`;
      secrets.push(token);
      out.push(`push with ${token} done`);
    } else if (i % 1499 === 7) {
      const pw = `pw${i}Zq9xLm`;
      secrets.push(pw);
      out.push(`connect postgres://deploy:${pw}@db.internal:5432/app`);
    } else if (i === 20_000) {
      out.push('-----BEGIN OPENSSH PRIVATE KEY-----', ...body, '-----END OPENSSH PRIVATE KEY-----');
    } else out.push(`step ${i} compiled src/module/file${i % 50}.ts ok`);
  }
  return { text: `${out.join('\n')}\n`, secrets, body };
}

describe('streaming a durable log page after page', () => {
  it('gives every line once, redacted exactly as the whole text is, at any page size and in both views', async () => {
    const dir = tempDir();
    const { text, secrets, body } = output();
    writeFileSync(join(dir, 'out.txt'), text);
    await withRegistry(dir, {}, async (r) => {
      const s = await r.spawn(`cat ${join(dir, 'out.txt')}`);
      cleanupGroup(s.pid);
      expect((await r.wait(s.id, { timeoutMs: 60_000 })).exitCode).toBe(0);
      const whole = redact(text).split('\n').slice(0, -1);
      expect(whole.filter((l) => l === '[REDACTED PRIVATE KEY]')).toHaveLength(402);
      // 300 bytes: thousands of pages, many inside the key with its BEGIN pages behind them;
      // 1 MiB (the default): a page redacted in many 64 KiB slices.
      for (const [maxBytes, view] of [[300, 'raw'], [4096, 'plain'], [undefined, 'raw'], [undefined, 'plain']] as const) {
        const got = await streamed(r, s.id, { ...(maxBytes !== undefined && { maxBytes }), view });
        expect(got.totalLines).toBe(whole.length);
        expect(got.lines.length, `maxBytes ${maxBytes} ${view}`).toBe(whole.length);
        expect(got.lines, `maxBytes ${maxBytes} ${view}`).toEqual(whole);
        expect(got.pages).toBeGreaterThan(maxBytes === undefined ? 0 : 100);
        const joined = got.lines.join('\n');
        expect(secrets.filter((x) => joined.includes(x))).toEqual([]);
        expect(body.filter((l) => joined.includes(l.slice(8, 40)))).toEqual([]);
      }
      // A page limited by lines rather than bytes, as the CLI's wait asks for them.
      expect((await streamed(r, s.id, { limit: 7000 })).lines).toEqual(whole);
    });
  }, 120_000);

  it('a key whose BEGIN marker straddles two reads of the index pass still masks pages far inside it', async () => {
    const dir = tempDir();
    const body = keyBody(200);
    // 'PRIVATE KEY' (at 19 in the BEGIN line) starts 5 bytes before 1 MiB, where the
    // index's first read ends.
    const filler = `${Array(10_485).fill('a'.repeat(99)).join('\n')}\n${'b'.repeat(51)}\n`;
    expect(Buffer.byteLength(filler) + 19).toBe(1024 * 1024 - 5);
    writeFileSync(join(dir, 'out.txt'), `${filler}-----BEGIN OPENSSH PRIVATE KEY-----\n${body.join('\n')}\n-----END OPENSSH PRIVATE KEY-----\ndone\n`);
    await withRegistry(dir, {}, async (r) => {
      const s = await r.spawn(`cat ${join(dir, 'out.txt')}`);
      cleanupGroup(s.pid);
      expect((await r.wait(s.id, { timeoutMs: 60_000 })).exitCode).toBe(0);
      expect((await r.readLog(s.id, { limit: 1 })).lines).toEqual(['done']);
      // Lines 10 487 on are the body: 100 lines in, the BEGIN is far beyond the page's context.
      await expectKeyMasked(r, s.id, [10_487 + 100, 10_487 + 190]);
    });
  }, 60_000);

  it('a BEGIN marker split across a page read while the job wrote it still masks the key', async () => {
    const dir = tempDir();
    const gate = join(dir, 'gate');
    writeFileSync(join(dir, 'body.txt'), `${keyBody(200).join('\n')}\n`);
    await withRegistry(dir, {}, async (r) => {
      // The index is extended from where the first page left it: inside 'PRIVATE KEY'.
      const s = await r.spawn(
        `seq 1 1000; printf -- '-----BEGIN OPENSSH PRIV'; while [ ! -e ${gate} ]; do sleep 0.02; done; echo 'ATE KEY-----'; cat ${join(dir, 'body.txt')}; echo '-----END OPENSSH PRIVATE KEY-----'; echo done`,
      );
      cleanupGroup(s.pid);
      let first = await r.readLog(s.id, { limit: 1 });
      for (let i = 0; i < 200 && !first.text.endsWith('PRIV'); i++) {
        await new Promise((res) => setTimeout(res, 20));
        first = await r.readLog(s.id, { limit: 1 });
      }
      expect(first.lines).toEqual(['-----BEGIN OPENSSH PRIV']);
      writeFileSync(gate, '');
      expect((await r.wait(s.id, { timeoutMs: 30_000 })).exitCode).toBe(0);
      await expectKeyMasked(r, s.id, [1000 + 100, 1000 + 198]);
    });
  }, 60_000);

  it('pages read while the log grows and rotates each hold the lines their offset names', async () => {
    const dir = tempDir();
    await withRegistry(dir, { logMaxBytes: 512 * 1024 }, async (r) => {
      // seq prints line k as the number k: line `offset` of the kept log is droppedLines + offset + 1.
      const s = await r.spawn('for i in $(seq 0 39); do seq $((i * 10000 + 1)) $((i * 10000 + 10000)); sleep 0.02; done');
      cleanupGroup(s.pid);
      let offset = 0;
      let checked = 0;
      for (let running = true; running; ) {
        running = (await r.poll(s.id)).status === 'running';
        const page = await r.readLog(s.id, { offset, limit: 1e9, maxBytes: 16 * 1024 });
        const dropped = page.droppedLines ?? 0;
        // The log's last line may still be being written: a page may end with its first bytes.
        let partial = 0;
        page.lines.forEach((line, k) => {
          const want = String(dropped + page.offset + k + 1);
          if (k === page.lines.length - 1 && page.offset + k === page.totalLines - 1 && line !== want && want.startsWith(line)) partial = 1;
          else expect(line, `line ${page.offset + k} with ${dropped} dropped`).toBe(want);
        });
        checked += page.lines.length - partial;
        // The next page starts where this one ended, or at its partial line (a rotation moves
        // what that offset names, and the check above still holds for it).
        offset = page.lines.length > 0 ? page.offset + page.lines.length - partial : Math.max(0, page.totalLines - 1);
      }
      expect(checked).toBeGreaterThan(10_000);
      const end = await r.readLog(s.id, { limit: 3 });
      expect(end.lines).toEqual(['399998', '399999', '400000']);
      expect(end.droppedLines ?? 0).toBeGreaterThan(0);
    });
  }, 120_000);
});
