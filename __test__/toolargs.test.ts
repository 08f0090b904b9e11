// DESIGN section 8 (LLM tool), issue 17 item 4: what strict-mode models send back (null for
// every unused field, "" or numeric-string placeholders, env as name/value pairs) gives the
// right answer through handleToolCall, against a real registry and real processes.
import Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { handleToolCall, toolDefinitions, toolDefinitionsFor } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry } from './support.js';

const ctx = perTestRegistry();

type Result = Record<string, any>;
const call = (name: string, input: unknown) => handleToolCall(ctx.registry, name, input) as Promise<Result>;

/** The OpenAI strict schema of a tool, compiled: the arguments below are what a strict model can send. */
const strictValidator = (name: string) => {
  const def = toolDefinitionsFor('openai-responses').find((t) => t.name === name)!;
  return new Ajv({ strict: false }).compile(def.parameters);
};
const validStart = strictValidator('process_start');
const validProcess = strictValidator('process');

/** Every field of the tool null, then `given`: a strict OpenAI model's call. */
function strictArgs(name: string, given: Record<string, unknown>): Record<string, unknown> {
  const base = toolDefinitions().find((t) => t.name === name)!.input_schema as { properties: Record<string, unknown> };
  const args = { ...Object.fromEntries(Object.keys(base.properties).map((k) => [k, null])), ...given };
  const validate = name === 'process' ? validProcess : validStart;
  expect(validate(args), JSON.stringify(validate.errors)).toBe(true);
  return args;
}

async function startDone(command: string, given: Record<string, unknown> = {}): Promise<string> {
  const s = await call('process_start', strictArgs('process_start', { command, ...given }));
  expect(s).toHaveProperty('session_id');
  cleanupGroup(s.pid);
  const w = await call('process', strictArgs('process', { action: 'wait', session_id: s.session_id, timeout_ms: 10_000 }));
  expect(w).toMatchObject({ status: 'exited', exit_code: 0 });
  return s.session_id;
}

describe('strict-model arguments through handleToolCall', () => {
  it('process_start with every optional field null runs the command; env pairs reach the job', async () => {
    const s = await call(
      'process_start',
      strictArgs('process_start', {
        command: 'printf "%s|%s|%s\\n" "$GREETING" "$PORT" "$EMPTY"',
        env: [
          { name: 'GREETING', value: 'hello world' },
          { name: 'PORT', value: '8080' },
          { name: 'EMPTY', value: '' },
        ],
      }),
    );
    cleanupGroup(s.pid);
    const w = await call('process', strictArgs('process', { action: 'wait', session_id: s.session_id, timeout_ms: 10_000 }));
    expect(w).toMatchObject({ exit_code: 0, output_preview: 'hello world|8080|\n' });
  });

  it('env names that are object keys: constructor reaches the job; __proto__ is refused by name, never dropped silently', async () => {
    const s = await call('process_start', { command: 'printenv constructor; printenv toString', env: [{ name: 'constructor', value: 7 }, { name: 'toString', value: 'x' }] });
    cleanupGroup(s.pid);
    const w = await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 10_000 });
    expect(w.output_preview).toBe('7\nx\n');
    const refused = { error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('"__proto__" cannot be a name here') } };
    expect(await call('process_start', { command: 'true', env: [{ name: '__proto__', value: 'p' }] })).toMatchObject(refused);
    // JSON.parse makes "__proto__" an own key of the map form too.
    expect(await call('process_start', '{"command": "true", "env": {"__proto__": "p"}}')).toMatchObject(refused);
  });

  it('env pairs that do not make a map are INVALID_ARGUMENT naming the pair, and nothing starts', async () => {
    const before = (await call('process', { action: 'list' })).sessions.length;
    const twice = await call('process_start', { command: 'true', env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }, { name: 'A', value: '3' }] });
    expect(twice).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: 'env: the name "A" is given twice (env[0] and env[2])' } });
    expect(await call('process_start', { command: 'true', env: [{ name: '', value: '1' }] })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('env[0].name') } });
    expect(await call('process_start', { command: 'true', env: [{ key: 'A', value: '1' }] })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('env[0]: expected a {name, value} pair') } });
    expect(await call('process_start', { command: 'true', env: ['A=1'] })).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
    expect((await call('process', { action: 'list' })).sessions.length).toBe(before);
  });

  it('list with task_id null or "" lists every task; a real task id filters', async () => {
    const a = await startDone('echo a', { task_id: 'task-a' });
    const b = await startDone('echo b', { task_id: 'task-b' });
    const ids = (r: Result) => (r.sessions as Result[]).map((s) => s.session_id).sort();
    const all = [a, b].sort();
    expect(ids(await call('process', strictArgs('process', { action: 'list' })))).toEqual(all);
    expect(ids(await call('process', strictArgs('process', { action: 'list', task_id: '', session_key: '' })))).toEqual(all);
    expect(ids(await call('process', strictArgs('process', { action: 'list', task_id: 'task-b' })))).toEqual([b]);
  });

  it('log: offset null gives the tail, offset 0 the head, numeric strings are numbers', async () => {
    const id = await startDone('for i in 1 2 3 4 5 6; do echo line$i; done');
    const tail = await call('process', strictArgs('process', { action: 'log', session_id: id, limit: 2 }));
    expect(tail).toMatchObject({ text: 'line5\nline6', total_lines: 6 });
    const head = await call('process', strictArgs('process', { action: 'log', session_id: id, offset: 0, limit: 2 }));
    expect(head).toMatchObject({ text: 'line1\nline2' });
    // Numeric strings (what a model that quotes numbers sends), also for 0.
    expect(await call('process', { action: 'log', session_id: id, offset: '0', limit: '3' })).toMatchObject({ text: 'line1\nline2\nline3' });
    expect(await call('process', { action: 'log', session_id: id, offset: '', limit: '1' })).toMatchObject({ text: 'line6' });
  });

  it('numbers only in decimal digits: "1e3", "1.5", " 5", "0x10" are refused naming the field', async () => {
    const id = await startDone('echo x');
    for (const bad of ['1e3', '1.5', ' 5', '0x10', '99999999999999999999']) {
      const r = await call('process', { action: 'log', session_id: id, limit: bad });
      expect(r, bad).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('limit') } });
    }
    // 0 is never a placeholder: a zero limit is refused, not taken as "unset".
    expect(await call('process', { action: 'log', session_id: id, limit: 0 })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('limit') } });
  });

  it('session_id: the full "proc_..." string and a prefix work; "" or null is a missing id, never another session', async () => {
    const id = await startDone('echo y');
    expect(await call('process', strictArgs('process', { action: 'poll', session_id: id }))).toMatchObject({ session_id: id });
    expect(await call('process', strictArgs('process', { action: 'poll', session_id: id.slice(5, 10) }))).toMatchObject({ session_id: id });
    for (const missing of ['', null]) {
      expect(await call('process', strictArgs('process', { action: 'poll', session_id: missing }))).toMatchObject({
        error: { code: 'INVALID_ARGUMENT', message: 'action poll needs session_id' },
      });
    }
  });

  it('booleans and nested numbers as strings: stdin "true" opens stdin, pty {cols: "100", rows: "30"} sizes the terminal', async () => {
    const s = await call('process_start', { command: 'read a; echo "got $a"', stdin: 'true' });
    cleanupGroup(s.pid);
    expect(await call('process', { action: 'submit', session_id: s.session_id, text: 'hi' })).toMatchObject({ bytes: 3 });
    expect(await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 10_000 })).toMatchObject({ output_preview: 'got hi\n' });
    const t = await call('process_start', { command: 'stty size', pty: { cols: '100', rows: '30' } });
    cleanupGroup(t.pid);
    const w = await call('process', { action: 'wait', session_id: t.session_id, timeout_ms: 10_000 });
    expect(w.output_preview.trim()).toBe('30 100');
  });

  it('blank data and text stay requests (submit "" sends Enter); a blank command stays refused', async () => {
    const s = await call('process_start', { command: 'read a; echo "got [$a]"', stdin: true });
    cleanupGroup(s.pid);
    expect(await call('process', strictArgs('process', { action: 'submit', session_id: s.session_id, text: '' }))).toMatchObject({ bytes: 1 });
    expect(await call('process', { action: 'wait', session_id: s.session_id, timeout_ms: 10_000 })).toMatchObject({ output_preview: 'got []\n' });
    expect(await call('process_start', strictArgs('process_start', { command: '' }))).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('command') } });
  });

  it('arguments as a JSON string are read; a string that is not JSON is INVALID_ARGUMENT; the caller’s object is never changed', async () => {
    const id = await startDone('echo z');
    expect(await call('process', JSON.stringify({ action: 'poll', session_id: id, acknowledge: null }))).toMatchObject({ session_id: id });
    expect(await call('process', '{"action": "poll"')).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('not JSON') } });
    const frozen = Object.freeze(strictArgs('process', { action: 'poll', session_id: id }));
    const copy = JSON.stringify(frozen);
    expect(await call('process', frozen)).toMatchObject({ session_id: id });
    expect(JSON.stringify(frozen)).toBe(copy);
  });

  it('null for a required field or an unknown key is still an error, with the did-you-mean hint', async () => {
    expect(await call('process', { ...strictArgs('process', { action: 'list' }), action: null })).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringContaining('action') } });
    expect(await call('process', { action: 'list', taskid: null })).toMatchObject({
      error: { code: 'INVALID_ARGUMENT', message: 'input: unknown key `taskid` (did you mean `task_id`?)' },
    });
  });
});
