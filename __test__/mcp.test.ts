// DESIGN section 8, MCP server: tools with titles, annotations and output schemas, the
// read-only actions apart from the destructive ones, structuredContent on every result,
// driven by the official MCP SDK client (in memory and through `procward mcp` on stdio).
import { describe, expect, it } from 'vitest';
import { toolDefinitions } from '../dist/index.mjs';
import { connectInMemory, connectStdio } from './mcp-support.js';
import { cleanupGroup, isAlive, perTestRegistry, tempDir, until } from './support.js';

const ctx = perTestRegistry();

describe('MCP tools', () => {
  it('the server states instructions, tools, resources and logging, and lists three titled tools', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      expect(c.client.getServerCapabilities()).toMatchObject({ tools: {}, resources: { subscribe: true }, logging: {} });
      const instructions = c.client.getInstructions()!;
      expect(instructions).toMatch(/process_start[\s\S]*process_read[\s\S]*process_control/);
      // Every snake_case argument the instructions name is one the tools take (or a result key).
      const known = new Set(['session_id', 'process_running', ...toolDefinitions().flatMap((t) => Object.keys((t.input_schema as any).properties))]);
      const named = instructions.match(/\b[a-z]+_[a-z_]+\b/g) ?? [];
      expect(named.length).toBeGreaterThan(2);
      expect(named.filter((w) => !known.has(w) && !w.startsWith('process_'))).toEqual([]);
      const { tools } = await c.client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['process_start', 'process_read', 'process_control']);
      for (const t of tools) {
        expect(t.title).toBeTruthy();
        expect(t.annotations?.title).toBe(t.title);
        expect(t.outputSchema?.type).toBe('object');
        expect(t.inputSchema.type).toBe('object');
      }
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      expect(byName.process_read!.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
      expect(byName.process_control!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
      expect(byName.process_start!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
    } finally {
      await c.close();
    }
  });

  it('the read and control tools split the library process tool: every action in exactly one, kill/write/submit/close never read-only', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      const { tools } = await c.client.listTools();
      const actions = (name: string) => (tools.find((t) => t.name === name)!.inputSchema.properties!.action as { enum: string[] }).enum;
      const library = (toolDefinitions().find((t) => t.name === 'process')!.input_schema as any).properties.action.enum as string[];
      const read = actions('process_read');
      const control = actions('process_control');
      expect([...read, ...control].sort()).toEqual([...library].sort());
      expect(read.filter((a) => control.includes(a))).toEqual([]);
      expect(read).toEqual(expect.arrayContaining(['list', 'poll', 'log', 'wait']));
      expect(control).toEqual(expect.arrayContaining(['kill', 'write', 'submit', 'close']));
      for (const [name, list] of [['process_read', read], ['process_control', control]] as const) {
        const description = tools.find((t) => t.name === name)!.description!;
        for (const a of list) expect(description).toContain(`${a}: `);
      }
      // Properties of the other tool's actions only are left out.
      const props = (name: string) => Object.keys(tools.find((t) => t.name === name)!.inputSchema.properties!);
      expect(props('process_read')).not.toContain('grace_ms');
      expect(props('process_read')).not.toContain('data');
      expect(props('process_control')).not.toContain('acknowledge');
      expect(props('process_control')).toContain('session_id');
      // No description points a model at a tool MCP does not serve, or at the other tool's actions.
      const actionText = (name: string) => (tools.find((t) => t.name === name)!.inputSchema.properties!.action as { description: string }).description;
      expect(tools.find((t) => t.name === 'process_start')!.description).not.toContain('`process`');
      for (const a of control) expect(actionText('process_read')).not.toContain(a);
      for (const a of read) expect(actionText('process_control')).not.toContain(a);
    } finally {
      await c.close();
    }
  });

  it('process_read refuses a destructive action (kill, write) and the job goes on running; an unknown tool is an error result', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      const s = await ctx.start('sleep 30', { stdin: true });
      for (const action of ['kill', 'write', 'close']) {
        const r = await c.call('process_read', { action, session_id: s.id, data: 'x' });
        expect(r.isError).toBe(true);
        expect(r.json.error.code).toBe('INVALID_ARGUMENT');
        expect(r.json.error.message).toContain(`${action} is an action of process_control`);
      }
      const bogus = await c.call('process_control', { action: 'poll', session_id: s.id });
      expect(bogus.json.error.message).toContain('poll is an action of process_read');
      const none = await c.call('process_control', { session_id: s.id });
      expect(none.json.error.message).toMatch(/no action/);
      expect((await c.call('no_such_tool', {})).json.error.code).toBe('UNKNOWN_TOOL');
      // The library's single tool is not served: its destructive actions would pass as read-only ones.
      const old = await c.call('process', { action: 'kill', session_id: s.id });
      expect(old.json.error).toMatchObject({ code: 'UNKNOWN_TOOL' });
      expect(old.json.error.message).toContain('process_control');
      expect(isAlive(s.pid!)).toBe(true);
      expect((await ctx.registry.poll(s.id)).status).toBe('running');
    } finally {
      await c.close();
    }
  });

  it('every result carries structuredContent equal to its JSON text and valid against the tool output schema (the client checks it)', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      const started = await c.call('process_start', { command: 'echo out-one; echo out-two; exit 4' });
      cleanupGroup(started.json.pid);
      const calls = [
        started,
        await c.call('process_read', { action: 'wait', session_id: started.json.session_id, timeout_ms: 10_000 }),
        await c.call('process_read', { action: 'poll', session_id: started.json.session_id }),
        await c.call('process_read', { action: 'log', session_id: started.json.session_id }),
        await c.call('process_read', { action: 'list' }),
        await c.call('process_control', { action: 'kill', session_id: started.json.session_id }),
        await c.call('process_control', { action: 'write', session_id: started.json.session_id, data: 'late' }),
        await c.call('process_read', { action: 'poll', session_id: 'proc_000000000000' }),
        await c.call('process_read', { action: 'notifications' }),
      ];
      for (const r of calls) expect(r.structured).toEqual(r.json);
      expect(calls[1]!.json).toMatchObject({ status: 'exited', exit_code: 4 });
      expect(calls[3]!.json.text).toBe('out-one\nout-two');
      expect(calls[4]!.json.sessions.map((s: any) => s.session_id)).toContain(started.json.session_id);
      expect(calls[5]!.json).toMatchObject({ outcome: 'already_exited' });
      expect(calls.map((r) => r.isError)).toEqual([false, false, false, false, false, false, true, true, false]);
      expect(calls[7]!.json.error.code).toBe('UNKNOWN_SESSION');
    } finally {
      await c.close();
    }
  });

  it('a server scoped to a task cannot poll or kill another task\'s session through any tool', async () => {
    const other = await ctx.start('sleep 30', { taskId: 'task-b' });
    const c = await connectInMemory(ctx.registry, { taskId: 'task-a' });
    try {
      const mine = await c.call('process_start', { command: 'sleep 30', task_id: 'task-b' });
      cleanupGroup(mine.json.pid);
      // The context wins over the model's task_id: the job is task-a's.
      expect((await ctx.registry.poll(mine.json.session_id)).taskId).toBe('task-a');
      const listed = await c.call('process_read', { action: 'list' });
      expect(listed.json.sessions.map((s: any) => s.session_id)).toEqual([mine.json.session_id]);
      expect((await c.call('process_control', { action: 'kill', session_id: other.id, grace_ms: 0 })).json.error.code).toBe('UNKNOWN_SESSION');
      expect((await c.call('process_read', { action: 'poll', session_id: other.id })).json.error.code).toBe('UNKNOWN_SESSION');
      expect(isAlive(other.pid!)).toBe(true);
    } finally {
      await c.close();
    }
  });

  it('closing the server removes its registry listeners and leaves the registry open', async () => {
    const before = [ctx.registry.listenerCount('completion'), ctx.registry.listenerCount('watch')];
    const c = await connectInMemory(ctx.registry);
    const s = await ctx.start('sleep 30');
    await c.client.subscribeResource({ uri: `procward://sessions/${s.id}/log` });
    expect(ctx.registry.listenerCount('completion')).toBe(before[0]! + 1);
    await c.close();
    expect([ctx.registry.listenerCount('completion'), ctx.registry.listenerCount('watch')]).toEqual(before);
    expect((await ctx.registry.poll(s.id)).status).toBe('running');
  });

  it('procward mcp on stdio: a real client starts a job, waits, reads the log, kills a running one', async () => {
    const c = await connectStdio(tempDir());
    try {
      expect((await c.client.listTools()).tools.map((t) => t.name)).toEqual(['process_start', 'process_read', 'process_control']);
      const quick = await c.call('process_start', { command: 'echo from-mcp; exit 3' });
      cleanupGroup(quick.json.pid);
      expect((await c.call('process_read', { action: 'wait', session_id: quick.json.session_id, timeout_ms: 10_000 })).json).toMatchObject({ status: 'exited', exit_code: 3 });
      expect((await c.call('process_read', { action: 'log', session_id: quick.json.session_id })).json.text).toBe('from-mcp');
      const slow = await c.call('process_start', { command: 'sleep 30' });
      cleanupGroup(slow.json.pid);
      expect((await c.call('process_read', { action: 'poll', session_id: slow.json.session_id })).json).toMatchObject({ status: 'running' });
      expect((await c.call('process_control', { action: 'kill', session_id: slow.json.session_id, grace_ms: 300 })).json).toMatchObject({ outcome: 'killed' });
      await until(() => !isAlive(slow.json.pid), 5000, 'the killed job to be gone');
      expect((await c.call('process_read', { action: 'poll', session_id: 'proc_000000000000' })).isError).toBe(true);
    } finally {
      await c.close();
    }
  }, 30_000);
});
