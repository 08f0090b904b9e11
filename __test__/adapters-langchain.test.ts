// procward/langchain: LangChain's own fake chat model (FakeStreamingChatModel, bound to the
// tools with bindTools) emits the tool calls a real model would, and LangChain's tools run
// them against a real registry and real processes, in LangChain's manual tool loop.
import { type AIMessage, AIMessageChunk, type BaseMessage, HumanMessage, type ToolMessage } from '@langchain/core/messages';
import type { ToolCall } from '@langchain/core/messages/tool';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { describe, expect, it } from 'vitest';
import { procwardTools } from '../dist/langchain.mjs';
import { toolDefinitions, toolDefinitionsFor } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

type Tools = ReturnType<typeof procwardTools>;

/**
 * One turn of the loop: the fake model, bound to `tools`, answers `messages` with `call`
 * (what the scripted "model" decided from the messages so far); every tool call in its
 * answer is run by the tool of that name, and the ToolMessages are appended.
 */
async function turn(tools: Tools, messages: BaseMessage[], call: ToolCall): Promise<{ ai: AIMessage; offered: unknown[]; results: ToolMessage[] }> {
  const bound = new FakeStreamingChatModel({ chunks: [new AIMessageChunk({ content: '', tool_calls: [call] })] }).bindTools(tools);
  const ai = (await bound.invoke(messages)) as AIMessage;
  messages.push(ai);
  const results: ToolMessage[] = [];
  for (const c of ai.tool_calls ?? []) {
    const tool = tools.find((t) => t.name === c.name)!;
    const message = (await tool.invoke(c)) as ToolMessage;
    messages.push(message);
    results.push(message);
  }
  return { ai, offered: (bound as unknown as { config: { tools: unknown[] } }).config.tools, results };
}

/** The result a ToolMessage carries as text, parsed (what the model reads). */
const read = (m: ToolMessage | undefined) => JSON.parse(String(m?.content));

describe('procward/langchain: tools for LangChain.js', () => {
  it('the fake model starts `echo hello`, waits for the session id it read, and the last ToolMessage carries the output and exit code 0', async () => {
    const tools = procwardTools(ctx.registry);
    const messages: BaseMessage[] = [new HumanMessage('Say hello from the shell')];
    const first = await turn(tools, messages, { id: 'c1', name: 'process_start', args: { command: 'echo hello' }, type: 'tool_call' });
    const started = read(first.results[0]);
    cleanupGroup(started.pid);
    expect(started).toMatchObject({ status: 'running', command: 'echo hello' });
    const second = await turn(tools, messages, { id: 'c2', name: 'process', args: { action: 'wait', session_id: started.session_id, timeout_ms: 15_000 }, type: 'tool_call' });
    const waited = second.results[0]!;
    expect(waited.tool_call_id).toBe('c2');
    expect(read(waited)).toMatchObject({ session_id: started.session_id, status: 'exited', exit_code: 0 });
    expect(read(waited).output_preview).toContain('hello');
    // The artifact is the same result as an object, for the application.
    expect(waited.artifact).toEqual(read(waited));
    // What the model was offered: procward's schemas, as an OpenAI-style tool list.
    expect(first.offered).toEqual(toolDefinitions().map((d) => ({ type: 'function', function: { name: d.name, description: d.description, parameters: d.input_schema } })));
  });

  it('provider openai-chat declares the strict variant, so the nulls a strict model sends pass LangChain’s own input check and get right answers', async () => {
    const variant = toolDefinitionsFor('openai-chat');
    const nulls = (name: string, set: Record<string, unknown>) => {
      const schema = variant.find((t) => t.function.name === name)!.function.parameters as { properties: Record<string, unknown> };
      return { ...Object.fromEntries(Object.keys(schema.properties).map((k) => [k, null])), ...set };
    };
    const tools = procwardTools(ctx.registry, { provider: 'openai-chat' });
    expect(tools.map((t) => t.schema)).toEqual(variant.map((t) => t.function.parameters));
    const messages: BaseMessage[] = [new HumanMessage('count')];
    const first = await turn(tools, messages, { id: 'c1', name: 'process_start', args: nulls('process_start', { command: 'printf "one\\ntwo\\n"', yield_ms: 10_000 }), type: 'tool_call' });
    const started = read(first.results[0]);
    cleanupGroup(started.pid);
    expect(started).toMatchObject({ status: 'exited', exit_code: 0 });
    const second = await turn(tools, messages, { id: 'c2', name: 'process', args: nulls('process', { action: 'log', session_id: started.session_id, offset: 0, limit: 1 }), type: 'tool_call' });
    expect(read(second.results[0]).text).toBe('one');
    // The base schema refuses the same nulls before the tool runs: LangChain says which field and why.
    const base = procwardTools(ctx.registry);
    await expect(base[1]!.invoke({ id: 'c3', name: 'process', args: nulls('process', { action: 'list' }), type: 'tool_call' })).rejects.toThrow(/did not match expected schema[\s\S]*type/);
  });

  it('procward’s failures come back as ToolMessages the model reads: a misspelt key with a hint, another task’s session as UNKNOWN_SESSION', async () => {
    const other = await ctx.start('sleep 30', { taskId: 'other-task' });
    const tools = procwardTools(ctx.registry, { context: { taskId: 'mine' } });
    const messages: BaseMessage[] = [new HumanMessage('x')];
    const first = await turn(tools, messages, { id: 'c1', name: 'process', args: { action: 'wait', session_id: other.id, timeout_ms: 1000 }, type: 'tool_call' });
    expect(read(first.results[0]).error.code).toBe('UNKNOWN_SESSION');
    const list = await turn(tools, messages, { id: 'c2', name: 'process', args: { action: 'list' }, type: 'tool_call' });
    expect(read(list.results[0]).sessions).toEqual([]);
    // Unknown keys pass the base schema's check only where it allows them; the handler names the right key.
    const loose = procwardTools(ctx.registry, { provider: 'gemini', context: { taskId: 'mine' } });
    const wrong = await turn(loose, messages, { id: 'c3', name: 'process_start', args: { command: 'true', timeout: 5 }, type: 'tool_call' });
    expect(read(wrong.results[0]).error).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(read(wrong.results[0]).error.message).toMatch(/timeout_ms/);
    expect((await ctx.registry.poll(other.id)).status).toBe('running');
  });

  it('aborting the run (config.signal) during a 600 s wait ends the registry wait; LangChain rejects with its abort error and the job keeps running', async () => {
    const controller = new AbortController();
    const tools = procwardTools(ctx.registry, { onProgress: () => controller.abort() });
    const job = await ctx.start('sleep 30');
    // When the registry's own wait settles: only the abort can end a 600 s wait here.
    const ended: string[] = [];
    const wait = ctx.registry.wait.bind(ctx.registry);
    ctx.registry.wait = (id, opts) => wait(id, opts).finally(() => ended.push(id));
    const call = { id: 'c1', name: 'process', args: { action: 'wait', session_id: job.id, timeout_ms: 600_000 }, type: 'tool_call' } as const;
    await expect(tools[1]!.invoke(call, { signal: controller.signal })).rejects.toThrow(/abort/i);
    await until(() => ended.length > 0, 15_000, 'the registry wait to end');
    expect(ended).toEqual([job.id]);
    expect((await ctx.registry.poll(job.id)).status).toBe('running');
  });
});
