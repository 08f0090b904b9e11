// Issue 28, kind 8: bytes a model-facing result or a terminal must not carry. The plain view
// and every result a model reads show the C0 controls other than TAB, LF and CR, and DEL, as
// `\xNN` after redaction; the library's raw view keeps the bytes; every field the CLI prints
// from a record is escaped the same way.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';
import { connectInMemory } from './mcp-support.js';
import { cli, deadHostEntry, perTestRegistry, tempDir, until } from './support.js';

const ctx = perTestRegistry();

/** Any C0 control but TAB, LF, CR, or DEL. */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Every string in `value`, deep. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

// The report's `ELF\0\0\1\2 header`, and others of the kind: a bell, vertical tab, form feed,
// a lone ESC that starts no sequence, DEL, and a secret beside them (masked first).
const PRINTF = "printf 'ELF\\000\\000\\001\\002 header\\n\\007bell \\013vt \\014ff \\033 lone \\177del\\nAuthorization: Bearer abcdef0123456789abcdef0123\\001\\n'";

describe('controls in output are shown as \\xNN in the plain view and every model-facing result', () => {
  it('library: poll, wait and readLog plain escape them after redaction; the raw view keeps the bytes', async () => {
    const s = await ctx.registry.spawn(PRINTF, { notifyOnComplete: true, watchPatterns: ['header'] });
    await until(async () => (await ctx.registry.poll(s.id)).status === 'exited', 10_000, 'the end');
    const p = await ctx.registry.poll(s.id);
    expect(p.outputPreview).toContain('ELF\\x00\\x00\\x01\\x02 header\n\\x07bell \\x0bvt \\x0cff \\x1b lone \\x7fdel\n');
    expect(p.outputPreview).not.toContain('abcdef0123456789abcdef0123');
    // Drained before the end-reaching readLog below, which would take the completion.
    const events = await ctx.registry.drainNotifications();
    for (const e of events) expect(strings(e).filter((x) => CONTROL.test(x)), JSON.stringify(e)).toEqual([]);
    expect(events.map((e) => e.type).sort()).toEqual(['completion', 'watch']);
    const plain = await ctx.registry.readLog(s.id);
    expect(plain.lines[0]).toBe('ELF\\x00\\x00\\x01\\x02 header');
    const raw = await ctx.registry.readLog(s.id, { view: 'raw' });
    expect(raw.lines[0]).toBe('ELF\u0000\u0000\u0001\u0002 header');
    expect(raw.lines[1]).toContain('\u0007bell \u000bvt');
    expect(await ctx.registry.wait(s.id)).toMatchObject({ outputPreview: expect.stringContaining('\\x02 header') });
  });

  it('the tool and MCP: no string of any result carries one (poll, log, wait, list, a command holding one, an error)', async () => {
    const started = (await handleToolCall(ctx.registry, 'process_start', { command: `${PRINTF} # \u0001cmd`, notify_on_complete: true })) as { session_id: string };
    const id = started.session_id;
    await until(async () => (await ctx.registry.poll(id)).status === 'exited', 10_000, 'the end');
    const results = [
      started,
      await handleToolCall(ctx.registry, 'process', { action: 'poll', session_id: id }),
      await handleToolCall(ctx.registry, 'process', { action: 'log', session_id: id }),
      await handleToolCall(ctx.registry, 'process', { action: 'wait', session_id: id }),
      await handleToolCall(ctx.registry, 'process', { action: 'list' }),
      await handleToolCall(ctx.registry, 'process', { action: 'poll', session_id: 'proc_\u0000\u0007' }),
    ];
    for (const r of results) expect(strings(r).filter((x) => CONTROL.test(x)), JSON.stringify(r)).toEqual([]);
    expect(JSON.stringify(results[2])).toContain('ELF\\\\x00\\\\x00\\\\x01\\\\x02 header');
    // The command's control is gone from the stored command (redaction drops invisibles).
    expect(JSON.stringify(results[0])).toContain(' # cmd');
    const c = await connectInMemory(ctx.registry);
    try {
      const polled = await c.call('process_read', { action: 'log', session_id: id });
      expect(strings(polled.json).filter((x) => CONTROL.test(x))).toEqual([]);
      expect(polled.json.text).toContain('\\x01\\x02 header');
    } finally {
      await c.close();
    }
  });

  it('CLI: a record whose signal and reason hold escape sequences prints them escaped in list, poll and wait; log prints the plain view escaped, --raw the bytes', async () => {
    const state = tempDir();
    const evil = '\u001b]0;pwned\u0007\u001b[2J';
    const entry = deadHostEntry('proc_c0c0c0c0c0c0', { status: 'exited', exitCode: null, signal: `SIGTERM${evil}`, reason: 'killed' });
    writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: [entry] }), { mode: 0o600 });
    for (const args of [['list'], ['poll', 'proc_c0c0c0c0c0c0'], ['wait', 'proc_c0c0c0c0c0c0']]) {
      const r = await cli(['--state-dir', state, ...args]);
      const all = r.stdout + r.stderr;
      expect(all, args.join(' ')).not.toContain('\u001b]0;');
      expect(all, args.join(' ')).not.toContain('\u0007');
      if (args[0] !== 'list') expect(all).toContain('\\x1b]0;pwned\\x07');
    }
    const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', PRINTF])).stdout);
    await cli(['wait', s.id, '--state-dir', state, '-q']);
    const plain = await cli(['log', s.id, '--state-dir', state]);
    expect(plain.stdout.split('\n')[0]).toBe('ELF\\x00\\x00\\x01\\x02 header');
    const raw = await cli(['log', s.id, '--state-dir', state, '--raw']);
    expect(raw.stdout.split('\n')[0]).toBe('ELF\u0000\u0000\u0001\u0002 header');
  });
});

describe('escapeControls keeps what a model may read', () => {
  it('TAB, LF, CR and printable text stay; a registry with redaction off escapes the plain view too', async () => {
    const r = await ProcessRegistry.open({ redact: false });
    try {
      const s = await r.spawn("printf 'a\\tb\\r\\nc\\001d\\n'");
      await r.wait(s.id, { timeoutMs: 10_000 });
      expect((await r.readLog(s.id)).text).toBe('a\tb\nc\\x01d');
    } finally {
      await r.close();
    }
  });
});
