// DESIGN section 8 (CLI) and section 6 (recovery): every CLI invocation is a separate host
// process that recovers from the checkpoint.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { CLI, cleanupGroup, cli, crashHost, isAlive, startHost, tempDir, until } from './support.js';

describe('CLI round trip across processes', () => {
  it('start in one process, list and poll from others, wait from a third gets exit code 7 and the output', async () => {
    const state = tempDir();
    // The job waits for a gate file, so it is still running however slow the machine is.
    const gate = join(state, 'gate');
    const started = await cli(['start', '--state-dir', state, '--json', '--', `echo first; while [ ! -e ${gate} ]; do sleep 0.05; done; echo second; exit 7`]);
    expect(started.code).toBe(0);
    const s = JSON.parse(started.stdout);
    cleanupGroup(s.pid);
    expect(s.id).toMatch(/^proc_[0-9a-f]{12}$/);

    // The starting CLI process has exited; the job lives on.
    expect(isAlive(s.pid)).toBe(true);
    const listed = JSON.parse((await cli(['list', '--state-dir', state, '--json'])).stdout);
    expect(listed).toMatchObject([{ id: s.id, status: 'running', durable: true, detached: true }]);
    const polled = JSON.parse((await cli(['poll', s.id.slice(5, 11), '--state-dir', state, '--json'])).stdout);
    expect(polled).toMatchObject({ id: s.id, status: 'running', pid: s.pid });

    writeFileSync(gate, '');
    const waited = await cli(['wait', s.id, '--state-dir', state]);
    expect(waited.code).toBe(7);
    expect(waited.stdout).toBe('first\nsecond\n');
    expect(waited.stderr).toContain('exit code 7');

    const json = JSON.parse((await cli(['wait', s.id, '--state-dir', state, '--json'])).stdout);
    expect(json).toMatchObject({ status: 'exited', exitCode: 7, signal: null, reason: 'exited' });
    const log = await cli(['log', s.id, '--state-dir', state, '--offset', '1']);
    expect(log.stdout).toBe('second\n');
  });

  it('kill from another process stops the detached job tree and records the signal', async () => {
    const state = tempDir();
    const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', 'sleep 30 & sleep 30; wait'])).stdout);
    cleanupGroup(s.pid);
    const k = await cli(['kill', s.id, '--state-dir', state, '--json', '--grace', '500ms']);
    expect(k.code).toBe(0);
    expect(JSON.parse(k.stdout)).toMatchObject({ outcome: 'killed', survivors: [] });
    await until(() => !isAlive(s.pid), 3000, 'supervisor exit');
    const p = JSON.parse((await cli(['poll', s.id, '--state-dir', state, '--json'])).stdout);
    expect(p).toMatchObject({ status: 'exited', reason: 'killed' });
    expect(p.signal).toMatch(/^SIG(TERM|KILL)$/);
  });

  it('wait --timeout exits 124 while the job runs; unknown ids exit 1 with a clear error (wait: 125); a bad timeout is a usage error (2; wait: 125)', async () => {
    const state = tempDir();
    const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', 'sleep 20'])).stdout);
    cleanupGroup(s.pid);
    const w = await cli(['wait', s.id, '--state-dir', state, '--timeout', '200ms']);
    expect(w.code).toBe(124);
    const bad = await cli(['poll', 'proc_000000000000', '--state-dir', state, '--json']);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).error.code).toBe('UNKNOWN_SESSION');
    const badWait = await cli(['wait', 'proc_000000000000', '--state-dir', state]);
    expect(badWait.code).toBe(125);
    expect(badWait.stderr).toMatch(/UNKNOWN_SESSION/);
    const badTimeout = await cli(['wait', s.id, '--state-dir', state, '--timeout', '0ms']);
    expect(badTimeout.code).toBe(125);
    expect(badTimeout.stderr).toMatch(/timeout must be a duration of at least 1ms/);
    const badOption = await cli(['--state-dir', state, 'wait', s.id, '--no-such-option']);
    expect(badOption.code).toBe(125);
    const badPoll = await cli(['poll', s.id, '--state-dir', state, '--no-such-option']);
    expect(badPoll.code).toBe(2);
  });

  // Issue 28, kind 11: the job's outcome and wait's own never share a status.
  it("wait: a job's own 124 and 125 are 1 (the code on stderr and in --json), 126 and 2 stay themselves, SIGINT is 130; a SIGTERM to wait is 124", async () => {
    const state = tempDir();
    const start = async (cmd: string) => {
      const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', cmd])).stdout);
      cleanupGroup(s.pid);
      return s.id as string;
    };
    const ids = await Promise.all(['exit 124', 'exit 125', 'exit 126', 'exit 2', 'kill -INT $$'].map(start));
    const waited = await Promise.all(ids.map((id) => cli(['wait', id, '--state-dir', state, '-q'])));
    expect(waited.map((w) => w.code)).toEqual([1, 1, 126, 2, 130]);
    expect(waited.map((w) => w.stderr).slice(0, 2)).toEqual([expect.stringContaining('exit code 124'), expect.stringContaining('exit code 125')]);
    const json = JSON.parse((await cli(['wait', String(ids[0]), '--state-dir', state, '--json'])).stdout);
    expect(json).toMatchObject({ exitCode: 124, signal: null });
    // wait itself interrupted by SIGTERM (a CI runner's cancel): its own 124, the job runs on.
    const long = await start('sleep 30');
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [CLI, 'wait', long, '--state-dir', state, '-q'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    // Once its registry is open (its lock in hosts/), its SIGTERM handler follows at once.
    await until(() => readdirSync(join(state, 'hosts')).some((f) => f.startsWith(`${child.pid}-`)), 15_000, 'wait to open the registry');
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect(code, err).toBe(124);
    const p = JSON.parse((await cli(['poll', long, '--state-dir', state, '--json'])).stdout);
    expect(p.status).toBe('running');
  });

  it('several words after -- keep their argument boundaries', async () => {
    const state = tempDir();
    const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', 'printf', '%s|', 'a b', "c'd"])).stdout);
    cleanupGroup(s.pid);
    const w = await cli(['wait', s.id, '--state-dir', state]);
    expect(w.stdout).toBe("a b|c'd|\n");
  });
});

/** Every file under `dir`, recursively, as text. */
function allFiles(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath ?? (e as unknown as { path: string }).path, e.name), 'utf8'))
    .join('\n');
}

describe('checkpoint and recovery', () => {
  it("a curl -H 'Authorization: Bearer sk-…' command never reaches the state directory unmasked", async () => {
    const state = tempDir();
    const key = 'sk-proj-' + 'Qw3rTy7uIo9pAs2dFg4hJk6lZx8cVb1nM';
    const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', `curl -s -H 'Authorization: Bearer ${key}' http://127.0.0.1:9 || true`])).stdout);
    cleanupGroup(s.pid);
    await cli(['wait', s.id, '--state-dir', state]);
    expect(s.command).not.toContain(key);
    const everything = allFiles(state);
    expect(everything).toContain(s.id);
    expect(everything).not.toContain(key);
    expect(everything).not.toContain(key.slice(8, 30));
  });

  it('state directory is 0700, checkpoint and logs 0600, and persisted commands are redacted', async () => {
    const state = tempDir();
    const token = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
    const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', `echo ${token} >/dev/null; curl -H "Authorization: Bearer abcdefghijklmnop123456" http://localhost:1 || true`])).stdout);
    cleanupGroup(s.pid);
    await cli(['wait', s.id, '--state-dir', state]);
    expect(statSync(state).mode & 0o777).toBe(0o700);
    const cp = join(state, 'checkpoint.json');
    expect(statSync(cp).mode & 0o777).toBe(0o600);
    expect(statSync(join(state, 'sessions', s.id, 'output.log')).mode & 0o777).toBe(0o600);
    expect(statSync(join(state, 'sessions', s.id, 'exit.json')).mode & 0o777).toBe(0o600);
    const text = readFileSync(cp, 'utf8');
    expect(text).not.toContain(token);
    expect(text).not.toContain('abcdefghijklmnop123456');
    expect(JSON.parse(text).version).toBe(1);
  });

  it('a host SIGKILLed mid-job: the next host adopts the live job, then reports its exact exit code', async () => {
    const state = tempDir();
    const { line: s, host } = await startHost(state, `const s = await r.spawn('echo alive; sleep 1.5; echo late; exit 42'); console.log(JSON.stringify(s));`);
    cleanupGroup(s.pid);
    await crashHost(host);

    const next = await ProcessRegistry.open({ stateDir: state });
    const p = await next.poll(s.id);
    expect(p).toMatchObject({ status: 'running', detached: true, pid: s.pid });
    const w = await next.wait(s.id, { timeoutMs: 10_000 });
    expect(w).toMatchObject({ status: 'exited', exitCode: 42, reason: 'exited' });
    expect((await next.readLog(s.id)).lines).toEqual(['alive', 'late']);
    await next.close();
  });

  it('a job whose process vanished without an exit file while no host watched is reported lost, not exited 0', async () => {
    const state = tempDir();
    const { line: s, host } = await startHost(state, `const s = await r.spawn('sleep 30', { durable: false }); console.log(JSON.stringify(s));`);
    cleanupGroup(s.pid);
    await crashHost(host);
    process.kill(-(s.pid as number), 'SIGKILL');
    await until(() => !isAlive(s.pid as number), 3000, 'death');
    const r2 = await ProcessRegistry.open({ stateDir: state });
    const p = await r2.poll(s.id);
    expect(p).toMatchObject({ status: 'exited', reason: 'lost', exitCode: null, signal: null });
    await r2.close();
  });

  it('a corrupt checkpoint is moved aside and the previous generation is recovered', async () => {
    const state = tempDir();
    const r1 = await ProcessRegistry.open({ stateDir: state });
    const a = await r1.spawn('exit 5');
    cleanupGroup(a.pid);
    await r1.wait(a.id, { timeoutMs: 10_000 });
    await r1.close();
    writeFileSync(join(state, 'checkpoint.json'), '{"version":1,"sessions":[{"id":"proc_');
    const r2 = await ProcessRegistry.open({ stateDir: state });
    expect(r2.diagnostics.join('\n')).toMatch(/invalid JSON.*moved aside/);
    expect(readdirSync(state).some((f) => f.startsWith('checkpoint.json.corrupt-'))).toBe(true);
    expect((await r2.poll(a.id)).exitCode).toBe(5);
    await r2.close();
  });
});

describe('CLI inspection commands', () => {
  it('probe reports a live PID with its identity, and a missing PID as gone', async () => {
    const live = JSON.parse((await cli(['probe', String(process.pid), '999999999', '--json'])).stdout);
    expect(live[0]).toMatchObject({ pid: process.pid, alive: true, exists: true, ppid: process.ppid });
    expect(live[0].startTime).toMatch(/^\d+$/);
    expect(live[1]).toMatchObject({ pid: 999999999, alive: false, exists: false });
    const bad = await cli(['probe', 'abc']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/pid must be an integer/);
    // Usage errors honour --json too, and hex or padded numbers are not PIDs.
    const usage = await cli(['probe', '0x10', '--json']);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout)).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: expect.stringMatching(/pid must be an integer/) } });
    const missing = await cli(['write', '--json']);
    expect(JSON.parse(missing.stdout)).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: "missing required argument 'id'" } });
    expect(missing.stderr).toBe('');
  });

  it('tree lists the descendants of a started job, with their group', async () => {
    const state = tempDir();
    const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', 'sleep 30 & sleep 31 & wait'])).stdout);
    cleanupGroup(s.pid);
    let found: { pid: number; pgid: number; alive: boolean }[] = [];
    await until(async () => {
      found = JSON.parse((await cli(['tree', String(s.pid), '--json'])).stdout);
      return found.filter((d) => d.alive).length >= 2;
    }, 10_000, 'two sleeps in the tree');
    // A durable job's group is the one its supervisor leads (the session `setsid` made).
    expect(found.every((d) => d.pgid === s.supervisorPid)).toBe(true);
  });

  it('recover adopts what the state directory lists and reports it', async () => {
    const state = tempDir();
    const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', 'sleep 30'])).stdout);
    cleanupGroup(s.pid);
    const done = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', 'exit 3'])).stdout);
    cleanupGroup(done.pid);
    await until(async () => JSON.parse((await cli(['poll', done.id, '--state-dir', state, '--json'])).stdout).status === 'exited', 10_000, 'exit 3 ended');
    const report = JSON.parse((await cli(['recover', '--state-dir', state, '--json'])).stdout);
    expect(report).toMatchObject({ sessions: 2, running: 1, exited: 1 });
  });
});
