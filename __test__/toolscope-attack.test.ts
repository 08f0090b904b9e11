// Attack findings against the tool's scope and argument checks (issue 17), fixed: once
// written as it.fails in attack17-bugs.test.ts, now the behaviour that holds.
import { describe, expect, it } from 'vitest';
import { handleToolCall } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry } from './support.js';

const ctx = perTestRegistry();

describe('tool handler never throws (issue 17)', () => {
  // ts/optioncheck.ts closestName: ALIASES[key] with key 'constructor' is
  // Object.prototype.constructor, and nameDistance calls .toLowerCase() on it. The TypeError
  // escapes from handleToolCall's catch block (describeIssues runs inside it).
  it('an unknown key named `constructor` is INVALID_ARGUMENT', async () => {
    const r = await handleToolCall(ctx.registry, 'process', { action: 'list', constructor: 'x' });
    expect(r).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  });
});

describe('tool scope with half a context (issue 17)', () => {
  // ts/surfaces/tool.ts start() and manage('list'): `ctx.taskId ?? input.task_id` and
  // `ctx.sessionKey ?? input.session_key`. A host that scopes calls by one of the two (an MCP
  // server made for one conversation: { sessionKey }) lets the model fill in the other:
  // list shows another conversation's sessions, and process_start files a job under another
  // task, whose agent then sees it as its own and gets its (attacker-written) output as a
  // completion notification.
  it('a context with only a session key cannot list another task by task_id', async () => {
    const victim = await ctx.start('sleep 20', { taskId: 'taskB', sessionKey: 'convB' });
    const r = (await handleToolCall(ctx.registry, 'process', { action: 'list', task_id: 'taskB' }, { sessionKey: 'convA' })) as { sessions: { session_id: string }[] };
    expect(r.sessions.map((s) => s.session_id)).not.toContain(victim.id);
  });

  it('a context with only a task id cannot file a job under another conversation', async () => {
    const r = (await handleToolCall(ctx.registry, 'process_start', { command: 'sleep 20', session_key: 'convB' }, { taskId: 'A' })) as { session_id: string; pid: number };
    cleanupGroup(r.pid);
    const b = (await handleToolCall(ctx.registry, 'process', { action: 'list' }, { taskId: 'taskB', sessionKey: 'convB' })) as { sessions: { session_id: string }[] };
    expect(b.sessions.map((s) => s.session_id)).not.toContain(r.session_id);
  });
});

