// DESIGN sections 7 and 8, MCP server: job events as logging messages at the client's
// level, a long wait cut below the client's request timeout when the call takes no
// progress, and a cancelled call that stops its wait on the server.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { connectInMemory } from './mcp-support.js';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

/** Whether `pid` ignores SIGTERM now (bit 15 of SigIgn in /proc/<pid>/status): its trap line has run. */
function ignoresTerm(pid: number): boolean {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('SigIgn:')) ?? 'SigIgn: 0';
    return (BigInt(`0x${line.split(/\s+/)[1]}`) & (1n << 14n)) !== 0n;
  } catch {
    return false;
  }
}

describe('MCP logging', () => {
  it('a completion and a watch hit go out as notifications/message, redacted, with snake_case data and control characters escaped', async () => {
    const token = 'sk-proj-' + 'Zq8rT2vX9wY4uP6sN1mK3jH5gF7dS0aLbCe';
    const c = await connectInMemory(ctx.registry);
    try {
      await c.client.setLoggingLevel('info');
      const s = await c.call('process_start', { command: `echo "READY with ${token}"; exit 2 # \u001b[2J\u0007`, notify_on_complete: true, watch_patterns: ['READY'] });
      cleanupGroup(s.json.pid);
      const id = s.json.session_id;
      await until(() => c.logs.some((l) => l.data?.type === 'completion' && l.data.session_id === id), 10_000, 'the completion message');
      await until(() => c.logs.some((l) => l.data?.type === 'watch' && l.data.session_id === id), 10_000, 'the watch message');
      const completion = c.logs.find((l) => l.data?.type === 'completion')!;
      expect(completion).toMatchObject({ level: 'warning', logger: 'procward', data: { exit_code: 2, reason: 'exited' } });
      const watch = c.logs.find((l) => l.data?.type === 'watch')!;
      expect(watch).toMatchObject({ level: 'notice', data: { pattern: 'READY' } });
      expect(watch.data.line).toContain('READY with');
      expect(JSON.stringify(c.logs)).not.toContain(token);
      // The command's terminal escape and bell never reach the client raw.
      for (const l of [completion, watch]) expect(l.data.command).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    } finally {
      await c.close();
    }
  });

  it('logging/setLevel filters: at warning, a clean exit (info) is not sent while a failure (warning) is', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      await c.client.setLoggingLevel('warning');
      const ok = await c.call('process_start', { command: 'exit 0', notify_on_complete: true });
      cleanupGroup(ok.json.pid);
      // The completion event is emitted as the job is finished, before its wait returns.
      await c.call('process_read', { action: 'wait', session_id: ok.json.session_id, timeout_ms: 10_000 });
      const bad = await c.call('process_start', { command: 'exit 1', notify_on_complete: true });
      cleanupGroup(bad.json.pid);
      await until(() => c.logs.some((l) => l.data?.session_id === bad.json.session_id), 10_000, 'the failure message');
      expect(c.logs.filter((l) => l.data?.session_id === ok.json.session_id)).toEqual([]);
      expect(c.logs.find((l) => l.data?.session_id === bad.json.session_id)).toMatchObject({ level: 'warning' });
    } finally {
      await c.close();
    }
  });

  it('a server scoped to a conversation sends no message about another conversation\'s job', async () => {
    const c = await connectInMemory(ctx.registry, { sessionKey: 'conv-a' });
    try {
      await c.client.setLoggingLevel('debug');
      const theirs = await ctx.start('echo theirs', { sessionKey: 'conv-b', notifyOnComplete: true });
      await ctx.registry.wait(theirs.id, { timeoutMs: 10_000 });
      const mine = await c.call('process_start', { command: 'echo mine', notify_on_complete: true });
      cleanupGroup(mine.json.pid);
      await until(() => c.logs.some((l) => l.data?.type === 'completion' && l.data.session_id === mine.json.session_id), 10_000, 'my completion');
      expect(c.logs.filter((l) => l.data?.session_id === theirs.id)).toEqual([]);
      expect(JSON.stringify(c.logs)).not.toContain('theirs');
    } finally {
      await c.close();
    }
  });
});

describe('MCP progress and cancellation', () => {
  it('a cancelled wait stops on the server: the call ends (debug call_end, cancelled) while the job runs on', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      await c.client.setLoggingLevel('debug');
      const s = await c.call('process_start', { command: 'sleep 60' });
      cleanupGroup(s.json.pid);
      const abort = new AbortController();
      let progressed = 0;
      const pending = c.client.callTool({ name: 'process_read', arguments: { action: 'wait', session_id: s.json.session_id, timeout_ms: 100_000 } }, undefined, {
        signal: abort.signal,
        onprogress: () => {
          progressed += 1;
        },
        resetTimeoutOnProgress: true,
      });
      const settled = pending.then(
        () => 'resolved',
        () => 'rejected',
      );
      // The wait has started on the server once it reports progress.
      await until(() => progressed > 0, 10_000, 'progress from the running wait');
      abort.abort('test cancels');
      expect(await settled).toBe('rejected');
      await until(() => c.logs.some((l) => l.data?.type === 'call_end' && l.data.action === 'wait'), 20_000, 'the server-side wait to end');
      expect(c.logs.find((l) => l.data?.type === 'call_end' && l.data.action === 'wait')!.data).toMatchObject({ tool: 'process_read', cancelled: true });
      // Cancelling the call is not killing the job.
      expect((await c.call('process_read', { action: 'poll', session_id: s.json.session_id })).json.status).toBe('running');
    } finally {
      await c.close();
    }
  }, 40_000);

  it('a kill that waits out its grace period reports progress too (the heartbeat of any slow call)', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      const s = await ctx.start("trap '' TERM; sleep 60");
      await until(() => ignoresTerm(s.pid!), 5000, 'the shell to ignore SIGTERM');
      const messages: string[] = [];
      const r = await c.client.callTool({ name: 'process_control', arguments: { action: 'kill', session_id: s.id, grace_ms: 4000 } }, undefined, {
        onprogress: (p) => {
          messages.push(p.message ?? '');
        },
      });
      expect(r.structuredContent).toMatchObject({ outcome: 'killed' });
      expect(messages.length).toBeGreaterThanOrEqual(1);
      expect(messages[0]).toMatch(/^process_control kill: running for \d+ s$/);
    } finally {
      await c.close();
    }
  });

  it('without a progress token a long wait is cut below the client 60 s timeout and says the job is still running', async () => {
    const c = await connectInMemory(ctx.registry);
    try {
      const s = await c.call('process_start', { command: 'sleep 300' });
      cleanupGroup(s.json.pid);
      // The client's default request timeout (60 s) applies: a wait past it would reject.
      const r = await c.client.callTool({ name: 'process_read', arguments: { action: 'wait', session_id: s.json.session_id, timeout_ms: 120_000 } });
      expect(r.isError).not.toBe(true);
      expect(r.structuredContent).toMatchObject({ status: 'running', timed_out: true, process_running: true });
      expect(JSON.stringify(r.structuredContent)).toMatch(/call again/);
    } finally {
      await c.close();
    }
  }, 70_000);
});
