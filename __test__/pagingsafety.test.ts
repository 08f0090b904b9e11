// Durable log pages under attack (issue 14 follow-up): a line longer than the page's byte
// cap is redacted before it is cut (DESIGN section 11), the cut marker counts bytes
// exactly, rotation under a page is a race and never an error, a log rewritten in place is
// indexed again, and the CLI takes the LLM tool's byte cap.
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync, statSync, truncateSync, utimesSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, cli, tempDir } from './support.js';

const MIB = 1024 * 1024;

/** A finished job that printed `text` (from a file, so the bytes are exact), and its log's path. */
async function printed(r: ProcessRegistry, stateDir: string, text: string, opts: Record<string, unknown> = {}): Promise<{ id: string; log: string }> {
  const file = join(tempDir(), 'out.txt');
  writeFileSync(file, text);
  const s = await r.spawn(`cat ${file}`, opts);
  cleanupGroup(s.pid);
  expect((await r.wait(s.id, { timeoutMs: 60_000 })).exitCode).toBe(0);
  return { id: s.id, log: join(stateDir, 'sessions', s.id, 'output.log') };
}

/** Whether any `width` characters of `secret` in a row show in `text`. */
function shows(text: string, secret: string, width = 10): boolean {
  for (let k = 0; k + width <= secret.length; k++) if (text.includes(secret.slice(k, k + width))) return true;
  return false;
}

/** The marker a cut line ends with, and the bytes it says were cut (undefined: not cut). */
function cutCount(line: string): { head: string; bytes: number } | undefined {
  const m = / \[… (\d+) more bytes of this line cut\]$/.exec(line);
  return m ? { head: line.slice(0, line.length - m[0].length), bytes: Number(m[1]) } : undefined;
}

// Each kind of secret, and the part of it that must never show.
const SECRETS: { kind: string; text: string; core: string }[] = [
  { kind: 'URL credentials', text: `postgres://admin:${'Sup3rS3cretPassw0rd'.repeat(3)}@db.example.com/app`, core: 'Sup3rS3cretPassw0rd'.repeat(3) },
  { kind: 'URL credentials (redis)', text: 'redis://default:f3a9c1d7e5b2049a8c6e1f3b5d7a9c0e2f4a6b8c0d1e3f5a7b9c1d3e5f7a9b1c@cache.internal:6379/0', core: 'f3a9c1d7e5b2049a8c6e1f3b5d7a9c0e2f4a6b8c0d1e3f5a7b9c1d3e5f7a9b1c' },
  {
    kind: 'JWT',
    text: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
    core: 'eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
  },
  { kind: 'bearer token', text: `Authorization: Bearer ${'abcDEF123456'.repeat(8)}`, core: 'abcDEF123456'.repeat(8) },
  { kind: 'key=value secret', text: `DB_PASSWORD=${'Hunter2Secret'.repeat(6)}`, core: 'Hunter2Secret'.repeat(6) },
  {
    kind: 'private key block in a JSON string',
    text: `{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\\n${'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC'.repeat(20)}\\n-----END PRIVATE KEY-----\\n","client_email":"x@y.iam.gserviceaccount.com"}`,
    core: 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC'.repeat(2),
  },
];

describe('DESIGN 11: a durable page redacts a line longer than its cap before it cuts it', () => {
  it('a secret of each kind straddling the cut is masked, and the page is the one an in-memory tail gives', async () => {
    const stateDir = join(tempDir(), 'state');
    const r = await ProcessRegistry.open({ stateDir });
    const mem = await ProcessRegistry.open({ maxOutputChars: 4 * MIB });
    const maxBytes = 256;
    try {
      // The secret starts before the visible room ends, the cut at every 7th character of it.
      const lines: { kind: string; core: string; line: string }[] = [];
      for (const { kind, text, core } of SECRETS) {
        for (let shift = 10; shift < Math.min(text.length, 200); shift += 7) {
          const start = maxBytes - 45 - shift;
          if (start >= 0) lines.push({ kind, core, line: `${'x'.repeat(start)} ${text} ${'y'.repeat(400)}` });
        }
      }
      const content = `${lines.map((l) => l.line).join('\n')}\nend\n`;
      const durable = await printed(r, stateDir, content);
      const inMemory = await printed(mem, stateDir, content, { durable: false });
      for (const [i, { kind, core }] of lines.entries()) {
        const page = await r.readLog(durable.id, { offset: i, limit: 1, maxBytes });
        expect(shows(page.text, core), `${kind}, line ${i}: ${page.text.slice(-120)}`).toBe(false);
        expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(maxBytes);
        expect(page.text).toBe((await mem.readLog(inMemory.id, { offset: i, limit: 1, maxBytes })).text);
      }
    } finally {
      await r.close();
      await mem.close();
    }
  }, 120_000);

  it('a redis password straddling the default 1 MiB cap does not show through the LLM tool', async () => {
    const stateDir = join(tempDir(), 'state');
    const r = await ProcessRegistry.open({ stateDir });
    const secret = SECRETS[1] as { text: string; core: string };
    try {
      for (const back of [60, 70, 80]) {
        const line = `{"cfg":"${'a'.repeat(MIB - back - 30)}","cache":"${secret.text}"}`;
        const { id } = await printed(r, stateDir, `${line}\n`);
        const got = (await handleToolCall(r, 'process', { action: 'log', session_id: id })) as { text: string };
        // The mask keeps 6 characters of a long secret; more would be the secret itself.
        expect(got.text.includes(secret.core.slice(0, 7)), `cut ${back} bytes on: ${got.text.slice(-120)}`).toBe(false);
        expect(Buffer.byteLength(got.text)).toBeLessThanOrEqual(MIB);
      }
    } finally {
      await r.close();
    }
  }, 120_000);

  it('a token longer than the bytes read past the cap is left out, not shown in part; a run of one character stays', async () => {
    const stateDir = join(tempDir(), 'state');
    const r = await ProcessRegistry.open({ stateDir });
    const maxBytes = 1024;
    try {
      // A JWT whose payload runs 100 KB past the cap: its signature is never read. A
      // token-shaped piece inside it (masked) does not end the run.
      const payload = `${randomBytes(5_000).toString('hex')}ghp_${'A1b2C3d4E5'.repeat(4)}${randomBytes(45_000).toString('hex')}`;
      const jwt = `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ${payload}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c`;
      const long = `${'word '.repeat(100)}payload ${jwt} done`;
      const dots = '.'.repeat(200_000);
      const { id } = await printed(r, stateDir, `${long}\n${dots}\n`);
      const page = await r.readLog(id, { offset: 0, limit: 1, maxBytes });
      expect(shows(page.text, jwt.slice(0, 60))).toBe(false);
      const cut = cutCount(page.text);
      expect(cut?.head).toBe(`${'word '.repeat(100)}payload `);
      // The marker counts the line as redacted (the mask is shorter than the token it hides),
      // and at least the bytes never read (past the cap and the 64 KiB margin).
      const raw = Buffer.byteLength(long) - Buffer.byteLength(cut?.head ?? '');
      expect(cut?.bytes).toBeLessThan(raw);
      expect(cut?.bytes).toBeGreaterThanOrEqual(Buffer.byteLength(long) - maxBytes - 64 * 1024);
      const dotted = cutCount((await r.readLog(id, { offset: 1, limit: 1, maxBytes })).text);
      expect(dotted?.head.length).toBeGreaterThan(maxBytes - 60);
      expect(dotted?.bytes).toBe(dots.length - (dotted?.head.length ?? 0));
    } finally {
      await r.close();
    }
  }, 60_000);
});

describe('the cut marker counts the bytes cut exactly', () => {
  it('with a multibyte character at the cut, whether the line is read whole or in part', async () => {
    const stateDir = join(tempDir(), 'state');
    const r = await ProcessRegistry.open({ stateDir });
    const M = 300;
    try {
      const lines: string[] = [];
      for (const ch of ['é', '€', '😀']) {
        for (let pad = 0; pad < 4; pad++) {
          // Just over the cap (read whole), and 70 KB over it (read in part: past the 64 KiB margin).
          for (const target of [M + 1, M + 2, M + 60, M + 70_000]) {
            let s = 'x'.repeat(pad);
            s += ch.repeat(Math.floor((target - pad) / Buffer.byteLength(ch)));
            lines.push(s + 'y'.repeat(target - Buffer.byteLength(s)));
          }
        }
      }
      const { id } = await printed(r, stateDir, `${lines.join('\n')}\n`);
      for (const [i, line] of lines.entries()) {
        const page = await r.readLog(id, { offset: i, limit: 1, maxBytes: M });
        expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(M);
        expect(page.text).not.toContain('\uFFFD');
        const cut = cutCount(page.text);
        expect(cut, `line ${i}`).toBeDefined();
        expect(line.startsWith(cut?.head ?? '\0'), `line ${i}`).toBe(true);
        expect(cut?.bytes, `line ${i}`).toBe(Buffer.byteLength(line) - Buffer.byteLength(cut?.head ?? ''));
      }
    } finally {
      await r.close();
    }
  }, 60_000);
});

describe('a log rotated under a page', () => {
  it('pages never throw while a job floods a small log, and leave no file handle to garbage collection', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    const stateDir = join(tempDir(), 'state');
    const r = await ProcessRegistry.open({ stateDir, logMaxBytes: 4096 });
    const line = '0123456789abcdefghijklmnopqrstuvwxyz';
    try {
      const s = await r.spawn(`yes ${line}`);
      cleanupGroup(s.pid);
      const errors: string[] = [];
      let torn = 0;
      for (let i = 0; i < 150; i++) {
        for (const opts of [{ limit: 50 }, { offset: 0, limit: 30 }, { limit: 20, maxBytes: 300 }]) {
          try {
            const page = await r.readLog(s.id, opts);
            // The job may be inside a line: only the last line of a page from the end may be short.
            const whole = opts.offset === undefined ? page.lines.slice(0, -1) : page.lines;
            torn += whole.filter((l: string) => l !== line).length;
          } catch (err) {
            errors.push(`${(err as { code?: string }).code}: ${(err as Error).message}`);
          }
        }
      }
      expect((await r.list()).find((x: { id: string }) => x.id === s.id)?.status, 'the job still floods the log').toBe('running');
      expect(errors).toEqual([]);
      expect(torn).toBe(0);
      await r.kill(s.id);
    } finally {
      await r.close();
    }
    gc();
    await new Promise((res) => setTimeout(res, 50));
    process.off('warning', onWarning);
    expect(warnings.filter((w) => w.includes('garbage collection'))).toEqual([]);
  }, 120_000);
});

describe('the line index of a log rewritten in place', () => {
  const numbered = (n: number, width: number) => `${Array.from({ length: n }, (_, i) => `line ${i}`.padEnd(width, '.')).join('\n')}\n`;
  /** The log's lines as the file holds them. */
  const onDisk = (log: string) => readFileSync(log, 'utf8').replace(/\n$/, '').split('\n');

  const rewrites: [string, (log: string) => void][] = [
    ['truncated, then written again with longer lines', (log) => {
      truncateSync(log, 0);
      writeFileSync(log, numbered(3000, 10));
    }],
    ['rewritten at the same size with its mtime put back', (log) => {
      const st = statSync(log);
      let s = '';
      for (let i = 0; s.length < st.size; i++) s += `X${i}`.padEnd(7, '-') + '\n';
      const fd = openSync(log, 'r+');
      writeSync(fd, `${s.slice(0, st.size - 1)}\n`, 0);
      closeSync(fd);
      utimesSync(log, st.atime, st.mtime);
    }],
    ['rewritten at the same size', (log) => {
      const size = statSync(log).size;
      const fd = openSync(log, 'r+');
      writeSync(fd, `${'Y'.repeat(9)}\n`.repeat(size / 10 - 1) + 'Y'.repeat(5) + '\n'.repeat(5), 0);
      closeSync(fd);
    }],
    ['cut short in the middle of a line', (log) => truncateSync(log, 10_000)],
  ];
  for (const [what, rewrite] of rewrites) {
    it(`is rebuilt when the log was ${what}`, async () => {
      const stateDir = join(tempDir(), 'state');
      const r = await ProcessRegistry.open({ stateDir });
      try {
        const { id, log } = await printed(r, stateDir, numbered(1000, 20));
        expect((await r.readLog(id, { offset: 900, limit: 5 })).lines[0]).toBe(`line 900`.padEnd(20, '.'));
        rewrite(log);
        const lines = onDisk(log);
        const last = await r.readLog(id, { limit: 5 });
        expect(last.totalLines).toBe(lines.length);
        expect(last.lines).toEqual(lines.slice(-5));
        const mid = await r.readLog(id, { offset: 900, limit: 5 });
        expect(mid.lines).toEqual(lines.slice(900, 905));
      } finally {
        await r.close();
      }
    }, 60_000);
  }
});

describe('log --max-bytes', () => {
  // The CLI streams the whole log page by page (no byte cap to choose); the LLM tool keeps
  // the 256 B to 4 MiB range of a page.
  it('the tool takes 256 to 4 MiB; the CLI has no byte cap and prints the whole log', async () => {
    const stateDir = join(tempDir(), 'state');
    const r = await ProcessRegistry.open({ stateDir });
    const { id } = await printed(r, stateDir, 'hello\n');
    await r.close();
    const cliLog = await cli(['log', id, '--state-dir', stateDir]);
    expect(cliLog).toMatchObject({ code: 0, stdout: 'hello\n' });
    const again = await ProcessRegistry.open({ stateDir });
    try {
      const over = await handleToolCall(again, 'process', { action: 'log', session_id: id, max_bytes: 4 * MIB + 1 });
      expect(over).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
      const atCap = await handleToolCall(again, 'process', { action: 'log', session_id: id, max_bytes: 4 * MIB });
      expect(atCap).toMatchObject({ text: 'hello' });
    } finally {
      await again.close();
    }
  }, 60_000);
});
