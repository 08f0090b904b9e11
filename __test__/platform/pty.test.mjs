// DESIGN section 4 (PTY mode) on every platform: a program under a pseudo-terminal (ConPTY on
// Windows) shows its prompt, reads the line `submit` sends with the platform's Enter, and
// answers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lines, promptAndAnswer, ptyRegistryOptions } from './commands.mjs';
import { cleanupPid, describeRegistry, until } from './support.mjs';

describe('PTY sessions', () => {
  const ctx = describeRegistry(ptyRegistryOptions());

  it('shows the prompt, takes the answer from submit, and prints it', async () => {
    const s = await ctx.registry.spawn(promptAndAnswer(), { pty: { cols: 80, rows: 24 } });
    cleanupPid(s.pid);
    await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('name?'), 30_000, 'the prompt');
    const sent = await ctx.registry.submit(s.id, 'procward');
    assert.ok(sent.bytes >= 'procward'.length + 1, `bytes ${sent.bytes}`);
    const w = await ctx.registry.wait(s.id, { timeoutMs: 30_000 });
    assert.equal(w.timedOut, false);
    assert.equal(w.exitCode, 0);
    // The terminal echoes the typed line too; the program's own answer is the last line.
    assert.ok(lines(w.outputPreview).includes('got procward'), JSON.stringify(w.outputPreview));
  });
});
