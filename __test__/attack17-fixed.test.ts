// Attack findings against the tool's scope, argument checks and spawn policy (issue 17), fixed: once
// written as it.fails in attack17-bugs.test.ts, now the behaviour that holds.
import { mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { descendants, handleToolCall, ProcessRegistry, probe } from '../dist/index.mjs';
import { cleanupGroup, isAlive, perTestRegistry, tempDir, until } from './support.js';

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
  // ts/surfaces/tool/handler.ts start() and manage('list'): `ctx.taskId ?? input.task_id` and
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


describe('spawn policy (issue 18)', () => {
  // ts/policy/spawnpolicy.ts DEFAULT_DENIED_ENV refuses BASH_ENV, PROMPT_COMMAND, SHELLOPTS
  // and IFS but not exported bash functions: BASH_FUNC_<name>%% is imported by the job's own
  // `bash -c` and replaces any command of the job (here echo) with the model's code.
  it('a model-supplied exported bash function (BASH_FUNC_echo%%) is refused', async () => {
    const r = (await handleToolCall(ctx.registry, 'process_start', {
      command: 'echo hi',
      env: { 'BASH_FUNC_echo%%': '() { builtin echo injected; }' },
      yield_ms: 5000,
    })) as Record<string, unknown>;
    if (typeof r.pid === 'number') cleanupGroup(r.pid);
    expect(r).toMatchObject({ error: { code: 'SPAWN_REFUSED' } });
  });

  // checkWorkdir resolves the path and checks it, but the job is spawned with the path as
  // given: a symbolic link swapped after the check (here by the approval hook, which runs
  // after the workdir rule; a running job of the model can do it too — 9 of 60 spawns ran in
  // /etc with a flipping link) puts the job outside workdirRoots.
  it('a link swapped after the workdir check does not move the job out of workdirRoots: checked again after approval, started in the resolved path', async () => {
    const root = realpathSync(tempDir());
    mkdirSync(join(root, 'sub'));
    const link = join(root, 'link');
    symlinkSync(join(root, 'sub'), link);
    const registry = await ProcessRegistry.open({
      spawnPolicy: {
        workdirRoots: [root],
        approve: () => {
          rmSync(link);
          symlinkSync('/etc', link);
          return { allow: true };
        },
      },
    });
    try {
      await expect(registry.spawn('pwd -P', { cwd: link })).rejects.toMatchObject({ code: 'SPAWN_REFUSED', details: { rule: 'workdir_root' } });
      // A link that stays inside: the job runs in the resolved directory, not through the link.
      rmSync(link);
      symlinkSync(join(root, 'sub'), link);
      const inside = await ProcessRegistry.open({ spawnPolicy: { workdirRoots: [root] } });
      try {
        const s = await inside.spawn('pwd', { cwd: link });
        const w = await inside.wait(s.id, { timeoutMs: 10_000 });
        expect(w.outputPreview.trim()).toBe(join(root, 'sub'));
      } finally {
        await inside.close();
      }
    } finally {
      await registry.close();
    }
  });
});

describe.skipIf(process.platform !== 'linux')('signal to a durable job (issue 18)', () => {
  // ts/registry.ts signal(): a durable job's signal went to its own process alone unless the
  // supervisor ignores it (the job shares its supervisor's process group), so SIGUSR1,
  // SIGSTOP, SIGKILL ... reached only the job's shell: `sleep 101 | sleep 102` ran on. Now
  // the job's tree gets it, one process at a time, never the supervisor.
  async function pipeline(registry: ProcessRegistry, command: string) {
    const s = await registry.spawn(command, { durable: true });
    cleanupGroup(s.supervisorPid);
    let members: number[] = [];
    await until(() => {
      members = descendants(s.pid as number).map((p: { pid: number }) => p.pid);
      return members.length >= 2;
    }, 10_000, 'the pipeline');
    return { s, members };
  }
  // The job's identity (its own PID) becomes known a moment after the spawn: until then ENOTSUP.
  async function send(registry: ProcessRegistry, id: string, name: string) {
    let res: Awaited<ReturnType<ProcessRegistry['signal']>> | undefined;
    await until(async () => {
      res = await registry.signal(id, name).catch((e: { code?: string }) => {
        if (e.code !== 'ENOTSUP') throw e;
        return undefined;
      });
      return res !== undefined;
    }, 10_000, 'the job identity to be known');
    return res as NonNullable<typeof res>;
  }

  for (const name of ['SIGUSR1', 'SIGUSR2', 'SIGALRM', 'SIGKILL']) {
    it(`${name} reaches the whole pipeline of a durable job, as of an in-memory one; the supervisor runs on`, async () => {
      const registry = await ProcessRegistry.open({ stateDir: tempDir() });
      try {
        const { s, members } = await pipeline(registry, 'sleep 101 | sleep 102; echo after');
        const res = await send(registry, s.id, name);
        expect(res).toMatchObject({ signal: name, pid: s.pid, processGroup: false });
        expect(new Set(res.signalled)).toEqual(new Set([s.pid, ...members]));
        await until(() => members.every((p) => !isAlive(p)), 10_000, 'the pipeline to end');
        // The supervisor was not signalled: it saw the job's death and recorded it.
        await until(async () => (await registry.poll(s.id)).status === 'exited', 10_000, 'the end');
        expect(await registry.poll(s.id)).toMatchObject({ status: 'exited', signal: name, reason: 'exited' });
      } finally {
        await registry.close();
      }
    });
  }

  it('SIGSTOP stops every process of the pipeline, not the supervisor; SIGCONT resumes them', async () => {
    const registry = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const { s, members } = await pipeline(registry, 'sleep 101 | sleep 102');
      const all = [s.pid as number, ...members];
      await send(registry, s.id, 'SIGSTOP');
      const state = (pids: number[]) => probe(pids).map((p) => p.state);
      await until(() => state(all).every((c) => c === 'T'), 10_000, 'every member stopped');
      expect(state([s.supervisorPid as number])[0]).not.toBe('T');
      await registry.signal(s.id, 'SIGCONT');
      await until(() => state(all).every((c) => c !== 'T'), 10_000, 'every member resumed');
      await registry.kill(s.id, { graceMs: 0 });
    } finally {
      await registry.close();
    }
  });
});

describe('kill-after deadline of a durable job (issue 18)', () => {
  // The deadline of a durable job was enforced by procward-supervise alone. The job runs in
  // its supervisor's process group with its uid, so `kill -9 $PPID` or `kill -STOP $PPID`
  // (its parent is the supervisor) ended or froze the only enforcer. The host that follows
  // the job now arms the same deadline (after the grace period and a slack) and kills it.
  for (const how of ['-9', '-STOP']) {
    it(`a job that runs kill ${how} $PPID is still killed at its deadline`, async () => {
      const stateDir = tempDir();
      const registry = await ProcessRegistry.open({ stateDir });
      try {
        // The job strikes once its supervisor has named it in supervisor.json (a supervisor
        // killed before that leaves a job no host can name: see the report of issue 18).
        const named = `until grep -qs '"job"' '${stateDir}'/sessions/*/supervisor.json; do sleep 0.05; done`;
        const s = await registry.spawn(`${named}; kill ${how} $PPID; sleep 30`, { durable: true, timeoutMs: 1000 });
        cleanupGroup(s.supervisorPid);
        cleanupGroup(s.pid);
        // No fixed sleep: until the session ends, with a generous bound (the deadline is
        // 1 s, the host's kill follows it after the 2 s grace period and a 1 s slack).
        await until(async () => (await registry.poll(s.id)).status === 'exited', 30_000, 'the deadline kill');
        const p = await registry.poll(s.id);
        expect(p).toMatchObject({ status: 'exited', reason: 'killed', deadlineExceeded: true });
        expect(isAlive(s.pid as number)).toBe(false);
      } finally {
        await registry.close();
      }
    }, 45_000);
  }
});

describe('notifications larger than the budget (issue 17)', () => {
  // ts/surfaces/tool/notify.ts takeNotifications took an event only when it fit whole and
  // never cut one: a completion of a job whose command is over 200 000 characters was
  // pending forever at every max_chars. Now the first event that does not fit is cut.
  it('a completion whose command is longer than max_chars is delivered, cut', async () => {
    const r = (await handleToolCall(ctx.registry, 'process_start', { command: `: ${'A'.repeat(250_000)}; echo done`, notify_on_complete: true, yield_ms: 0 }, { taskId: 'T' })) as { session_id: string };
    await until(async () => (await ctx.registry.poll(r.session_id)).status === 'exited', 10_000, 'the end of the job'); // poll: wait would consume the completion
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const n = (await handleToolCall(ctx.registry, 'process', { action: 'notifications', max_chars: 200_000 }, { taskId: 'T' })) as { notifications: { session_id: string }[] };
      seen.push(...n.notifications.map((e) => e.session_id));
    }
    expect(seen).toContain(r.session_id);
    const last = (await handleToolCall(ctx.registry, 'process', { action: 'notifications', max_chars: 200_000 }, { taskId: 'T' })) as Record<string, unknown>;
    expect(last.notifications_pending).toBeUndefined();
  });
});
