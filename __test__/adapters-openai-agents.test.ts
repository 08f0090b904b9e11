// procward/openai-agents: the OpenAI Agents SDK's run loop with a scripted Model (the SDK
// has no mock model; a Model is its interface to OpenAI, which cannot be reached here)
// calls the tools against a real registry and real processes.
import { Agent, type Model, type ModelRequest, type ModelResponse, run, Usage } from '@openai/agents';
import { describe, expect, it } from 'vitest';
import { toolDefinitionsFor } from '../dist/index.mjs';
import { procwardTools } from '../dist/openai-agents.mjs';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

const variant = toolDefinitionsFor('openai-responses');
/** What a strict model sends: every field of the tool, null where it does not apply. */
const nulls = (name: string, set: Record<string, unknown>) => {
  const schema = variant.find((t) => t.name === name)!.parameters as { properties: Record<string, unknown> };
  return { ...Object.fromEntries(Object.keys(schema.properties).map((k) => [k, null])), ...set };
};

/** The outputs of the function calls the model has been sent so far, parsed. */
const outputs = (request: ModelRequest): any[] =>
  (Array.isArray(request.input) ? request.input : [])
    .filter((i: any) => i.type === 'function_call_result')
    .map((i: any) => JSON.parse(typeof i.output === 'string' ? i.output : i.output.text));

/** A model that starts `command`, waits for the session it read from the start's result, then answers with the wait's result. */
function startThenWait(command: string, timeoutMs: number, seen: ModelRequest[] = []): Model {
  return {
    async getResponse(request): Promise<ModelResponse> {
      seen.push(request);
      const usage = new Usage();
      const done = outputs(request);
      const call = (name: string, args: unknown) => ({ usage, output: [{ type: 'function_call' as const, callId: `c${done.length}`, name, arguments: JSON.stringify(args), status: 'completed' as const }] });
      if (done.length === 0) return call('process_start', nulls('process_start', { command }));
      if (done.length === 1) {
        cleanupGroup(done[0].pid);
        return call('process', nulls('process', { action: 'wait', session_id: done[0].session_id, timeout_ms: timeoutMs }));
      }
      return { usage, output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: JSON.stringify(done[1]) }] }] };
    },
    getStreamedResponse() {
      throw new Error('not streamed in this test');
    },
  };
}

describe('procward/openai-agents: tools for the OpenAI Agents SDK', () => {
  it('a run starts `echo hello` and waits for it; the final output carries the output and exit code 0; the model was offered the strict variant', async () => {
    const seen: ModelRequest[] = [];
    const agent = new Agent({ name: 'ops', instructions: 'Run what is asked.', model: startThenWait('echo hello', 15_000, seen), tools: procwardTools(ctx.registry) });
    const result = await run(agent, 'Say hello from the shell');
    const answer = JSON.parse(String(result.finalOutput));
    expect(answer).toMatchObject({ status: 'exited', exit_code: 0 });
    expect(answer.output_preview).toContain('hello');
    const offered = seen[0]!.tools.filter((t: any) => t.type === 'function') as any[];
    expect(offered.map((t) => [t.name, t.parameters, t.strict])).toEqual(variant.map((t) => [t.name, t.parameters, true]));
  });

  it('the context scopes the tools: another task’s session is UNKNOWN_SESSION to the model and keeps running', async () => {
    const other = await ctx.start('sleep 30', { taskId: 'other-task' });
    const tool = procwardTools(ctx.registry, { context: { taskId: 'mine' } })[1]!;
    const agent = new Agent({
      name: 'ops',
      model: {
        async getResponse(request): Promise<ModelResponse> {
          const usage = new Usage();
          const done = outputs(request);
          if (done.length === 0) return { usage, output: [{ type: 'function_call', callId: 'c1', name: 'process', arguments: JSON.stringify(nulls('process', { action: 'kill', session_id: other.id })), status: 'completed' }] };
          return { usage, output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: JSON.stringify(done[0]) }] }] };
        },
        getStreamedResponse() {
          throw new Error('not streamed in this test');
        },
      },
      tools: [tool],
    });
    const result = await run(agent, 'kill it');
    expect(JSON.parse(String(result.finalOutput)).error.code).toBe('UNKNOWN_SESSION');
    expect((await ctx.registry.poll(other.id)).status).toBe('running');
  });

  it('aborting the run (run(..., { signal })) during a 600 s wait ends the registry wait; the job keeps running', async () => {
    const controller = new AbortController();
    const agent = new Agent({ name: 'ops', model: startThenWait('sleep 30', 600_000), tools: procwardTools(ctx.registry, { onProgress: () => controller.abort() }) });
    // When the registry's own wait settles: only the abort can end a 600 s wait here.
    const ended: string[] = [];
    const wait = ctx.registry.wait.bind(ctx.registry);
    ctx.registry.wait = (id, opts) => wait(id, opts).finally(() => ended.push(id));
    await run(agent, 'x', { signal: controller.signal }).catch(() => undefined);
    await until(() => ended.length > 0, 15_000, 'the registry wait to end');
    const [job] = await ctx.registry.list();
    expect(ended).toEqual([job!.id]);
    expect(job!.status).toBe('running');
  });
});
