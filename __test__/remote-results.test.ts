// Issue 19 item 3, the agent surface: process_start's own result says where the job runs
// (`environment` by name, `pid_scope`), on the LLM tool and on MCP (the SDK's real client,
// which checks every result against the tool's output schema), for a configured local-shell
// environment, a real sshd on 127.0.0.1, and a job of this host.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleToolCall, localShell, ProcessRegistry, SshEnvironment } from '../dist/index.mjs';
import { connectInMemory } from './mcp-support.js';
import { haveSshd, testSshd, type TestSshd } from './sshd.mjs';
import { tempDir } from './support.js';

/** A registry with one local-shell environment named `box`. */
function boxRegistry(): Promise<ProcessRegistry> {
  return ProcessRegistry.open({ environments: { box: localShell({ tmpDir: tempDir() }) } });
}

describe('process_start says where the job runs', () => {
  it('tool: a job in box has environment "box" and pid_scope "sandbox"; a job of this host has pid_scope "host" and no environment', async () => {
    const r = await boxRegistry();
    try {
      const far: any = await handleToolCall(r, 'process_start', { command: 'sleep 300', environment: 'box' });
      expect(far).toMatchObject({ status: 'running', environment: 'box', pid_scope: 'sandbox' });
      const ended: any = await handleToolCall(r, 'process_start', { command: 'echo hi; exit 2', environment: 'box', yield_ms: 20_000 });
      expect(ended).toMatchObject({ status: 'exited', exit_code: 2, environment: 'box', pid_scope: 'sandbox' });
      const here: any = await handleToolCall(r, 'process_start', { command: 'sleep 300' });
      expect(here).toMatchObject({ status: 'running', pid_scope: 'host' });
      expect('environment' in here).toBe(false);
      expect(Object.keys(far)).not.toContain('pidScope');
      for (const id of [far.session_id, here.session_id]) await r.kill(id, { graceMs: 0 });
    } finally {
      await r.close();
    }
  }, 60_000);

  it('MCP: the real client takes both results (valid against the output schema) and sees the same keys', async () => {
    const r = await boxRegistry();
    const c = await connectInMemory(r);
    try {
      const start = (await c.client.listTools()).tools.find((t) => t.name === 'process_start');
      expect(start?.outputSchema?.properties).toMatchObject({ pid_scope: { enum: ['host', 'sandbox'] }, environment: { type: 'string' } });
      const far = await c.call('process_start', { command: 'echo from-box; exit 5', environment: 'box', yield_ms: 20_000 });
      expect(far.isError).toBe(false);
      expect(far.structured).toMatchObject({ exit_code: 5, environment: 'box', pid_scope: 'sandbox' });
      expect(far.json).toEqual(far.structured);
      const here = await c.call('process_start', { command: 'exit 0', yield_ms: 20_000 });
      expect(here.structured).toMatchObject({ exit_code: 0, pid_scope: 'host' });
      expect('environment' in here.structured).toBe(false);
    } finally {
      await c.close();
      await r.close();
    }
  }, 60_000);
});

describe.skipIf(!haveSshd)('process_start in an SSH environment (real sshd on 127.0.0.1)', () => {
  let sshd: TestSshd;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'procward-results-ssh-'));
    sshd = await testSshd(dir);
    await sshd.start();
  }, 60_000);
  afterAll(async () => {
    await sshd?.stop();
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  });

  it('the tool result names the environment "build" and pid_scope "sandbox"', async () => {
    const env = new SshEnvironment({ kind: 'ssh', host: '127.0.0.1', port: sshd.port, user: sshd.user, identityFile: sshd.identityFile, options: sshd.options, tmpDir: join(dir, 'far') });
    const r = await ProcessRegistry.open({ environments: { build: env } });
    try {
      const res: any = await handleToolCall(r, 'process_start', { command: 'echo over-ssh; exit 4', environment: 'build', yield_ms: 30_000 });
      expect(res).toMatchObject({ status: 'exited', exit_code: 4, environment: 'build', pid_scope: 'sandbox' });
      expect(res.output).toContain('over-ssh');
    } finally {
      await r.close();
      await env.close();
    }
  }, 60_000);
});
