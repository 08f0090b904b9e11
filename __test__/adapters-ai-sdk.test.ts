// procward/ai-sdk: the AI SDK's own mock model (ai/test MockLanguageModelV3) drives
// generateText through real tool calls against a real registry and real processes.
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { procwardTools } from '../dist/ai-sdk.mjs';
import { toolDefinitions, toolDefinitionsFor } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

type Prompt = Parameters<MockLanguageModelV3['doGenerate']>[0]['prompt'];
type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

/** The tool results the model has been sent so far, newest last, as `{ name, value }`. */
function toolResults(prompt: Prompt): { name: string; value: any }[] {
  return prompt.flatMap((m) =>
    m.role === 'tool' ? m.content.flatMap((p) => (p.type === 'tool-result' ? [{ name: p.toolName, value: p.output.type === 'json' ? p.output.value : p.output }] : [])) : [],
  );
}

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

function callTool(id: string, toolName: string, input: unknown): LanguageModelV3GenerateResult {
  return { content: [{ type: 'tool-call', toolCallId: id, toolName, input: JSON.stringify(input) }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] };
}

function say(text: string): LanguageModelV3GenerateResult {
  return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
}

/**
 * A scripted model: starts `command`, then waits for the session the start returned (its id
 * read from the tool result, as a model would), then answers with the wait's result.
 */
function startThenWait(command: string, waitInput: Record<string, unknown> = {}, startExtra: Record<string, unknown> = {}) {
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const results = toolResults(prompt);
      if (results.length === 0) return callTool('c1', 'process_start', { command, ...startExtra });
      if (results.length === 1) {
        const started = results[0]!.value;
        if (started.pid) cleanupGroup(started.pid);
        return callTool('c2', 'process', { ...waitInput, action: 'wait', session_id: started.session_id, timeout_ms: waitInput.timeout_ms ?? 15_000 });
      }
      return say(JSON.stringify(results[1]!.value));
    },
  });
}

describe('procward/ai-sdk: tools for the Vercel AI SDK', () => {
  it('a mock model starts `echo hello`, waits for it, and its answer carries the output and exit code 0', async () => {
    const model = startThenWait('echo hello');
    const result = await generateText({ model, prompt: 'Say hello from the shell', tools: procwardTools(ctx.registry), stopWhen: stepCountIs(5) });
    const answer = JSON.parse(result.text);
    expect(answer).toMatchObject({ status: 'exited', exit_code: 0 });
    expect(answer.output_preview).toContain('hello');
    expect(result.steps.map((s) => s.toolCalls.map((c) => c.toolName))).toEqual([['process_start'], ['process'], []]);
    // The model was offered the base schemas, as procward defines them, and no strict flag.
    const offered = model.doGenerateCalls[0]!.tools!;
    expect(offered.map((t) => t.name)).toEqual(['process_start', 'process']);
    expect(offered.map((t) => (t as { inputSchema: unknown }).inputSchema)).toEqual(toolDefinitions().map((d) => d.input_schema));
    expect(offered.every((t) => !('strict' in t) || t.strict === undefined)).toBe(true);
  });

  it('provider openai-responses offers the strict variant with strict: true, and a model that sends null for every unused field gets the right answer', async () => {
    const variant = toolDefinitionsFor('openai-responses');
    const nulls = (name: string, set: Record<string, unknown>) => {
      const schema = variant.find((t) => t.name === name)!.parameters as { properties: Record<string, unknown> };
      return { ...Object.fromEntries(Object.keys(schema.properties).map((k) => [k, null])), ...set };
    };
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        const results = toolResults(prompt);
        if (results.length === 0) return callTool('c1', 'process_start', nulls('process_start', { command: 'printf "one\\ntwo\\nthree\\n"' }));
        if (results.length === 1) {
          cleanupGroup(results[0]!.value.pid);
          return callTool('c2', 'process', nulls('process', { action: 'wait', session_id: results[0]!.value.session_id, timeout_ms: 15_000 }));
        }
        // offset 0 is the first line, an empty filter is no filter: "0" and "" stay meaningful placeholders.
        if (results.length === 2) return callTool('c3', 'process', nulls('process', { action: 'log', session_id: results[1]!.value.session_id, offset: 0, limit: 1, filter: '' }));
        return say(JSON.stringify(results.map((r) => r.value)));
      },
    });
    const result = await generateText({ model, prompt: 'count', tools: procwardTools(ctx.registry, { provider: 'openai-responses' }), stopWhen: stepCountIs(6) });
    const [started, waited, log] = JSON.parse(result.text);
    expect(started.error).toBeUndefined();
    expect(waited).toMatchObject({ status: 'exited', exit_code: 0 });
    expect(log.text).toBe('one');
    const offered = model.doGenerateCalls[0]!.tools! as { name: string; inputSchema: unknown; strict?: boolean }[];
    expect(offered.map((t) => [t.name, t.inputSchema, t.strict])).toEqual(variant.map((t) => [t.name, t.parameters, true]));
  });

  it('a bad call is a result the model reads (unknown key with a hint, unknown session), not an exception of generateText', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        const results = toolResults(prompt);
        if (results.length === 0) return callTool('c1', 'process_start', { command: 'true', timeout: 5 });
        if (results.length === 1) return callTool('c2', 'process', { action: 'poll', session_id: 'proc_000000000000' });
        return say(JSON.stringify(results.map((r) => r.value)));
      },
    });
    const result = await generateText({ model, prompt: 'x', tools: procwardTools(ctx.registry), stopWhen: stepCountIs(4) });
    const [badKey, unknown] = JSON.parse(result.text);
    expect(badKey.error.code).toBe('INVALID_ARGUMENT');
    expect(badKey.error.message).toMatch(/timeout_ms/);
    expect(unknown.error.code).toBe('UNKNOWN_SESSION');
    expect(await ctx.registry.list()).toEqual([]);
  });

  it('the context scopes the tools: a job started through them is filed under the task, another task’s session is UNKNOWN_SESSION', async () => {
    const other = await ctx.start('sleep 30', { taskId: 'other-task' });
    const model = new MockLanguageModelV3({
      doGenerate: async ({ prompt }) => {
        const results = toolResults(prompt);
        if (results.length === 0) return callTool('c1', 'process', { action: 'kill', session_id: other.id });
        if (results.length === 1) return callTool('c2', 'process_start', { command: 'true', task_id: 'other-task' });
        return say(JSON.stringify(results.map((r) => r.value)));
      },
    });
    const result = await generateText({ model, prompt: 'x', tools: procwardTools(ctx.registry, { context: { taskId: 'mine' } }), stopWhen: stepCountIs(4) });
    const [kill, started] = JSON.parse(result.text);
    cleanupGroup(started.pid);
    expect(kill.error.code).toBe('UNKNOWN_SESSION');
    expect((await ctx.registry.poll(other.id)).status).toBe('running');
    expect((await ctx.registry.poll(started.session_id)).taskId).toBe('mine');
  });

  it('aborting generateText during a long wait ends the wait (the abort reaches the registry); the job keeps running', async () => {
    const controller = new AbortController();
    const model = startThenWait('sleep 30', { timeout_ms: 600_000 });
    // The wait reports progress once it runs in the registry: abort only then.
    const tools = procwardTools(ctx.registry, { onProgress: () => controller.abort(new Error('user pressed stop')) });
    // What the tool's execute itself returned, whatever generateText does with it.
    const settled: unknown[] = [];
    const execute = tools.process.execute!;
    tools.process.execute = (async (input, options) => {
      const result = await execute(input, options);
      settled.push(result);
      return result;
    }) as typeof execute;
    const run = generateText({ model, prompt: 'x', tools, stopWhen: stepCountIs(5), abortSignal: controller.signal });
    await expect(run).rejects.toThrow('user pressed stop');
    // A 600 s wait: only the abort can have ended it.
    await until(() => settled.length > 0, 15_000, 'the wait to return');
    expect(settled[0]).toMatchObject({ aborted: true, status: 'running' });
    const [job] = await ctx.registry.list();
    expect(job?.status).toBe('running');
    await ctx.registry.kill(job!.id, { graceMs: 0 });
    await until(async () => (await ctx.registry.poll(job!.id)).status !== 'running', 10_000, 'the job to end');
  });
});
