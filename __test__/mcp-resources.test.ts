// DESIGN section 8, MCP server: job logs as resources (procward://sessions/<id>/log),
// listed for the sessions the server's context may see, read within a budget, with
// subscriptions that announce new output and the job's end.
import { describe, expect, it } from 'vitest';
import { connectInMemory } from './mcp-support.js';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

const uriOf = (id: string) => `procward://sessions/${id}/log`;

/** Runs `command` to its end and reads its log resource through a new client. */
async function endedLog(command: string): Promise<string> {
  const s = await ctx.start(command);
  await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
  const c = await connectInMemory(ctx.registry);
  try {
    return ((await c.client.readResource({ uri: uriOf(s.id) })).contents[0] as { text: string }).text;
  } finally {
    await c.close();
  }
}

describe('MCP resources', () => {
  it('lists the log template and one log per session, and reads a log as plain redacted text', async () => {
    const token = 'ghp_' + 'Zq8rT2vX9wY4uP6sN1mK3jH5gF7dS0aLbCeQ';
    const s = await ctx.start(`printf 'first\\n\\033[31mred\\033[0m\\nkey ${token}\\n'`);
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    const c = await connectInMemory(ctx.registry);
    try {
      const { resourceTemplates } = await c.client.listResourceTemplates();
      expect(resourceTemplates).toEqual([expect.objectContaining({ uriTemplate: 'procward://sessions/{session_id}/log', mimeType: 'text/plain' })]);
      const { resources } = await c.client.listResources();
      expect(resources).toEqual([expect.objectContaining({ uri: uriOf(s.id), name: s.id, mimeType: 'text/plain' })]);
      expect(resources[0]!.description).toContain('exit code 0');
      const read = await c.client.readResource({ uri: uriOf(s.id) });
      const text = (read.contents[0] as { text: string }).text;
      expect(text.split('\n').slice(0, 2)).toEqual(['first', 'red']);
      expect(text).toContain('key ');
      expect(text).not.toContain(token);
      expect(resources[0]!.title).not.toContain(token);
    } finally {
      await c.close();
    }
  });

  it('a job started through the server announces resources/list_changed, and its log is listed', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      const s = await c.call('process_start', { command: 'echo listed' });
      cleanupGroup(s.json.pid);
      await until(() => c.listChanged.count > 0, 10_000, 'resources/list_changed');
      expect((await c.client.listResources()).resources.map((r) => r.uri)).toContain(uriOf(s.json.session_id));
      // A refused start changes nothing.
      const before = c.listChanged.count;
      expect((await c.call('process_start', { command: '' })).isError).toBe(true);
      await c.call('process_read', { action: 'list' });
      expect(c.listChanged.count).toBe(before);
    } finally {
      await c.close();
    }
  });

  it('a long log is read within the budget: the last lines that fit, and a first line saying which they are', async () => {
    const lines = (await endedLog("seq -f '%0100g' 1 1500")).split('\n');
    expect(lines[0]).toMatch(/^\[procward: lines \d+-1500 of 1500/);
    expect(Buffer.byteLength(lines.slice(1).join('\n'))).toBeLessThanOrEqual(64 * 1024);
    expect(lines.at(-1)).toBe('1500'.padStart(100, '0'));
    expect(lines.length).toBeGreaterThan(100);
  });

  it('one 150 000-character line is cut to the budget with a marker', async () => {
    const text = await endedLog("head -c 150000 /dev/zero | tr '\\0' x; echo");
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(64 * 1024 + 300);
    expect(text.length).toBeGreaterThan(60_000);
    expect(text).toMatch(/cut/);
  });

  it('commands with terminal escapes, C1 controls and line breaks are listed on one line, escaped', async () => {
    const s = await ctx.start('echo hi # \u001b]0;title\u0007\u001b[2J\u009b31m\necho two');
    await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    const c = await connectInMemory(ctx.registry);
    try {
      const [r] = (await c.client.listResources()).resources;
      for (const shown of [r!.title!, r!.description!]) {
        expect(shown).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
        expect(shown).toContain('\\x1b[2J');
        expect(shown).toContain('\\x9b31m');
        expect(shown).toContain('\\x0aecho two');
      }
    } finally {
      await c.close();
    }
  });

  it('bad URIs, unknown sessions and sessions of another task are the same not-found error', async () => {
    const other = await ctx.start('echo theirs', { taskId: 'task-b' });
    const mine = await ctx.start('echo mine', { taskId: 'task-a' });
    const c = await connectInMemory(ctx.registry, { taskId: 'task-a' });
    try {
      const { resources } = await c.client.listResources();
      expect(resources.map((r) => r.uri)).toEqual([uriOf(mine.id)]);
      const bad = [
        uriOf(other.id),
        uriOf('proc_000000000000'),
        `procward://sessions/${other.id.slice(0, 9)}/log`,
        `procward://sessions/${other.id}/log/../../etc/passwd`,
        'file:///etc/passwd',
        `procward://sessions/${'a'.repeat(5000)}/log`,
      ];
      for (const uri of bad) {
        await expect(c.client.readResource({ uri })).rejects.toMatchObject({ code: -32002 });
        await expect(c.client.subscribeResource({ uri })).rejects.toMatchObject({ code: -32002 });
      }
      const refused = await c.client.readResource({ uri: uriOf(other.id) }).catch((e: Error) => e);
      expect(String((refused as Error).message)).not.toContain('theirs');
      await expect(c.client.listResources({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: -32602 });
    } finally {
      await c.close();
    }
  });

  it('a subscribed log announces new output and the end of the job (resources/updated), until unsubscribed', async () => {
    const s = await ctx.start('read a; echo "got $a"; read b; echo "got $b"', { stdin: true });
    const c = await connectInMemory(ctx.registry);
    try {
      const uri = uriOf(s.id);
      await c.client.subscribeResource({ uri });
      await ctx.registry.submit(s.id, 'one');
      await until(() => c.updated.includes(uri), 10_000, 'an update after new output');
      const afterOutput = c.updated.length;
      expect(((await c.client.readResource({ uri })).contents[0] as { text: string }).text).toContain('got one');
      await ctx.registry.submit(s.id, 'two');
      await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
      await until(() => c.updated.length > afterOutput, 10_000, 'an update after the end');
      const text = ((await c.client.readResource({ uri })).contents[0] as { text: string }).text;
      expect(text).toBe('got one\ngot two');
      await c.client.unsubscribeResource({ uri });
    } finally {
      await c.close();
    }
  });
});
