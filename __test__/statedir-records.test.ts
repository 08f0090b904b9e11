// The state directory's records are untrusted input (DESIGN section 11, issue 12 findings 3,
// 4, 5, 12, 13): paths and types in them, the environments sandbox records name, entries of
// other versions, and the processes records name. Who may write the directory, and symlinks
// below it, are in statedir.test.ts.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CommandEnvironment, identity, localShell, ProcessRegistry } from '../dist/index.mjs';
import { code, entry, stateWith } from './statedir-support.js';
import { cleanupGroup, tempDir, until } from './support.js';


describe('paths come from the session id, never from a record', () => {
  it('a logPath of a file outside the session directory is never read by log or poll', async () => {
    const outside = tempDir();
    writeFileSync(join(outside, 'shadow'), 'root:SECRET-HASH:19000:0:99999:7:::\n');
    const e = entry({ durable: true, logPath: join(outside, 'shadow'), exitPath: join(outside, 'exit.json') });
    const state = stateWith([e]);
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect((await r.readLog(e.id as string)).text).not.toContain('SECRET-HASH');
      expect((await r.poll(e.id as string)).outputPreview).not.toContain('SECRET-HASH');
      expect(r.diagnostics.join('\n')).toMatch(/logPath/);
    } finally {
      await r.close();
    }
  });

  it('an exitPath outside the directory does not decide how a job ended', async () => {
    const outside = tempDir();
    writeFileSync(join(outside, 'exit.json'), '{"code":42,"signal":null}\n');
    const e = entry({ status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null, durable: true, logPath: join(outside, 'log'), exitPath: join(outside, 'exit.json') });
    const state = stateWith([e]);
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect((await r.poll(e.id as string)).exitCode).not.toBe(42);
    } finally {
      await r.close();
    }
  });
});

describe('strict types at spawn', () => {
  it('a non-string taskId, sessionKey or ownerTaskId is INVALID_ARGUMENT before anything starts', async () => {
    const state = tempDir();
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      const bad = [{ taskId: { a: 1 } }, { sessionKey: 42 }, { sessionKey: ['k'] }, { ownerTaskId: null }, { taskId: 'x'.repeat(257) }, { cwd: 7 }, { env: [] }, { env: { A: 1 } }, { allowEnv: 'A' }, { durable: 'yes' }, { notifyOnComplete: 1 }];
      for (const opts of bad) expect(await code(r.spawn('echo never', opts as never))).toBe('INVALID_ARGUMENT');
      expect((await r.list()).length).toBe(0);
      expect(existsSync(join(state, 'sessions')) ? readdirSync(join(state, 'sessions')) : []).toEqual([]);
    } finally {
      await r.close();
    }
  });
});

describe('sandbox records name environments, never connection details', () => {
  /** A far side that runs scripts with `kill` replaced by a logger: nothing is ever signalled. */
  function loggingShell(tmpDir: string, log: string) {
    return new CommandEnvironment({ kind: 'local', tmpDir }, ['sh', '-c', `kill() { echo "kill $*" >> ${log}; }; eval "$(cat)"`]);
  }

  const sandboxEntry = (fields: Record<string, unknown>) =>
    entry({ pidScope: 'sandbox', status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null, pid: 1, ...fields });

  it('an ssh environment with ProxyCommand in a record runs nothing on open, list, poll or kill', async () => {
    const marker = join(tempDir(), 'ran');
    const e = sandboxEntry({ environment: { kind: 'ssh', host: 'x', options: [`ProxyCommand=touch ${marker}`] }, sandboxDir: '/tmp' });
    const r = await ProcessRegistry.open({ stateDir: stateWith([e]) });
    try {
      await r.list();
      await code(r.poll(e.id as string));
      await code(r.kill(e.id as string, { graceMs: 0 }));
      await new Promise((res) => setTimeout(res, 300));
      expect(existsSync(marker)).toBe(false);
    } finally {
      await r.close();
    }
  });

  it('kill signals only the PID the far side recorded, never PID 1 or a PID or directory from the record', async () => {
    const far = tempDir();
    const log = join(tempDir(), 'kills');
    const e = sandboxEntry({ environment: 'box', sandboxDir: '/' });
    mkdirSync(join(far, e.id as string));
    writeFileSync(join(far, e.id as string, 'pid'), '1\n');
    const r = await ProcessRegistry.open({ stateDir: stateWith([e]), environments: { box: loggingShell(far, log) }, sandbox: { pollIntervalMs: 60_000 } });
    try {
      expect((await r.kill(e.id as string, { graceMs: 0 })).outcome).toBe('already_exited');
      expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
    } finally {
      await r.close();
    }
  });

  it('a recovered session whose environment is not configured stays listed; kill is ENVIRONMENT_UNAVAILABLE', async () => {
    const e = sandboxEntry({ environment: 'elsewhere', pid: 4242 });
    const r = await ProcessRegistry.open({ stateDir: stateWith([e]) });
    try {
      expect((await r.list()).map((s) => s.id)).toContain(e.id);
      expect(await code(r.kill(e.id as string, { graceMs: 0 }))).toBe('ENVIRONMENT_UNAVAILABLE');
      expect((await r.poll(e.id as string)).status).toBe('running');
    } finally {
      await r.close();
    }
  });

  it("pruning removes the session's own far-side directory, never a recorded sandboxDir", async () => {
    const far = tempDir();
    const outside = tempDir();
    writeFileSync(join(outside, 'keep'), 'precious');
    const e = sandboxEntry({ environment: 'box', sandboxDir: outside, status: 'exited', reason: 'exited', exitCode: 0, exitedAt: 1, startedAt: 1, updatedAt: 1 });
    mkdirSync(join(far, e.id as string));
    const r = await ProcessRegistry.open({ stateDir: stateWith([e]), environments: { box: localShell({ tmpDir: far }) }, finishedTtlMs: 0 });
    await r.close();
    await until(() => !existsSync(join(far, e.id as string)), 3000, 'far-side directory removed');
    expect(readFileSync(join(outside, 'keep'), 'utf8')).toBe('precious');
  });

  it('spawn with an environment name that is not configured, or environments that are not environments, is INVALID_ARGUMENT', async () => {
    const r = await ProcessRegistry.open({ environments: { box: localShell({ tmpDir: tempDir() }) } });
    for (const environment of ['nowhere', '__proto__', 'toString', { kind: 'ssh', host: 'x' }]) {
      expect(await code(r.spawn('true', { environment } as never))).toBe('INVALID_ARGUMENT');
    }
    await r.close();
    for (const environments of [[], { box: { kind: 'local' } }, 'box']) {
      expect(await code(ProcessRegistry.open({ environments } as never))).toBe('INVALID_ARGUMENT');
    }
  });
});

describe('entries this version does not understand are kept read-only', () => {
  const rawEntries = (state: string) => (JSON.parse(readFileSync(join(state, 'checkpoint.json'), 'utf8')).sessions as Record<string, unknown>[]);

  it.each([
    ['a taskId object (what an unchecked spawn once wrote)', { taskId: { a: 1 } }],
    ['a sessionKey number', { sessionKey: 42 }],
    ['a newer status', { status: 'paused' }],
    ['a newer reason', { reason: 'oom_killed' }],
    ['an unknown field', { futureField: { x: 1 } }],
    ['a newer schema version', { schemaVersion: 99 }],
  ])('%s: listed, never acted on, never pruned, and written back untouched', async (_, fields) => {
    const e = entry({ ...fields, exitedAt: 1, startedAt: 1, updatedAt: 1 });
    const state = stateWith([e]);
    mkdirSync(join(state, 'sessions', e.id as string), { recursive: true, mode: 0o700 });
    const r = await ProcessRegistry.open({ stateDir: state, finishedTtlMs: 0 });
    try {
      const listed = (await r.list()).find((s) => s.id === e.id);
      expect(listed).toMatchObject({ id: e.id, readOnly: true, pid: null });
      expect((await r.poll(e.id as string)).readOnly).toBe(true);
      for (const act of [r.kill(e.id as string), r.wait(e.id as string, { timeoutMs: 100 }), r.write(e.id as string, 'x'), r.closeStdin(e.id as string)]) {
        expect(await code(act)).toBe('SESSION_READ_ONLY');
      }
      expect(r.diagnostics.join('\n')).toMatch(/read-only/);
      // A write of this host (a new session) keeps the entry as it was.
      const s = await r.spawn('true', { durable: false });
      await r.wait(s.id, { timeoutMs: 10_000 });
    } finally {
      await r.close();
    }
    expect(rawEntries(state).find((x) => x.id === e.id)).toEqual(e);
    expect(existsSync(join(state, 'sessions', e.id as string))).toBe(true);
  });

  it('a second, damaged entry with the id of a valid one does not make the valid one read-only', async () => {
    const e = entry();
    const r = await ProcessRegistry.open({ stateDir: stateWith([e, { ...e, status: 'paused' }]) });
    try {
      expect((await r.poll(e.id as string)).readOnly).toBeUndefined();
      expect((await r.kill(e.id as string)).outcome).toBe('already_exited');
    } finally {
      await r.close();
    }
  });

  it('a session.json this version does not understand is listed read-only', async () => {
    const state = tempDir();
    const e = entry({ status: 'running', exitedAt: null, reason: null, exitCode: null, futureField: 1 });
    mkdirSync(join(state, 'sessions', e.id as string), { recursive: true, mode: 0o700 });
    writeFileSync(join(state, 'sessions', e.id as string, 'session.json'), JSON.stringify(e), { mode: 0o600 });
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect((await r.list()).find((s) => s.id === e.id)).toMatchObject({ readOnly: true, status: 'running' });
      expect(await code(r.kill(e.id as string))).toBe('SESSION_READ_ONLY');
    } finally {
      await r.close();
    }
  });

  it('a checkpoint of a newer version is read, never written over, and this host starts nothing', async () => {
    const e = entry({ status: 'running', exitedAt: null, reason: null, exitCode: null });
    const state = stateWith([e], { version: 2, writtenAt: 1 });
    const before = readFileSync(join(state, 'checkpoint.json'), 'utf8');
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect((await r.list()).find((s) => s.id === e.id)).toMatchObject({ readOnly: true });
      expect(await code(r.spawn('true'))).toBe('SESSION_READ_ONLY');
      expect(r.diagnostics.join('\n')).toMatch(/newer procward/);
    } finally {
      await r.close();
    }
    expect(readFileSync(join(state, 'checkpoint.json'), 'utf8')).toBe(before);
  });

  it('an entry that validates is written with this version\'s schema version', async () => {
    const state = tempDir();
    const r = await ProcessRegistry.open({ stateDir: state, durable: false });
    const s = await r.spawn('true');
    await r.wait(s.id, { timeoutMs: 10_000 });
    await r.close();
    expect(rawEntries(state).find((x) => x.id === s.id)?.schemaVersion).toBe(2);
  });
});

describe('signals from records', () => {
  it('closeStdin signals only the supervisor that recorded itself in the session directory, never a PID from the record', async () => {
    const got = join(tempDir(), 'got-usr1');
    const trapped = join(tempDir(), 'trapped');
    const victim = spawn('bash', ['-c', `trap 'echo got > ${got}' USR1; : > ${trapped}; while :; do sleep 0.1; done`], { detached: true, stdio: 'ignore' });
    cleanupGroup(victim.pid);
    // A SIGUSR1 before the trap would end the victim, leaving no mark of the signal.
    await until(() => existsSync(trapped), 10_000, 'the trap');
    const who = identity(victim.pid as number);
    const e = entry({ status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null, durable: true, pid: victim.pid, identity: who });
    const state = tempDir();
    const dir = join(state, 'sessions', e.id as string);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    Object.assign(e, { logPath: join(dir, 'output.log'), exitPath: join(dir, 'exit.json'), stdinPath: join(dir, 'stdin') });
    writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: [e] }), { mode: 0o600 });
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      await r.closeStdin(e.id as string);
      await new Promise((res) => setTimeout(res, 500));
      expect(existsSync(got)).toBe(false);
    } finally {
      await r.close();
    }
  });
});

describe.skipIf(process.geteuid?.() !== 0)('a sandbox record naming PID 1, inside a PID namespace', () => {
  it('kill never runs `kill -TERM -1`: a bystander process in the namespace survives', async () => {
    const state = tempDir();
    const far = tempDir();
    // The record's sandboxDir is a word of PID 1's command line, so a check of "is PID 1
    // this session's wrapper" by its arguments passes; an older procward then ran kill -TERM -1.
    const mark = 'procward-pid1-marker';
    const e = entry({ pidScope: 'sandbox', status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null, pid: 1, environment: { kind: 'local', tmpDir: far }, sandboxDir: mark });
    writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: [e] }), { mode: 0o600 });
    const script = `const { ProcessRegistry } = require(${JSON.stringify(join(__dirname, '..', 'dist', 'index.js'))});
(async () => {
  const r = await ProcessRegistry.open({ stateDir: ${JSON.stringify(state)} });
  const outcome = await r.kill(${JSON.stringify(e.id)}, { graceMs: 0 }).then((k) => k.outcome, (err) => err.code);
  await r.close();
  console.log('outcome ' + outcome);
})();`;
    const out = await new Promise<string>((resolve) => {
      const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', 'sh', '-c', `: ${mark}; sleep 30 & B=$!; ${JSON.stringify(process.execPath)} -e "$0"; kill -0 $B 2>/dev/null && echo bystander alive; kill $B`, script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.on('close', () => resolve(text));
    });
    expect(out).toContain('bystander alive');
    expect(out).toMatch(/outcome (SESSION_READ_ONLY|already_exited)/);
  }, 30_000);
});
