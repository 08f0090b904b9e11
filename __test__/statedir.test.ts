// The state directory is untrusted input (DESIGN section 11, issue 12 findings 3, 4, 5, 12, 13):
// who may write it and symlinks below it. Paths, types and versions in its records are in
// statedir-records.test.ts.
import { chmodSync, chownSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { code, entry, stateWith } from './statedir-support.js';
import { cleanupGroup, cli, tempDir, until } from './support.js';

const NOBODY = 65534;

describe('who may write the state directory', () => {
  it.skipIf(process.geteuid?.() !== 0)('a directory owned by another user (mode 0777) is refused and left as it was', async () => {
    const state = stateWith([entry()]);
    chownSync(state, NOBODY, NOBODY);
    chmodSync(state, 0o777);
    expect(await code(ProcessRegistry.open({ stateDir: state }))).toBe('STATE_DIR_UNTRUSTED');
    const st = statSync(state);
    expect(st.mode & 0o777).toBe(0o777);
    expect(st.uid).toBe(NOBODY);
  });

  it.skipIf(process.geteuid?.() !== 0)('a directory owned by another user with mode 0700 is refused too', async () => {
    const state = tempDir();
    chownSync(state, NOBODY, NOBODY);
    expect(await code(ProcessRegistry.open({ stateDir: state }))).toBe('STATE_DIR_UNTRUSTED');
  });

  it('a group-writable or world-writable directory of ours is refused, never chmodded', async () => {
    for (const mode of [0o770, 0o707, 0o1777]) {
      const state = tempDir();
      chmodSync(state, mode);
      expect(await code(ProcessRegistry.open({ stateDir: state }))).toBe('STATE_DIR_UNTRUSTED');
      expect(statSync(state).mode & 0o7777).toBe(mode);
    }
  });

  it('a symlink to a good directory is refused; a missing directory is created 0700', async () => {
    const base = tempDir();
    mkdirSync(join(base, 'real'), { mode: 0o700 });
    symlinkSync(join(base, 'real'), join(base, 'link'));
    expect(await code(ProcessRegistry.open({ stateDir: join(base, 'link') }))).toBe('STATE_DIR_UNTRUSTED');
    const r = await ProcessRegistry.open({ stateDir: join(base, 'new', 'state') });
    await r.close();
    expect(statSync(join(base, 'new', 'state')).mode & 0o777).toBe(0o700);
  });

  it("stateDir '' and non-strings are INVALID_ARGUMENT, not an in-memory registry", async () => {
    for (const stateDir of ['', 42, {}, null]) {
      expect(await code(ProcessRegistry.open({ stateDir } as never))).toBe('INVALID_ARGUMENT');
    }
  });

  it('jobs do not inherit PROCWARD_STATE_DIR or other PROCWARD_ variables', async () => {
    const state = tempDir();
    process.env.PROCWARD_STATE_DIR = state;
    process.env.PROCWARD_SOMETHING = 'x';
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      const s = await r.spawn('echo "[${PROCWARD_STATE_DIR:-none}] [${PROCWARD_SOMETHING:-none}]"');
      const w = await r.wait(s.id, { timeoutMs: 10_000 });
      expect(w.outputPreview).toContain('[none] [none]');
    } finally {
      delete process.env.PROCWARD_STATE_DIR;
      delete process.env.PROCWARD_SOMETHING;
      await r.close();
    }
  });
});

describe('symlinks below the state directory', () => {
  it.each([
    ['sessions', (state: string, outside: string) => symlinkSync(outside, join(state, 'sessions')), 'proc_abcdef012345'],
    [
      'sessions/<id>',
      (state: string, outside: string) => {
        mkdirSync(join(state, 'sessions'), { mode: 0o700 });
        symlinkSync(join(outside, 'proc_abcdef012346'), join(state, 'sessions', 'proc_abcdef012346'));
      },
      'proc_abcdef012346',
    ],
  ] as const)('a %s symlink is never pruned through: the target directory survives', async (_, link, id) => {
    const state = tempDir();
    const outside = tempDir();
    mkdirSync(join(outside, id));
    writeFileSync(join(outside, id, 'keep'), 'precious');
    link(state, outside);
    const old = entry({ id, exitedAt: 1, updatedAt: 1, startedAt: 1 });
    writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: [old] }), { mode: 0o600 });
    // A symlinked `sessions` is refused as the state directory itself would be.
    const opened = ProcessRegistry.open({ stateDir: state, finishedTtlMs: 0 });
    if (_ === 'sessions') expect(await code(opened)).toBe('STATE_DIR_UNTRUSTED');
    else await (await opened).close();
    expect(readFileSync(join(outside, id, 'keep'), 'utf8')).toBe('precious');
  });

  it('kill replaces symlinked kill-requested and session.json, never writes through them', async () => {
    const state = tempDir();
    const outside = tempDir();
    const r = await ProcessRegistry.open({ stateDir: state, durable: false });
    try {
      const s = await r.spawn('sleep 30');
      cleanupGroup(s.pid);
      const dir = join(state, 'sessions', s.id);
      for (const name of ['kill-requested', 'session.json']) {
        writeFileSync(join(outside, name), 'precious');
        const path = join(dir, name);
        rmSync(path, { force: true });
        symlinkSync(join(outside, name), path);
      }
      await r.kill(s.id, { graceMs: 100 });
      // The kill's end reaches session.json behind the kill (not awaited by it).
      await until(() => !lstatSync(join(dir, 'session.json')).isSymbolicLink(), 10_000, 'session.json replaced');
      for (const name of ['kill-requested', 'session.json']) {
        expect(readFileSync(join(outside, name), 'utf8')).toBe('precious');
        expect(lstatSync(join(dir, name)).isSymbolicLink()).toBe(false);
      }
    } finally {
      await r.close();
    }
  });

  it('a symlinked exit.json is not followed: the end is not taken from its target', async () => {
    const state = tempDir();
    const outside = tempDir();
    writeFileSync(join(outside, 'exit.json'), '{"code":42,"signal":null}\n');
    const e = entry({ status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null, durable: true });
    const dir = join(state, 'sessions', e.id as string);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    symlinkSync(join(outside, 'exit.json'), join(dir, 'exit.json'));
    Object.assign(e, { logPath: join(dir, 'output.log'), exitPath: join(dir, 'exit.json') });
    writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: [e] }), { mode: 0o600 });
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      const p = await r.poll(e.id as string);
      expect(p.exitCode).not.toBe(42);
      expect(r.diagnostics.join('\n')).toMatch(/symlink/);
    } finally {
      await r.close();
    }
  });
  it.each(['output.log', 'output.log.1', 'log-state.json'])('a symlink at %s is not followed by log or poll', async (name) => {
    const state = tempDir();
    const outside = tempDir();
    const secret = join(outside, 'shadow');
    writeFileSync(secret, 'root:SECRET-HASH:19000:0:99999:7:::\n');
    const e = entry({ durable: true });
    const dir = join(state, 'sessions', e.id as string);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, 'output.log'), 'own output\n', { mode: 0o600 });
    // A rotated part is only looked at when log-state.json counts a rotation.
    if (name !== 'log-state.json') writeFileSync(join(dir, 'log-state.json'), '{"rotations":1,"droppedBytes":0,"droppedLines":0,"lostBytes":0}\n', { mode: 0o600 });
    rmSync(join(dir, name), { force: true });
    symlinkSync(secret, join(dir, name));
    Object.assign(e, { logPath: join(dir, 'output.log'), exitPath: join(dir, 'exit.json') });
    writeFileSync(join(state, 'checkpoint.json'), JSON.stringify({ version: 1, sessions: [e] }), { mode: 0o600 });
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      const read = await r.readLog(e.id as string).then(
        (page) => page.text,
        (err: { code?: string }) => `error ${err.code}`,
      );
      // Either the link is refused with a clear error or the page holds none of its target.
      expect(read).not.toContain('SECRET-HASH');
      if (name === 'output.log') expect(read).toBe('error STATE_DIR_UNTRUSTED');
      const preview = await r.poll(e.id as string).then((p) => p.outputPreview ?? '');
      expect(preview).not.toContain('SECRET-HASH');
      expect(readFileSync(secret, 'utf8')).toBe('root:SECRET-HASH:19000:0:99999:7:::\n');
    } finally {
      await r.close();
    }
  });
});

describe('the CLI default state directory follows the same rule', () => {
  it('$PROCWARD_STATE_DIR naming a world-writable directory is refused with STATE_DIR_UNTRUSTED', async () => {
    const state = tempDir();
    chmodSync(state, 0o777);
    const res = await cli(['list', '--json'], { PROCWARD_STATE_DIR: state });
    expect(res.code).not.toBe(0);
    expect(JSON.parse(res.stdout).error.code).toBe('STATE_DIR_UNTRUSTED');
    expect(statSync(state).mode & 0o777).toBe(0o777);
  });
});
