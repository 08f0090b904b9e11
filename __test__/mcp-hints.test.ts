// The hints in tool results name the tools of the surface that answers: the library's
// `process` tool, or over MCP `process_read` and `process_control` (MCP has no `process`).
// A newcomer's MCP client was told to "use the process tool (wait, poll or log …)".
import { describe, expect, it } from 'vitest';
import { handleToolCall } from '../dist/index.mjs';
import { connectInMemory } from './mcp-support.js';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

/** A hint naming the library's single tool: `process action=…`, "the process tool" or a bare `process` call. */
const LIBRARY_TOOL = /\bprocess tool\b|\bprocess action=/;

describe('hints over MCP name process_read and process_control', () => {
  it('a start whose job is still running after yield_ms says to call process_read wait, poll or log', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      const r = await c.call('process_start', { command: 'sleep 30', yield_ms: 50 });
      cleanupGroup(r.json.pid);
      expect(r.isError).toBe(false);
      expect(r.json.status).toBe('running');
      expect(r.json.note).toContain('call process_read action=wait, poll or log with this session_id and cursor');
      expect(r.json.note).not.toMatch(LIBRARY_TOOL);
    } finally {
      await c.close();
    }
  });

  it("a start's output cut to max_chars says to read the rest with process_read action=log offset/limit", async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      const r = await c.call('process_start', { command: 'seq 1 3000', yield_ms: 30_000, max_chars: 1000 });
      expect(r.json.status).toBe('exited');
      expect(r.json.output).toMatch(/read them with process_read action=log offset=\d+ limit=\d+/);
      expect(r.json.output).not.toMatch(LIBRARY_TOOL);
    } finally {
      await c.close();
    }
  });

  it("process_control on a session read-only to this task says to read it with process_read", async () => {
    const other = await ctx.start('sleep 30', { taskId: 'task-a', sessionKey: 'conv' });
    const c = await connectInMemory(ctx.registry, { taskId: 'task-b', sessionKey: 'conv' });
    try {
      const r = await c.call('process_control', { action: 'kill', session_id: other.id });
      expect(r.isError).toBe(true);
      expect(r.json.error.code).toBe('SESSION_READ_ONLY');
      expect(r.json.error.message).toContain('process_read action=poll, log or wait');
      expect(r.json.error.message).not.toMatch(LIBRARY_TOOL);
      expect((await ctx.registry.poll(other.id)).status).toBe('running');
    } finally {
      await c.close();
    }
  });
});

describe('hints in the library name its process tool', () => {
  it('a start still running after yield_ms says to call process action=wait, poll or log', async () => {
    const r = (await handleToolCall(ctx.registry, 'process_start', { command: 'sleep 30', yield_ms: 50 })) as Record<string, any>;
    cleanupGroup(r.pid);
    expect(r.note).toContain('call process action=wait, poll or log with this session_id and cursor');
  });

  it('an aborted kill says which call reads its end, per surface (process action=poll or wait; process_read over MCP)', async () => {
    for (const [surface, call] of [
      ['library', 'process action=poll or wait'],
      ['mcp', 'process_read action=poll or wait'],
    ] as const) {
      // The job ignores SIGTERM, so the kill lasts its grace period and the aborted call returns first.
      const s = await ctx.start("trap '' TERM; echo ready; sleep 30");
      // A SIGTERM before the trap would end the job at once, and the kill with it.
      await until(async () => (await ctx.registry.readLog(s.id)).lines.includes('ready'), 10_000, 'the trap');
      const aborted = AbortSignal.abort();
      const r = (await handleToolCall(ctx.registry, 'process', { action: 'kill', session_id: s.id, grace_ms: 500 }, {}, { signal: aborted, surface })) as Record<string, any>;
      expect(r.aborted).toBe(true);
      expect(r.note).toContain(`call ${call} for its end`);
      if (surface === 'mcp') expect(r.note).not.toMatch(LIBRARY_TOOL);
    }
  });
});
