// DESIGN section 8, MCP server: progress notifications carry a 90 s wait past the official
// client's default 60 s request timeout (resetTimeoutOnProgress), over `procward mcp` on stdio.
import { describe, expect, it } from 'vitest';
import { connectStdio } from './mcp-support.js';
import { cleanupGroup, tempDir } from './support.js';

describe('MCP progress', () => {
  it('over stdio, a 90 s wait completes under the client default 60 s timeout through progress notifications', async () => {
    const c = await connectStdio(tempDir());
    try {
      const s = await c.call('process_start', { command: 'sleep 90; echo done' });
      cleanupGroup(s.json.pid);
      const messages: string[] = [];
      const values: number[] = [];
      const r = await c.client.callTool({ name: 'process_read', arguments: { action: 'wait', session_id: s.json.session_id, timeout_ms: 120_000 } }, undefined, {
        onprogress: (p) => {
          messages.push(p.message ?? '');
          values.push(p.progress);
        },
        resetTimeoutOnProgress: true,
      });
      expect(r.isError).not.toBe(true);
      expect(r.structuredContent).toMatchObject({ status: 'exited', exit_code: 0, timed_out: false });
      expect(messages.length).toBeGreaterThanOrEqual(30);
      // MCP: progress grows with every notification.
      expect(values.every((v, i) => i === 0 || v > values[i - 1]!)).toBe(true);
      expect(((await c.call('process_read', { action: 'log', session_id: s.json.session_id })).json.text as string).trim()).toBe('done');
    } finally {
      await c.close();
    }
  }, 150_000);
});
