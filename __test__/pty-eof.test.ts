// Issue 28, kind 5: telling a PTY job "no more input" reaches it. In canonical mode the end
// of input is the terminal's EOF character, twice when the line holds characters not sent yet
// (the first only sends them), never more (a second reader must not get one); in raw mode
// there is no end of input: ENOTSUP, nothing changed; after a close, write and submit fail.
import { describe, expect, it } from 'vitest';
import { handleToolCall } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A PTY job, once its shell prints `ready` (its first reader runs right after). */
async function ptyJob(command: string) {
  const s = await ctx.registry.spawn(`echo ready; ${command}`, { pty: true });
  cleanupGroup(s.pid);
  await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('ready'), 10_000, 'the job');
  // The reader after `ready` starts a moment later: a write before it waits in the line anyway.
  await pause(100);
  return s;
}

describe('closeStdin on a PTY', () => {
  it('the report: after write("abc") cat gets abc and its end of input, and ends; a later write fails STDIN_CLOSED', async () => {
    const s = await ptyJob('cat');
    await ctx.registry.write(s.id, 'abc');
    expect(await ctx.registry.closeStdin(s.id)).toEqual({ id: s.id, closed: true });
    const w = await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(w).toMatchObject({ status: 'exited', exitCode: 0 });
    // The terminal echoes abc, and cat writes it back.
    expect(w.outputPreview).toContain('abcabc');
  });

  for (const [how, send] of [
    ['a line still open (write "abc")', (id: string) => ctx.registry.write(id, 'abc')],
    ['an empty line (after submit)', (id: string) => ctx.registry.submit(id, 'line')],
    ['nothing written', async () => {}],
  ] as const) {
    it(`${how}: exactly one reader gets the end of input; write and submit then fail, the job runs on`, async () => {
      const s = await ptyJob('cat; echo one-ended; cat; echo two-ended');
      await send(s.id);
      await ctx.registry.closeStdin(s.id);
      await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('one-ended'), 10_000, 'the first reader to end');
      await pause(300);
      const p = await ctx.registry.poll(s.id);
      expect(p.status).toBe('running');
      expect(p.outputPreview).not.toContain('two-ended');
      await expect(ctx.registry.write(s.id, 'x')).rejects.toMatchObject({ code: 'STDIN_CLOSED' });
      await expect(ctx.registry.submit(s.id, 'x')).rejects.toMatchObject({ code: 'STDIN_CLOSED' });
      await expect(ctx.registry.closeStdin(s.id)).rejects.toMatchObject({ code: expect.stringMatching(/STDIN_CLOSED|EINVAL|INVALID_ARGUMENT/) });
      await ctx.registry.kill(s.id, { graceMs: 200 });
    });
  }

  it('raw mode: ENOTSUP naming raw mode, nothing sent, and the input stays open (library and tool)', async () => {
    const s = await ptyJob('stty raw -echo; echo raw-set; cat');
    await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('raw-set'), 10_000, 'raw mode');
    await expect(ctx.registry.closeStdin(s.id)).rejects.toMatchObject({ code: 'ENOTSUP', message: expect.stringContaining('raw mode') });
    const tool = (await handleToolCall(ctx.registry, 'process', { action: 'close', session_id: s.id })) as { error?: { code: string; message: string } };
    expect(tool.error).toMatchObject({ code: 'ENOTSUP', message: expect.stringContaining('raw mode') });
    await ctx.registry.write(s.id, 'still-open');
    await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('still-open'), 10_000, 'the write after the refused close');
    expect((await ctx.registry.poll(s.id)).status).toBe('running');
    await ctx.registry.kill(s.id, { graceMs: 200 });
  });

  it('the tool: close ends a canonical PTY job`s input (cat ends), then write is refused', async () => {
    const s = await ptyJob('cat; echo cat-ended; sleep 30');
    expect(await handleToolCall(ctx.registry, 'process', { action: 'write', session_id: s.id, data: 'xyz' })).not.toHaveProperty('error');
    expect(await handleToolCall(ctx.registry, 'process', { action: 'close', session_id: s.id })).not.toHaveProperty('error');
    await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('cat-ended'), 10_000, 'cat to end');
    const refused = (await handleToolCall(ctx.registry, 'process', { action: 'write', session_id: s.id, data: 'more' })) as { error?: { code: string } };
    expect(refused.error?.code).toBe('STDIN_CLOSED');
    await ctx.registry.kill(s.id, { graceMs: 200 });
  });
});
