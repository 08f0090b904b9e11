// DESIGN section 4: stdin and PTY sessions.
import { describe, expect, it } from 'vitest';
import { until, perTestRegistry } from './support.js';

const ctx = perTestRegistry();
const start = ctx.start;

describe('stdin', () => {
  it("`cat; echo after-eof` finishes at once with the default stdin (/dev/null)", async () => {
    const s = await start('cat; echo after-eof');
    expect((await ctx.registry.wait(s.id, { timeoutMs: 5000 })).outputPreview).toBe('after-eof\n');
  });

  it('with a stdin pipe it waits for input and finishes after closeStdin', async () => {
    const s = await start('cat; echo after-eof', { stdin: true });
    expect((await ctx.registry.wait(s.id, { timeoutMs: 300 })).timedOut).toBe(true);
    await ctx.registry.write(s.id, 'typed\n');
    await ctx.registry.closeStdin(s.id);
    expect((await ctx.registry.wait(s.id, { timeoutMs: 5000 })).outputPreview).toBe('typed\nafter-eof\n');
  });

  it('writing to an exited session, or one without stdin, is a clear error', async () => {
    const s = await start('exit 0', { stdin: true });
    await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    await expect(ctx.registry.write(s.id, 'x')).rejects.toMatchObject({ code: 'SESSION_EXITED' });
    const t = await start('sleep 5');
    await expect(ctx.registry.submit(t.id, 'x')).rejects.toMatchObject({ code: 'NO_STDIN' });
  });
});

describe('PTY sessions', () => {
  it('an interactive python3 prompt is answered with submit', async () => {
    const s = await start(`python3 -c 'print(input("name? "))'`, { pty: { cols: 80, rows: 24 } });
    await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('name? '), 5000, 'prompt');
    await ctx.registry.submit(s.id, 'Ada');
    const w = await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    expect(w.exitCode).toBe(0);
    expect(w.outputPreview.replace(/\r/g, '')).toBe('name? Ada\nAda\n');
  });

  it('the job sees a terminal of the requested size, and resize changes it', async () => {
    const s = await start('stty size; read x; stty size', { pty: { cols: 100, rows: 30 } });
    await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('30 100'), 5000, 'size');
    await ctx.registry.resize(s.id, { cols: 90, rows: 20 });
    await ctx.registry.submit(s.id, '');
    const w = await ctx.registry.wait(s.id, { timeoutMs: 5000 });
    expect(w.outputPreview).toContain('20 90');
  });

  it('closeStdin sends EOF to a PTY job', async () => {
    const s = await start('cat; echo after-eof', { pty: {} });
    await ctx.registry.closeStdin(s.id);
    expect((await ctx.registry.wait(s.id, { timeoutMs: 5000 })).outputPreview).toContain('after-eof');
  });
});
