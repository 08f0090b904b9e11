// DESIGN section 5 (issue 16 item 1): a write delivers everything to a job that reads,
// however large, in order, without blocking the event loop; a job that does not read fails
// the write after its timeout, and every failure says how many bytes got through (`written`).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry, type ProcwardError } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, tempDir } from './support.js';

const ctx = perTestRegistry();
const start = ctx.start;

/** About `bytes` bytes of lines that say where they are (`tag` tells writes apart). */
function numbered(bytes: number, tag: string): string {
  const lines: string[] = [];
  for (let i = 0, n = 0; n < bytes; i++) {
    const line = `${tag} line ${String(i).padStart(8, '0')} of numbered input\n`;
    lines.push(line);
    n += line.length;
  }
  return lines.join('');
}

/** A job that waits for `gate` to exist, then runs `then`: it reads nothing before. */
const gated = (gate: string, then: string) => `while [ ! -e '${gate}' ]; do sleep 0.02; done; ${then}`;

/** Settles `p` and says whether it had settled when asked. */
function watch<T>(p: Promise<T>): { settled: () => boolean; result: Promise<T> } {
  let done = false;
  const result = p.finally(() => {
    done = true;
  });
  return { settled: () => done, result };
}

const rejection = (p: Promise<unknown>) => p.then(() => null as unknown as ProcwardError, (e: ProcwardError) => e);

describe('write delivers everything to a job that reads', () => {
  it('1 MB reaches `cat > file` whole, and the event loop runs while the job has not read it yet', async () => {
    const dir = tempDir();
    const [gate, file] = [join(dir, 'go'), join(dir, 'out')];
    const s = await start(gated(gate, `cat > '${file}'`), { stdin: true });
    const data = numbered(1 << 20, 'mb');
    const w = watch(ctx.registry.write(s.id, data));
    // Another call of the registry finishes while the write waits (a pipe holds 64 KiB).
    expect((await ctx.registry.poll(s.id)).status).toBe('running');
    expect(w.settled()).toBe(false);
    writeFileSync(gate, '');
    expect(await w.result).toEqual({ id: s.id, bytes: Buffer.byteLength(data) });
    await ctx.registry.closeStdin(s.id);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(readFileSync(file, 'utf8')).toBe(data);
  });

  it('20 KB reach a PTY job that is still starting', async () => {
    const dir = tempDir();
    const file = join(dir, 'out');
    // A terminal takes about 12 KB before the job reads.
    const s = await start(`sleep 0.2; stty -echo; cat > '${file}'`, { pty: { cols: 80, rows: 24 } });
    const data = numbered(20 * 1024, 'pty');
    expect(await ctx.registry.write(s.id, data)).toEqual({ id: s.id, bytes: data.length });
    await ctx.registry.closeStdin(s.id);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(readFileSync(file, 'utf8')).toBe(data);
  });

  it('many small writes to a PTY job that reads late all arrive, in order (each fits; together they do not)', async () => {
    const dir = tempDir();
    const [gate, file] = [join(dir, 'go'), join(dir, 'out')];
    const s = await start(gated(gate, `stty -echo; cat > '${file}'`), { pty: { cols: 80, rows: 24 } });
    const parts = Array.from({ length: 40 }, (_, k) => numbered(1024, `p${k}`));
    const writes = parts.map((p) => ctx.registry.submit(s.id, p.slice(0, -1)));
    writeFileSync(gate, '');
    await Promise.all(writes);
    await ctx.registry.closeStdin(s.id);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(readFileSync(file, 'utf8')).toBe(parts.join(''));
  });

  it('writes queued behind a slow reader keep their order, and closeStdin comes after them', async () => {
    const dir = tempDir();
    const [gate, file] = [join(dir, 'go'), join(dir, 'out')];
    const s = await start(gated(gate, `while IFS= read -r l; do printf '%s\\n' "$l"; done > '${file}'`), { stdin: true });
    const parts = Array.from({ length: 8 }, (_, k) => numbered(40_000, `part${k}`));
    const writes = parts.map((p) => ctx.registry.write(s.id, p));
    const closed = ctx.registry.closeStdin(s.id);
    writeFileSync(gate, '');
    await Promise.all([...writes, closed]);
    await ctx.registry.wait(s.id, { timeoutMs: 20_000 });
    expect(readFileSync(file, 'utf8')).toBe(parts.join(''));
  });
});

describe('a write that stops short says how far it got', () => {
  it('a job that does not read: WRITE_TIMEOUT after timeoutMs with `written`, and the writes behind it get nothing', async () => {
    const s = await start('sleep 30', { stdin: true });
    const first = rejection(ctx.registry.write(s.id, 'x'.repeat(1 << 20), { timeoutMs: 300 }));
    const second = rejection(ctx.registry.write(s.id, 'after'));
    const e = await first;
    expect(e.code).toBe('WRITE_TIMEOUT');
    expect(e.written).toBeGreaterThan(0);
    expect(e.written).toBeLessThan(1 << 20);
    expect(e.details).toMatchObject({ written: e.written });
    expect(e.message).toContain(`${e.written} of ${1 << 20} bytes written`);
    expect(await second).toMatchObject({ code: 'WRITE_TIMEOUT', written: 0 });
    await expect(ctx.registry.write(s.id, 'x', { timeoutMs: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ctx.registry.submit(s.id, 'x', { timeout: 100 } as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', details: { suggestion: 'timeoutMs' } });
  });

  it('a job that exits while a write waits: SESSION_EXITED with the bytes it read; after the end, written 0', async () => {
    const s = await start('head -c 100000 > /dev/null', { stdin: true });
    const e = await rejection(ctx.registry.write(s.id, 'z'.repeat(4 << 20)));
    expect(e.code).toBe('SESSION_EXITED');
    expect(e.written).toBeGreaterThanOrEqual(100_000);
    expect(e.written).toBeLessThan(4 << 20);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(await rejection(ctx.registry.write(s.id, 'late'))).toMatchObject({ code: 'SESSION_EXITED', written: 0 });
  });

  it('after closeStdin a write is STDIN_CLOSED with written 0', async () => {
    const s = await start('cat > /dev/null; sleep 5', { stdin: true });
    await ctx.registry.closeStdin(s.id);
    expect(await rejection(ctx.registry.write(s.id, 'x'))).toMatchObject({ code: 'STDIN_CLOSED', written: 0 });
  });
});

describe("a durable job's FIFO behaves the same", () => {
  /** Runs `body` with a durable stdin job of `command` in a registry of its own. */
  async function durableJob(command: string, body: (registry: ProcessRegistry, id: string) => Promise<void>): Promise<void> {
    const registry = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await registry.spawn(command, { stdin: true, durable: true });
      cleanupGroup(s.pid);
      await body(registry, s.id);
    } finally {
      await registry.close();
    }
  }

  it('queued writes keep their order behind a job that reads late, and the close comes after them', async () => {
    const dir = tempDir();
    const [gate, file] = [join(dir, 'go'), join(dir, 'out')];
    await durableJob(gated(gate, `cat > '${file}'`), async (registry, id) => {
      const parts = Array.from({ length: 6 }, (_, k) => numbered(50_000, `fifo${k}`));
      const writes = parts.map((p) => registry.write(id, p));
      const closed = registry.closeStdin(id);
      writeFileSync(gate, '');
      await Promise.all([...writes, closed]);
      await registry.wait(id, { timeoutMs: 20_000 });
      expect(readFileSync(file, 'utf8')).toBe(parts.join(''));
    });
  });

  it('a job that does not read: WRITE_TIMEOUT with `written`, and the write queued behind it gets nothing', () =>
    durableJob('sleep 30', async (registry, id) => {
      const first = rejection(registry.write(id, 'x'.repeat(1 << 20), { timeoutMs: 300 }));
      const second = rejection(registry.write(id, 'after'));
      const e = await first;
      expect(e).toMatchObject({ code: 'WRITE_TIMEOUT', details: { written: e.written } });
      expect(e.written).toBeGreaterThan(0);
      expect(e.written).toBeLessThan(1 << 20);
      expect(await second).toMatchObject({ code: 'WRITE_TIMEOUT', written: 0 });
    }));

  it('a job that exits while a write waits: SESSION_EXITED with the bytes it read', () =>
    durableJob('head -c 100000 > /dev/null', async (registry, id) => {
      const e = await rejection(registry.write(id, 'z'.repeat(4 << 20)));
      expect(e.code).toBe('SESSION_EXITED');
      expect(e.written).toBeGreaterThanOrEqual(100_000);
      expect(e.written).toBeLessThan(4 << 20);
    }));
});
