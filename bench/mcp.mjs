// One agent-surface round trip: a `process` poll through `handleToolCall` in process, and
// through procward's MCP server over stdio (the official SDK client), beside the SDK's own
// echo server over stdio as the anchor (the least any MCP tool call over stdio costs).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';
import { ROOT, median, table } from './lib.mjs';

const nowUs = () => Number(process.hrtime.bigint()) / 1000;

/** Median µs of `rounds` sequential calls of `call`, after `warmup` calls. */
async function timeCalls(call, { rounds = 400, warmup = 50 } = {}) {
  for (let i = 0; i < warmup; i++) await call();
  const us = [];
  for (let i = 0; i < rounds; i++) {
    const t = nowUs();
    await call();
    us.push(nowUs() - t);
  }
  return median(us);
}

async function connect(args, env) {
  const client = new Client({ name: 'procward-bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args, env: { ...process.env, ...env }, stderr: 'ignore' }));
  return client;
}

export async function mcpBench({ rounds = 400 } = {}) {
  const state = mkdtempSync(join(tmpdir(), 'procward-bench-mcp-'));
  const r = await ProcessRegistry.open();
  const local = await r.spawn('sleep 600');
  const direct = await timeCalls(() => handleToolCall(r, 'process', { action: 'poll', session_id: local.id }), { rounds });

  const echo = await connect([join(ROOT, 'bench', 'fixtures', 'echo-mcp.mjs')]);
  const anchor = await timeCalls(() => echo.callTool({ name: 'echo', arguments: { action: 'poll', session_id: 'proc_000000000000' } }), { rounds });
  await echo.close();

  const mcp = await connect([join(ROOT, 'dist', 'cli.mjs'), 'mcp', '--state-dir', state]);
  const started = await mcp.callTool({ name: 'process_start', arguments: { command: 'sleep 600' } });
  const id = JSON.parse(started.content[0].text).session_id;
  const viaMcp = await timeCalls(() => mcp.callTool({ name: 'process', arguments: { action: 'poll', session_id: id } }), { rounds });
  await mcp.callTool({ name: 'process', arguments: { action: 'kill', session_id: id, grace_ms: 0 } });
  await mcp.close();

  await r.kill(local.id, { graceMs: 0 }).catch(() => {});
  await r.close();
  rmSync(state, { recursive: true, force: true });
  const us = (x) => `${x.toFixed(0)} µs`;
  return (
    table(`Agent-surface round trip: one \`process\` poll of a running session — median of ${rounds}`, ['handleToolCall (in process)', 'SDK echo server over stdio (anchor)', 'procward MCP server over stdio', 'procward MCP / echo'], [
      [us(direct), us(anchor), us(viaMcp), `${(viaMcp / anchor).toFixed(2)}×`],
    ]) + '\nBoth MCP rows use the official SDK client and a server spawned over stdio; the echo server answers a tool call with its arguments and does no work.\n'
  );
}
