// Attacks on issue 12's fixes (its follow-up): a job that damages its own session files,
// checkpoint files of the wrong type or size, entries too deep to write back, secrets that
// records already hold, a far-side sandbox base another user created, and smaller holes.
// Every case is one an attacker ran (see the follow-up's attack scripts) or one of the same kind.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localShell, ProcessRegistry, probe, SshEnvironment } from '../dist/index.mjs';
import { haveSshd, testSshd, type TestSshd } from './sshd.mjs';
import { cleanupGroup, cli, deadHostEntry, tempDir, until } from './support.js';

const NOBODY = 65534;
const isRoot = process.geteuid?.() === 0;
const code = (p: Promise<unknown>) => p.then(() => 'resolved', (e: { code?: string }) => e.code);

let n = 0;
/** A finished entry written by a host that is gone (the given fields override). */
function entry(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return deadHostEntry(`proc_${(0xbad000000000 + n++).toString(16)}`, fields);
}

function stateWith(sessions: unknown[] | string): string {
  const state = tempDir();
  writeFileSync(join(state, 'checkpoint.json'), typeof sessions === 'string' ? sessions : JSON.stringify({ version: 1, sessions }), { mode: 0o600 });
  return state;
}

/**
 * Shell that finds the job's own output.log through its supervisor's open files (no
 * PROCWARD_STATE_DIR needed). The supervisor creates the log with the first byte of output,
 * so the job prints a line first and looks until the log is open.
 */
const FIND_OWN_LOG =
  'echo started; p=; while [ -z "$p" ]; do for f in /proc/$PPID/fd/*; do t=$(readlink $f); case "$t" in */output.log) p=$t;; esac; done; [ -n "$p" ] || sleep 0.05; done';

describe('a job that damages its own session files breaks only its own session', () => {
  const plants = {
    symlink: 'ln -s /etc/hostname "$p"',
    fifo: 'mkfifo "$p"',
    directory: 'mkdir "$p"',
    // Another file of this user's, shown if a hard link were read.
    'hard link': 'printf "OUTSIDE-%s\\n" SECRET-LINE > "$p.outside"; ln "$p.outside" "$p"',
  };
  it.each(Object.entries(plants))('its log replaced by a %s, then a host restart: kill reports, list/poll/wait/open/CLI work', async (_, plant) => {
    const state = tempDir();
    const r0 = await ProcessRegistry.open({ stateDir: state });
    const bystander = await r0.spawn('sleep 60');
    cleanupGroup(bystander.pid);
    const s = await r0.spawn(`${FIND_OWN_LOG}; rm -f "$p"; ${plant}; echo planted > "$p.done"; exec sleep 60`);
    cleanupGroup(s.pid);
    const dir = join(state, 'sessions', s.id);
    await until(() => existsSync(join(dir, 'output.log.done')), 10_000, 'the job planted its file');
    await r0.close();
    // The host restarts (a deploy, a crash): the job keeps running.
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect((await r.list()).map((x) => x.id).sort()).toEqual([bystander.id, s.id].sort());
      expect((await r.poll(s.id)).outputPreview).not.toContain('OUTSIDE-SECRET-LINE');
      expect(r.diagnostics.join('\n')).toMatch(new RegExp(`${s.id}: output not shown`));
      // The kill signals and says so: the job is gone.
      const k = await r.kill(s.id, { graceMs: 300 });
      expect(k.outcome).toBe('killed');
      expect(probe([s.pid as number])[0]?.alive).toBe(false);
      expect(await r.wait(s.id, { timeoutMs: 5000 })).toMatchObject({ status: 'exited', reason: 'killed' });
      // Its own log is the one thing that says it as an error.
      expect(await code(r.readLog(s.id))).toBe('STATE_DIR_UNTRUSTED');
      expect((await r.poll(bystander.id)).status).toBe('running');
    } finally {
      await r.close();
    }
    const r2 = await ProcessRegistry.open({ stateDir: state });
    expect((await r2.list()).find((x) => x.id === s.id)?.status).toBe('exited');
    await r2.kill(bystander.id, { graceMs: 200 });
    await r2.close();
    const listed = await cli(['list', '--state-dir', state]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(s.id);
    expect(listed.stdout).not.toContain('OUTSIDE-SECRET-LINE');
  });

  it('a job that ends after swapping its log: the live host lists, waits and reopens', async () => {
    const state = tempDir();
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      const s = await r.spawn(`${FIND_OWN_LOG}; rm -f "$p"; ln -s /etc/hostname "$p"; exit 4`);
      expect(await r.wait(s.id, { timeoutMs: 10_000 })).toMatchObject({ status: 'exited', exitCode: 4 });
      expect((await r.list()).find((x) => x.id === s.id)?.status).toBe('exited');
      const other = await ProcessRegistry.open({ stateDir: state });
      await other.close();
    } finally {
      await r.close();
    }
  });
});

describe('checkpoint files of the wrong type or size are set aside, never hang or throw', () => {
  it.each(['checkpoint.json', 'checkpoint.prev.json'])('a FIFO at %s: open settles with a diagnostic', async (name) => {
    const state = tempDir();
    execFileSync('mkfifo', [join(state, name)]);
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      if (name === 'checkpoint.json') expect(r.diagnostics.join('\n')).toMatch(/checkpoint\.json: is not a regular file; moved aside/);
      const s = await r.spawn('true', { durable: false });
      await r.wait(s.id, { timeoutMs: 10_000 });
    } finally {
      await r.close();
    }
    expect(statSync(join(state, 'checkpoint.json')).isFile()).toBe(true);
  });

  it.skipIf(!isRoot)('a character device (/dev/zero) at checkpoint.json is CHECKPOINT_CORRUPT-style, not a RangeError', async () => {
    const state = tempDir();
    execFileSync('mknod', ['-m', '600', join(state, 'checkpoint.json'), 'c', '1', '5']);
    const r = await ProcessRegistry.open({ stateDir: state });
    expect(r.diagnostics.join('\n')).toMatch(/is not a regular file; moved aside/);
    await r.close();
  });

  it('a checkpoint over 256 MiB (sparse) is set aside without being read', async () => {
    const state = stateWith([entry()]);
    truncateSync(join(state, 'checkpoint.json'), 257 * 1024 * 1024);
    const before = process.memoryUsage().rss;
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect(r.diagnostics.join('\n')).toMatch(/is 269484032 bytes, more than a checkpoint may hold \(268435456 bytes\); moved aside/);
      expect(process.memoryUsage().rss - before).toBeLessThan(128 * 1024 * 1024);
    } finally {
      await r.close();
    }
  });

  it('a hard link planted at checkpoint.json is not read: the other file stays out of every message', async () => {
    const state = tempDir();
    const outside = join(tempDir(), 'notes.txt');
    writeFileSync(outside, 'OUTSIDE-SECRET not json', { mode: 0o600 });
    linkSync(outside, join(state, 'checkpoint.json'));
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect(r.diagnostics.join('\n')).toMatch(/has 2 hard links/);
      expect(r.diagnostics.join('\n')).not.toContain('OUTSIDE-SECRET');
    } finally {
      await r.close();
    }
    expect(readFileSync(outside, 'utf8')).toBe('OUTSIDE-SECRET not json');
  });

  it('the previous generation kept by a hard link (a write that failed after linking) is read as it is', async () => {
    const e = entry();
    const state = stateWith([e]);
    linkSync(join(state, 'checkpoint.json'), join(state, 'checkpoint.prev.json'));
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect(r.diagnostics.join('\n')).not.toMatch(/hard link|moved aside/);
      expect((await r.list()).map((x) => x.id)).toContain(e.id);
    } finally {
      await r.close();
    }
  });

  it('a hard link planted at a session file (session.json, exit.json) is not read', async () => {
    const state = tempDir();
    const e = entry({ status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null });
    const dir = join(state, 'sessions', e.id as string);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const outside = join(tempDir(), 'record.json');
    writeFileSync(outside, JSON.stringify({ ...e, command: 'OUTSIDE-RECORD' }), { mode: 0o600 });
    linkSync(outside, join(dir, 'session.json'));
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect(JSON.stringify(await r.list())).not.toContain('OUTSIDE-RECORD');
    } finally {
      await r.close();
    }
  });
});

describe('entries kept read-only never break writes', () => {
  it('an entry nested 5000 deep is set aside (copied with its file); the rest loads and spawns persist', async () => {
    const good = entry();
    const readOnly = entry({ futureField: { a: [1, 2] } });
    const deep = `{"id":"proc_aaaaaaaaaaaa","x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const state = stateWith(`{"version":1,"sessions":[${JSON.stringify(good)},${deep},${JSON.stringify(readOnly)}]}`);
    const r = await ProcessRegistry.open({ stateDir: state });
    let spawned = '';
    try {
      expect(r.diagnostics.join('\n')).toMatch(/proc_aaaaaaaaaaaa\) is nested deeper than 64 levels; not kept/);
      spawned = (await r.spawn('true', { durable: false })).id;
      await r.wait(spawned, { timeoutMs: 10_000 });
    } finally {
      await r.close();
    }
    expect(r.diagnostics.join('\n')).not.toMatch(/checkpoint write failed/);
    const written = JSON.parse(readFileSync(join(state, 'checkpoint.json'), 'utf8')).sessions.map((x: { id: string }) => x.id);
    expect(written).toEqual(expect.arrayContaining([good.id, readOnly.id, spawned]));
    expect(written).not.toContain('proc_aaaaaaaaaaaa');
    const copies = readdirSync(state).filter((f) => f.startsWith('checkpoint.json.quarantine-'));
    expect(copies).toHaveLength(1);
    expect(readFileSync(join(state, copies[0] as string), 'utf8')).toContain('"proc_aaaaaaaaaaaa"');
  });

  it('an entry of 2 MB is set aside too', async () => {
    const state = stateWith([entry({ futureField: 'x'.repeat(2 * 1024 * 1024) })]);
    const r = await ProcessRegistry.open({ stateDir: state });
    expect(r.diagnostics.join('\n')).toMatch(/is larger than 1048576 characters; not kept/);
    await r.close();
  });

  it('20 000 damaged entries: open works, diagnostics are capped with a count of the rest', async () => {
    const sessions = Array.from({ length: 20_000 }, (_, i) => ({ id: `proc_${i.toString(16).padStart(12, '0')}`, command: 'x' }));
    const r = await ProcessRegistry.open({ stateDir: stateWith(sessions) });
    try {
      expect(r.diagnostics.length).toBeLessThanOrEqual(110);
      expect(r.diagnostics.join('\n')).toMatch(/and 199\d\d more entries kept read-only/);
      expect((await r.list()).length).toBe(20_000);
    } finally {
      await r.close();
    }
  });

  it('duplicate ids in a checkpoint get a diagnostic; the newer entry stands', async () => {
    const old = entry({ exitCode: 1, updatedAt: 1000 });
    const state = stateWith([{ ...old, exitCode: 2, updatedAt: 5000 }, old]);
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect(r.diagnostics.join('\n')).toMatch(new RegExp(`entry 1 repeats session ${old.id}`));
      expect((await r.poll(old.id as string)).exitCode).toBe(2);
    } finally {
      await r.close();
    }
  });
});

describe('secrets already in records are redacted on the way out', () => {
  const S = 'Zq8xP2mWv7Lr4Kt9';
  const secretFields = {
    command: `mysql -uroot -p${S} -e 'select 1'`,
    completionTail: `DB_PASSWORD=${S}\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA${S}\n-----END RSA PRIVATE KEY-----`,
    notifyOnComplete: true,
    notificationDelivered: false,
    watchPatterns: ['TOKEN'],
    watchEvents: [{ pattern: 'TOKEN', line: `export API_TOKEN=${S}`, at: Date.now() }],
    taskId: `password=${S}`,
  };

  it('from the checkpoint: list, poll, wait, drainNotifications and the CLI show none of it', async () => {
    const e = entry(secretFields);
    const state = stateWith([e]);
    const r = await ProcessRegistry.open({ stateDir: state });
    const shown: unknown[] = [];
    try {
      shown.push(await r.list(), await r.poll(e.id as string), await r.drainNotifications(), await r.wait(e.id as string, { timeoutMs: 2000 }));
    } finally {
      await r.close();
    }
    const text = JSON.stringify(shown);
    expect(text).toContain('mysql');
    expect(text).toContain('"type":"completion"');
    expect(text).toContain('API_TOKEN');
    expect(text).not.toContain(S);
    const listed = await cli(['list', '--json', '--state-dir', state]);
    expect(listed.stdout).toContain(e.id as string);
    expect(listed.stdout).not.toContain(S);
    // The record is healed when it is written again.
    expect(readFileSync(join(state, 'checkpoint.json'), 'utf8')).not.toContain(`-p${S}`);
  });

  it('from an orphaned session.json (recovered without the checkpoint)', async () => {
    const state = tempDir();
    const e = entry({ ...secretFields, status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null });
    const dir = join(state, 'sessions', e.id as string);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, 'session.json'), JSON.stringify(e), { mode: 0o600 });
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      expect(JSON.stringify([await r.list(), await r.drainNotifications()])).not.toContain(S);
    } finally {
      await r.close();
    }
  });
});

describe('the far-side sandbox base belongs to the far-side user alone', () => {
  /** A sandbox spawn through the local shell with `tmpDir`, and its failed launch. */
  async function launchIn(tmpDir: string) {
    const r = await ProcessRegistry.open();
    try {
      const s = await r.spawn('echo ran', { environment: localShell({ tmpDir }) });
      return { s, log: (await r.readLog(s.id)).text };
    } finally {
      await r.close();
    }
  }

  it.skipIf(!isRoot)('a base another user created first is refused: the launch fails and says why', async () => {
    const base = join(tempDir(), 'shared');
    mkdirSync(base, { mode: 0o755 });
    chownSync(base, NOBODY, NOBODY);
    const { s, log } = await launchIn(base);
    expect(s).toMatchObject({ status: 'exited', reason: 'failed_start' });
    expect(log).toMatch(/refusing to launch: sandbox base .* is not owned by/);
    expect(readdirSync(base)).toEqual([]);
  });

  it.each([
    ['a symlink', (p: string) => symlinkSync(tempDir(), p), /is a symlink/],
    [
      'world-writable',
      (p: string) => {
        mkdirSync(p);
        chmodSync(p, 0o777);
      },
      /writable by its group or by others/,
    ],
    ['a file', (p: string) => writeFileSync(p, ''), /is not a directory/],
  ] as const)('a base that is %s is refused', async (_, make, why) => {
    const base = join(tempDir(), 'base');
    make(base);
    const { s, log } = await launchIn(base);
    expect(s.reason).toBe('failed_start');
    expect(log).toMatch(why);
  });

  it('the default base is per user (/tmp/procward-sandbox-<uid>), created 0700', async () => {
    const r = await ProcessRegistry.open();
    try {
      const s = await r.spawn('echo ran-here', { environment: localShell() });
      expect(await r.wait(s.id, { timeoutMs: 10_000 })).toMatchObject({ exitCode: 0, outputPreview: 'ran-here\n' });
      const base = `/tmp/procward-sandbox-${process.getuid?.()}`;
      const st = statSync(base);
      expect(st.uid).toBe(process.getuid?.());
      expect(st.mode & 0o077).toBe(0);
      expect(statSync(join(base, s.id)).mode & 0o777).toBe(0o700);
    } finally {
      await r.close();
    }
  });
});

describe.skipIf(!haveSshd)('the far-side sandbox base over a real sshd', () => {
  let sshd: TestSshd;
  beforeAll(async () => {
    sshd = await testSshd(tempDir());
    await sshd.start();
  });
  afterAll(async () => {
    await sshd?.stop();
  });
  const ssh = (tmpDir?: string) =>
    new SshEnvironment({ kind: 'ssh', host: '127.0.0.1', port: sshd.port, user: sshd.user, identityFile: sshd.identityFile, options: sshd.options, ...(tmpDir && { tmpDir }) });

  it('a world-writable base is refused over ssh; the default per-user base runs the job', async () => {
    const shared = join(tempDir(), 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const bad = ssh(shared);
    const good = ssh();
    const r = await ProcessRegistry.open();
    try {
      const refused = await r.spawn('echo ran', { environment: bad });
      expect(refused.reason).toBe('failed_start');
      expect((await r.readLog(refused.id)).text).toMatch(/refusing to launch: sandbox base .* is writable by its group or by others/);
      expect(readdirSync(shared)).toEqual([]);
      const s = await r.spawn('echo over-ssh', { environment: good });
      expect(await r.wait(s.id, { timeoutMs: 20_000 })).toMatchObject({ exitCode: 0, outputPreview: 'over-ssh\n' });
      expect(statSync(`/tmp/procward-sandbox-${process.getuid?.()}/${s.id}`).isDirectory()).toBe(true);
    } finally {
      await r.close();
      await bad.close();
      await good.close();
    }
  });
});

describe('smaller holes', () => {
  it('a sessions directory that is group- or world-writable, or a symlink, is STATE_DIR_UNTRUSTED', async () => {
    const writable = (p: string) => {
      mkdirSync(p);
      chmodSync(p, 0o777);
    };
    for (const make of [writable, (p: string) => symlinkSync(tempDir(), p)]) {
      const state = tempDir();
      make(join(state, 'sessions'));
      expect(await code(ProcessRegistry.open({ stateDir: state }))).toBe('STATE_DIR_UNTRUSTED');
    }
  });

  it.skipIf(!isRoot)('a sessions directory owned by another user is STATE_DIR_UNTRUSTED', async () => {
    const state = tempDir();
    mkdirSync(join(state, 'sessions'), { mode: 0o700 });
    chownSync(join(state, 'sessions'), NOBODY, NOBODY);
    expect(await code(ProcessRegistry.open({ stateDir: state }))).toBe('STATE_DIR_UNTRUSTED');
  });

  it('a command too long for execve is INVALID_ARGUMENT naming the limit, and leaves nothing behind', async () => {
    const state = tempDir();
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      for (const bytes of [1_100_000, 10_000_000]) {
        const err = await r.spawn(`echo ${'a'.repeat(bytes)}`).catch((e: Error & { code?: string }) => e);
        expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect((err as Error).message).toMatch(/at most 1048576 /);
      }
      // Just under the limit runs.
      const s = await r.spawn(`: ${'a'.repeat(131_000)}; echo fits`, { durable: false });
      expect((await r.wait(s.id, { timeoutMs: 10_000 })).outputPreview).toBe('fits\n');
      expect(await r.list()).toHaveLength(1);
    } finally {
      await r.close();
    }
    // Only the session that ran has a directory.
    const dirs = existsSync(join(state, 'sessions')) ? readdirSync(join(state, 'sessions')) : [];
    expect(dirs.length).toBeLessThanOrEqual(1);
  });
});
