// Issue 17: the host's spawn policy (approval hook, caps on running jobs per task and per
// session key, allowed roots for the working directory, a denylist for loader and runtime
// variables in model-supplied env), with real spawns.
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ProcessRegistry, type RegistryOptions, type SpawnRequest } from '../dist/index.mjs';
import { cleanupGroup, tempDir } from './support.js';

const open: ProcessRegistry[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});

async function registry(options: RegistryOptions): Promise<ProcessRegistry> {
  const r = await ProcessRegistry.open(options);
  open.push(r);
  return r;
}

async function spawn(r: ProcessRegistry, command: string, opts: Record<string, unknown> = {}) {
  const s = await r.spawn(command, opts);
  cleanupGroup(s.pid);
  return s;
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; details: { rule: string; reason: string } }> {
  const err = await p.then(
    () => {
      throw new Error('the spawn was not refused');
    },
    (e) => e,
  );
  return err;
}

async function output(r: ProcessRegistry, id: string): Promise<string> {
  await r.wait(id, { timeoutMs: 10_000 });
  return (await r.readLog(id, { view: 'raw' })).lines.join('\n');
}

describe('approval hook', () => {
  it('sees the request and allows it: the job runs', async () => {
    const seen: SpawnRequest[] = [];
    const r = await registry({
      spawnPolicy: {
        approve: async (req) => {
          seen.push(req);
          return { allow: true };
        },
      },
    });
    const s = await spawn(r, 'echo approved', { taskId: 't1', sessionKey: 'k1', env: { A: 'b' } });
    expect(await output(r, s.id)).toContain('approved');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ command: 'echo approved', cwd: process.cwd(), env: { A: 'b' }, taskId: 't1', sessionKey: 'k1', envSource: 'caller', durable: false, pty: false, stdin: false });
  });

  it('refuses with a reason: SPAWN_REFUSED with the reason, nothing started or listed', async () => {
    const dir = tempDir();
    const marker = join(dir, 'ran');
    const r = await registry({ spawnPolicy: { approve: (req) => (req.command.includes('rm ') ? { allow: false, reason: 'no deleting here' } : { allow: true }) } });
    const err = await refusal(r.spawn(`touch ${marker}; rm -f /nonexistent`));
    expect(err.code).toBe('SPAWN_REFUSED');
    expect(err.details).toMatchObject({ rule: 'approve', reason: 'no deleting here' });
    expect(await r.list()).toEqual([]);
    const { existsSync } = await import('node:fs');
    expect(existsSync(marker)).toBe(false);
    // The next spawn the hook likes runs.
    const s = await spawn(r, 'echo fine');
    expect(await output(r, s.id)).toContain('fine');
  });

  it('fails closed: a hook that throws, or answers another shape, refuses', async () => {
    for (const approve of [
      () => {
        throw new Error('hook broke');
      },
      async () => Promise.reject(new Error('async broke')),
      () => ({ allow: 'yes' }) as never,
      () => undefined as never,
      () => ({ allow: false }) as never,
    ]) {
      const r = await registry({ spawnPolicy: { approve } });
      const err = await refusal(r.spawn('echo never'));
      expect(err.code).toBe('SPAWN_REFUSED');
      expect(err.details.rule).toBe('approve');
      expect(await r.list()).toEqual([]);
    }
  });
});

describe('caps on running jobs', () => {
  it('maxRunningPerTask: the third running job of a task is refused; another task is not; a slot frees when a job ends', async () => {
    const r = await registry({ spawnPolicy: { maxRunningPerTask: 2 } });
    const a1 = await spawn(r, 'sleep 30', { taskId: 'a' });
    await spawn(r, 'sleep 30', { ownerTaskId: 'a', taskId: 'sub' });
    const err = await refusal(r.spawn('sleep 30', { taskId: 'a' }));
    expect(err).toMatchObject({ code: 'SPAWN_REFUSED', details: { rule: 'max_running_per_task', running: 2, cap: 2 } });
    await spawn(r, 'sleep 30', { taskId: 'b' });
    await spawn(r, 'sleep 30'); // no task: not capped
    await r.kill(a1.id, { graceMs: 0 });
    await spawn(r, 'sleep 30', { taskId: 'a' });
  });

  it('spawns started together count against the cap before they run (5 at once, cap 2: 2 start)', async () => {
    const r = await registry({ spawnPolicy: { maxRunningPerTask: 2, approve: async () => ({ allow: true }) } });
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => r.spawn('sleep 30', { taskId: 'burst' })));
    for (const x of results) if (x.status === 'fulfilled') cleanupGroup(x.value.pid);
    expect(results.filter((x) => x.status === 'fulfilled')).toHaveLength(2);
    for (const x of results.filter((x) => x.status === 'rejected')) expect((x as PromiseRejectedResult).reason.code).toBe('SPAWN_REFUSED');
  });

  it('maxRunningPerSessionKey caps a session key', async () => {
    const r = await registry({ spawnPolicy: { maxRunningPerSessionKey: 1 } });
    await spawn(r, 'sleep 30', { sessionKey: 'chat-1' });
    const err = await refusal(r.spawn('sleep 30', { sessionKey: 'chat-1', taskId: 'other' }));
    expect(err.details).toMatchObject({ rule: 'max_running_per_session_key', running: 1, cap: 1 });
    await spawn(r, 'sleep 30', { sessionKey: 'chat-2' });
  });

  it('counts the durable jobs a new host recovered', async () => {
    const dir = tempDir();
    const first = await ProcessRegistry.open({ stateDir: dir });
    const s = await first.spawn('sleep 30', { taskId: 'long', durable: true });
    cleanupGroup(s.pid);
    await first.close();
    const r = await registry({ stateDir: dir, spawnPolicy: { maxRunningPerTask: 1 } });
    expect((await r.list({ taskId: 'long' })).map((x) => x.status)).toEqual(['running']);
    const err = await refusal(r.spawn('sleep 30', { taskId: 'long' }));
    expect(err.details.rule).toBe('max_running_per_task');
    await r.kill(s.id, { graceMs: 0 });
  });
});

describe('workdir roots', () => {
  it('a cwd inside a root (or the root) runs; a cwd that resolves outside is refused', async () => {
    const root = tempDir();
    const outside = tempDir();
    mkdirSync(join(root, 'sub'));
    symlinkSync(outside, join(root, 'escape'));
    symlinkSync(join(root, 'sub'), join(outside, 'back-in'));
    const r = await registry({ spawnPolicy: { workdirRoots: [root] } });
    for (const cwd of [root, join(root, 'sub'), join(root, 'sub', '..'), join(outside, 'back-in')]) {
      const s = await spawn(r, 'pwd -P', { cwd });
      expect(await output(r, s.id)).toContain(realpathSync(root));
    }
    // `/allowed/../elsewhere` spelt through the root, a link inside the root that points out, plain outsiders.
    for (const cwd of [join(root, '..'), join(root, 'sub', '..', '..', basename(outside)), join(root, 'escape'), join(root, 'escape', '.'), outside, '/etc', '/']) {
      const err = await refusal(r.spawn('pwd', { cwd }));
      expect(err.code, cwd).toBe('SPAWN_REFUSED');
      expect(err.details.rule).toBe('workdir_root');
    }
  });

  it('the default cwd (the host\'s) is checked too, and a missing directory is refused', async () => {
    const root = tempDir();
    const r = await registry({ spawnPolicy: { workdirRoots: [root] } });
    expect((await refusal(r.spawn('pwd'))).details.rule).toBe('workdir_root');
    const missing = await r.spawn('pwd', { cwd: join(root, 'missing') }).catch((e) => e);
    expect(['SPAWN_REFUSED', 'ENOENT']).toContain(missing.code);
  });

  it('a root that does not exist is refused when the registry opens', async () => {
    await expect(ProcessRegistry.open({ spawnPolicy: { workdirRoots: ['/nonexistent/procward-root'] } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('model-supplied env', () => {
  it('loader and runtime variables are refused from a model, by name and by prefix, whatever the case', async () => {
    const r = await registry({});
    for (const name of ['LD_PRELOAD', 'LD_LIBRARY_PATH', 'DYLD_INSERT_LIBRARIES', 'NODE_OPTIONS', 'PYTHONPATH', 'BASH_ENV', 'PERL5OPT', 'JAVA_TOOL_OPTIONS', 'ld_preload', 'PROCWARD_STATE_DIR']) {
      const err = await refusal(r.spawn('true', { env: { [name]: '/tmp/x.so' }, envSource: 'model' }));
      expect(err.code, name).toBe('SPAWN_REFUSED');
      expect(err.details).toMatchObject({ rule: 'denied_env', names: [name] });
    }
    expect(await r.list()).toEqual([]);
  });

  it('a model may set ordinary variables; the host (envSource caller) may set NODE_OPTIONS', async () => {
    const r = await registry({});
    const m = await spawn(r, 'echo "$GREETING"', { env: { GREETING: 'hello-model' }, envSource: 'model' });
    expect(await output(r, m.id)).toContain('hello-model');
    const h = await spawn(r, 'echo "$NODE_OPTIONS"', { env: { NODE_OPTIONS: '--max-old-space-size=64' } });
    expect(await output(r, h.id)).toContain('--max-old-space-size=64');
  });

  it('a model may not pass host secrets through allowEnv', async () => {
    const r = await registry({});
    const err = await refusal(r.spawn('env', { allowEnv: ['GITHUB_TOKEN'], envSource: 'model' }));
    expect(err.details.rule).toBe('allow_env');
  });

  it('the host replaces the denylist: [] allows all, a custom list with a prefix denies its own', async () => {
    const open1 = await registry({ spawnPolicy: { deniedEnv: [] } });
    const s = await spawn(open1, 'echo "$NODE_OPTIONS"', { env: { NODE_OPTIONS: '--trace-warnings' }, envSource: 'model' });
    expect(await output(open1, s.id)).toContain('--trace-warnings');
    const custom = await registry({ spawnPolicy: { deniedEnv: ['MYAPP_*'] } });
    expect((await refusal(custom.spawn('true', { env: { MYAPP_PLUGIN: 'x' }, envSource: 'model' }))).details.rule).toBe('denied_env');
  });

  it('envSource must be caller or model', async () => {
    const r = await registry({});
    expect((await r.spawn('true', { envSource: 'llm' } as never).catch((e) => e)).code).toBe('INVALID_ARGUMENT');
  });
});

describe('policy options are checked when the registry opens', () => {
  it('bad caps, roots, hooks are INVALID_ARGUMENT', async () => {
    for (const spawnPolicy of [{ maxRunningPerTask: 0 }, { maxRunningPerSessionKey: 1.5 }, { workdirRoots: [''] }, { approve: 'yes' }, { deniedEnv: 'LD_*' }]) {
      await expect(ProcessRegistry.open({ spawnPolicy } as never), JSON.stringify(spawnPolicy)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
  });
});
