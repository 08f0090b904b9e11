// Pages of durable logs (issue 14): through a line index, capped in bytes, a line longer
// than the cap cut with a marker, correct while the log grows and rotates.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, tempDir } from './support.js';

const CLI = join(import.meta.dirname, '..', 'dist', 'cli.mjs');

/** Numbers 1..n as `seq` prints them. */
function seqLines(from: number, to: number): string[] {
  return Array.from({ length: to - from + 1 }, (_, i) => String(from + i));
}

async function finished(r: ProcessRegistry, command: string, opts: Record<string, unknown> = {}) {
  const s = await r.spawn(command, opts);
  cleanupGroup(s.pid);
  expect((await r.wait(s.id, { timeoutMs: 60_000 })).exitCode).toBe(0);
  return s.id;
}

describe('paging a durable log', () => {
  it('pages from the end and from offsets agree with the log, line for line', async () => {
    const r = await ProcessRegistry.open({ stateDir: join(tempDir(), 'state') });
    try {
      const id = await finished(r, 'seq 1 300000');
      const last = await r.readLog(id, { limit: 20_000 });
      expect(last).toMatchObject({ totalLines: 300_000, offset: 280_000, showing: 'lines 280001-300000 of 300000' });
      expect(last.lines).toEqual(seqLines(280_001, 300_000));
      // Offsets either side of the 64 KiB index steps, the first and the last line.
      for (const offset of [0, 1, 9361, 9362, 123_456, 299_999]) {
        const page = await r.readLog(id, { offset, limit: 7 });
        expect(page.lines, `offset ${offset}`).toEqual(seqLines(offset + 1, Math.min(300_000, offset + 7)));
        expect(page.totalLines).toBe(300_000);
      }
      expect((await r.readLog(id, { offset: 300_000 })).lines).toEqual([]);
      expect((await r.readLog(id, { offset: 2 ** 53 - 1, limit: 2 ** 53 - 1 })).showing).toBe('no lines (of 300000)');
    } finally {
      await r.close();
    }
  }, 60_000);

  it('caps every page in bytes: lines that do not fit are left out on the far side of the page', async () => {
    const r = await ProcessRegistry.open({ stateDir: join(tempDir(), 'state') });
    try {
      const id = await finished(r, 'seq 1 300000');
      // The default cap (1 MiB) holds fewer than the 300 000 lines asked for (about 2 MB).
      const all = await r.readLog(id, { limit: 2 ** 53 - 1 });
      expect(Buffer.byteLength(all.text)).toBeLessThanOrEqual(1024 * 1024);
      expect(all.lines.at(-1)).toBe('300000');
      expect(all.lines[0]).toBe(String(all.offset + 1));
      expect(all.showing).toBe(`lines ${all.offset + 1}-300000 of 300000`);
      // From an offset the page keeps its first lines.
      const fromStart = await r.readLog(id, { offset: 10, limit: 1000, maxBytes: 1000 });
      expect(fromStart.lines).toEqual(seqLines(11, 10 + fromStart.lines.length));
      expect(Buffer.byteLength(fromStart.text)).toBeLessThanOrEqual(1000);
      expect(Buffer.byteLength(fromStart.text)).toBeGreaterThan(990);
      const fromEnd = await r.readLog(id, { limit: 1000, maxBytes: 1000 });
      expect(fromEnd.lines.at(-1)).toBe('300000');
      expect(fromEnd.lines).toEqual(seqLines(300_001 - fromEnd.lines.length, 300_000));
      expect(Buffer.byteLength(fromEnd.text)).toBeLessThanOrEqual(1000);
      // The tool passes max_bytes (bounded) and the same default.
      // (The tool returns the page as text only, no second copy as lines.)
      const viaTool = (await handleToolCall(r, 'process', { action: 'log', session_id: id, offset: 0, limit: 500, max_bytes: 300 })) as { text: string };
      const toolLines = viaTool.text.split('\n');
      expect(toolLines).toEqual(seqLines(1, toolLines.length));
      expect(Buffer.byteLength(viaTool.text)).toBeLessThanOrEqual(300);
      for (const max_bytes of [255, 4 * 1024 * 1024 + 1, 1.5]) {
        expect(await handleToolCall(r, 'process', { action: 'log', session_id: id, max_bytes })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
      }
      expect(await handleToolCall(r, 'process', { action: 'log', session_id: id, offset: 2 ** 60 })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
      for (const maxBytes of [0, 255, 1.5, Number.NaN, 2 ** 60]) {
        await expect(r.readLog(id, { maxBytes }), String(maxBytes)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
    } finally {
      await r.close();
    }
  }, 60_000);

  it('cuts a line longer than the cap with a marker that says how many bytes were cut', async () => {
    const r = await ProcessRegistry.open({ stateDir: join(tempDir(), 'state') });
    try {
      // 30 MB in one line with no line break, then two short lines.
      const id = await finished(r, "head -c 30000000 /dev/zero | tr '\\0' x; echo; echo after; printf tail");
      const page = await r.readLog(id, { offset: 0, limit: 1, maxBytes: 4096 });
      expect(page.lines).toHaveLength(1);
      expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(4096);
      const m = /^(x+) \[… (\d+) more bytes of this line cut\]$/.exec(page.text);
      expect(m).not.toBeNull();
      expect((m?.[1]?.length ?? 0) + Number(m?.[2])).toBe(30_000_000);
      expect((await r.readLog(id, { limit: 2 })).lines).toEqual(['after', 'tail']);
      // The last three lines do not fit in 1 MiB: the page keeps the two that do.
      const end = await r.readLog(id, { limit: 3 });
      expect(end).toMatchObject({ lines: ['after', 'tail'], offset: 1, totalLines: 3 });
      const cut = await r.readLog(id, { offset: 0, limit: 3 });
      expect(cut.lines).toHaveLength(1);
      expect(Buffer.byteLength(cut.text)).toBeLessThanOrEqual(1024 * 1024);
      expect(cut.text).toMatch(/ \[… \d+ more bytes of this line cut\]$/);
    } finally {
      await r.close();
    }
  }, 60_000);

  it('follows a log that grows and rotates between pages', async () => {
    const dir = tempDir();
    const gate = join(dir, 'gate');
    const r = await ProcessRegistry.open({ stateDir: join(dir, 'state'), logMaxBytes: 1024 * 1024 });
    try {
      const s = await r.spawn(`seq 1 50000; while [ ! -e ${gate} ]; do sleep 0.05; done; seq 50001 400000`);
      cleanupGroup(s.pid);
      let first = await r.readLog(s.id, { limit: 5 });
      for (let i = 0; i < 200 && first.lines.at(-1) !== '50000'; i++) {
        await new Promise((res) => setTimeout(res, 50));
        first = await r.readLog(s.id, { limit: 5 });
      }
      expect(first.lines).toEqual(seqLines(49_996, 50_000));
      writeFileSync(gate, '');
      expect((await r.wait(s.id, { timeoutMs: 60_000 })).exitCode).toBe(0);
      const end = await r.readLog(s.id, { limit: 5 });
      expect(end.lines).toEqual(seqLines(399_996, 400_000));
      // The front was rotated away: every kept line k is number droppedLines + k + 1.
      const dropped = end.droppedLines ?? 0;
      expect(dropped).toBeGreaterThan(0);
      expect(end.totalLines + dropped).toBe(400_000);
      for (const offset of [1, 1000, end.totalLines - 1]) {
        const page = await r.readLog(s.id, { offset, limit: 3 });
        expect(page.lines[0], `offset ${offset}`).toBe(String(dropped + offset + 1));
      }
    } finally {
      await r.close();
    }
  }, 90_000);

  it('a page deep inside a private-key block (its BEGIN far beyond the page context) is masked', async () => {
    const r = await ProcessRegistry.open({ stateDir: join(tempDir(), 'state') });
    try {
      // 3000 body lines (about 200 KB) between the markers, after 100 000 lines of output.
      const id = await finished(
        r,
        "seq 1 100000; echo '-----BEGIN OPENSSH PRIVATE KEY-----'; head -c 144000 /dev/urandom | base64 -w 64; echo '-----END OPENSSH PRIVATE KEY-----'; echo done",
      );
      for (const offset of [100_001 + 1500, 100_001 + 2990]) {
        const page = await r.readLog(id, { offset, limit: 5 });
        expect(page.lines, `offset ${offset}`).toEqual(Array(5).fill('[REDACTED PRIVATE KEY]'));
      }
      // One page over the whole block (about 200 KB: redacted in several slices).
      const whole = await r.readLog(id, { offset: 99_000, limit: 5000 });
      expect(whole.lines.slice(1000, 1000 + 3002)).toEqual(Array(3002).fill('[REDACTED PRIVATE KEY]'));
      expect(whole.lines.filter((l) => /^[A-Za-z0-9+/]{40,}/.test(l))).toEqual([]);
      expect(whole.lines.at(-1)).toBe('done');
      expect((await r.readLog(id, { limit: 1 })).lines).toEqual(['done']);
    } finally {
      await r.close();
    }
  }, 60_000);

  it('a log-state.json whose droppedBytes is past 2^53 still pages (no read that never advances)', async () => {
    const state = join(tempDir(), 'state');
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      const id = await finished(r, 'seq 1 1000');
      const dir = join(state, 'sessions', id);
      for (const dropped of ['1' + '0'.repeat(30), '9007199254740993']) {
        writeFileSync(join(dir, 'log-state.json'), `{"rotations":0,"droppedBytes":${dropped},"droppedLines":5,"lostBytes":0,"rotatedIno":0,"currentIno":0}`, { mode: 0o600 });
        const page = await r.readLog(id, { limit: 3 });
        expect(page.lines, dropped).toEqual(['998', '999', '1000']);
        expect(page.droppedLines).toBe(5);
      }
    } finally {
      await r.close();
    }
  });

  it('the CLI wait streams a log larger than a page whole', async () => {
    const state = join(tempDir(), 'state');
    const r = await ProcessRegistry.open({ stateDir: state });
    let id: string;
    try {
      id = await finished(r, 'seq 1 250000');
    } finally {
      await r.close();
    }
    const out = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, [CLI, 'wait', id, '--state-dir', state], { maxBuffer: 64 * 1024 * 1024, timeout: 60_000 }, (err, stdout) =>
        err ? reject(err) : resolve(stdout),
      );
    });
    expect(out).toBe(`${seqLines(1, 250_000).join('\n')}\n`);
  }, 90_000);
});
