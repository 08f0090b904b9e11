// DESIGN section 8: the LLM tool surface (the MCP server's tests are __test__/mcp*.test.ts).
import { describe, expect, it } from 'vitest';
import { handleToolCall, openAiTools, toolDefinitions } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry } from './support.js';

const ctx = perTestRegistry();

const call = (name: string, input: unknown) => handleToolCall(ctx.registry, name, input) as Promise<Record<string, any>>;

describe('LLM tool', () => {
  it('exports JSON Schemas in the plain and the OpenAI shapes', () => {
    const defs = toolDefinitions();
    expect(defs.map((d) => d.name)).toEqual(['process_start', 'process']);
    const processTool = defs[1]!;
    expect((processTool.input_schema as any).properties.action.enum).toEqual(['list', 'poll', 'log', 'wait', 'kill', 'signal', 'write', 'submit', 'close', 'screen', 'notifications']);
    expect((processTool.input_schema as any).required).toEqual(['action']);
    expect(openAiTools()[0]).toMatchObject({ type: 'function', function: { name: 'process_start', parameters: { type: 'object' } } });
  });

  it('start, poll, wait, log and kill with snake_case results; session_id accepts a prefix and a number-like id', async () => {
    const started = await call('process_start', { command: 'echo one; echo two; sleep 30', task_id: 't1' });
    expect(started).toMatchObject({ status: 'running' });
    cleanupGroup(started.pid);
    const id: string = started.session_id;
    const prefix = id.slice(5, 11);
    const polled = await call('process', { action: 'poll', session_id: prefix });
    expect(polled).toMatchObject({ session_id: id, status: 'running', task_id: 't1' });
    expect(polled).toHaveProperty('output_preview');
    const waited = await call('process', { action: 'wait', session_id: id, timeout_ms: 300 });
    expect(waited).toMatchObject({ timed_out: true, process_running: true });
    const log = await call('process', { action: 'log', session_id: id, offset: 0, limit: 1 });
    expect(log).toMatchObject({ text: 'one', total_lines: 2, first_line: 0, lines_read: 1 });
    expect(log).not.toHaveProperty('lines');
    const killed = await call('process', { action: 'kill', session_id: id, grace_ms: 300 });
    expect(killed).toMatchObject({ outcome: 'killed', survivors: [] });
    const listed = await call('process', { action: 'list' });
    expect(listed.sessions[0]).toMatchObject({ session_id: id, status: 'exited', reason: 'killed' });
  });

  it('bad calls give an error object naming what is wrong, never a throw', async () => {
    expect(await call('process', { action: 'explode' })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('action') } });
    expect(await call('process', { action: 'poll' })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('session_id') } });
    expect(await call('process', { action: 'poll', session_id: 'proc_ffffffffffff' })).toMatchObject({ error: { code: 'UNKNOWN_SESSION' } });
    expect(await call('process', { action: 'wait', session_id: 'abcd', timeout_ms: 'soon' })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('timeout_ms') } });
    expect(await call('process_start', {})).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('command') } });
    expect(await call('nope', {})).toMatchObject({ error: { code: 'UNKNOWN_TOOL' } });
    expect(await call('process', null)).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  });

  it('write, submit and close reach a job started with stdin; an exited job gives an error object', async () => {
    const s = await call('process_start', { command: 'read a; echo "got $a"; cat; echo after-eof', stdin: true });
    cleanupGroup(s.pid);
    expect(await call('process', { action: 'submit', session_id: s.session_id, text: 'hello' })).toMatchObject({ bytes: 6 });
    expect(await call('process', { action: 'write', session_id: s.session_id, data: 'raw\n' })).toMatchObject({ bytes: 4 });
    expect(await call('process', { action: 'close', session_id: s.session_id })).toMatchObject({ closed: true });
    const w = await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 5000 });
    expect(w.output_preview).toBe('got hello\nraw\nafter-eof\n');
    expect(await call('process', { action: 'write', session_id: s.session_id, data: 'late' })).toMatchObject({ error: { code: 'SESSION_EXITED' } });
  });

  it('results never carry a secret from the command or the output', async () => {
    const token = 'sk-proj-' + 'Zq8rT2vX9wY4uP6sN1mK3jH5gF7dS0aLbCe';
    const s = await call('process_start', { command: `echo "using ${token}"` });
    cleanupGroup(s.pid);
    const w = await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 5000 });
    expect(JSON.stringify(s)).not.toContain(token);
    expect(JSON.stringify(w)).not.toContain(token);
  });
});
