// Issue 18, found by a new-user trial of the CLI: `rm`, the documented exit statuses,
// --state-dir/--json before the command, and what `log` says about output the log cap
// dropped (line numbers count from the job's first line). The built CLI runs as a subprocess.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, cli, isAlive, started, tempDir, until } from './support.js';

async function ended(state: string, command: string, ...flags: string[]): Promise<string> {
  const s = await started(state, command, ...flags);
  const w = await cli(['wait', '-q', s.id, '--state-dir', state]);
  expect(w.code, w.stderr).toBe(0);
  return s.id;
}

describe('rm', () => {
  it('forgets one ended session: gone from list, its session directory and the checkpoint; the other stays', async () => {
    const state = tempDir();
    const gone = await ended(state, 'echo bye');
    const kept = await ended(state, 'echo stay');
    expect(existsSync(join(state, 'sessions', gone))).toBe(true);
    // A unique prefix is enough, as for every command.
    const r = await cli(['rm', gone.slice(0, 10), '--state-dir', state]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${gone}: removed\n`);
    expect(existsSync(join(state, 'sessions', gone))).toBe(false);
    expect(readFileSync(join(state, 'checkpoint.json'), 'utf8')).not.toContain(gone);
    const list = await cli(['list', '--json', '--state-dir', state]);
    expect(JSON.parse(list.stdout).map((s: { id: string }) => s.id)).toEqual([kept]);
    // Once more: that id is unknown now, which is not success.
    const again = await cli(['rm', gone, '--state-dir', state]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^procward: UNKNOWN_SESSION: /);
  });

  it('refuses a running session with a clear error and exit 1, and leaves it running and listed', async () => {
    const state = tempDir();
    const s = await started(state, 'sleep 60');
    const r = await cli(['rm', s.id, '--state-dir', state]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^procward: SESSION_RUNNING: .*still running.*kill it first/);
    expect(isAlive(s.pid)).toBe(true);
    const json = await cli(['rm', s.id, '--json', '--state-dir', state]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'SESSION_RUNNING' } });
    const list = await cli(['list', '--json', '--state-dir', state]);
    expect(JSON.parse(list.stdout).map((x: { id: string }) => x.id)).toEqual([s.id]);
    expect((await cli(['rm', '--help'])).stdout).toMatch(/ended session/);
  });
});

describe('exit statuses as the README table documents them', () => {
  it('a bad argument the library refuses is a usage error, exit 2: signal ID FOO, a malformed session id', async () => {
    const state = tempDir();
    const s = await started(state, 'sleep 60');
    const bad = await cli(['signal', s.id, 'FOO', '--state-dir', state]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^procward: INVALID_ARGUMENT: unknown signal "FOO".*\(see procward signal --help\)\n$/);
    expect(isAlive(s.pid)).toBe(true);
    const malformed = await cli(['poll', 'not-an-id', '--state-dir', state]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/^procward: INVALID_ARGUMENT: session id "not-an-id" is not a session id/);
  });
});

describe('top and Ctrl-C', () => {
  const socket = `procward-gaps-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  afterEach(() => {
    try {
      tmux('kill-server');
    } catch {
      // Already gone with its last session.
    }
  });

  it('Ctrl-C in a live top (raw mode: a key, not SIGINT) exits 130 and leaves the job running', async () => {
    const state = tempDir();
    const s = await started(state, 'sleep 120');
    const status = join(tempDir(), 'status');
    tmux('new-session', '-d', '-s', 'top', '-x', '120', '-y', '30', `sh -c '${process.execPath} ${CLI} top --state-dir ${state} --interval 200ms; echo $? > ${status}; sleep 30'`);
    const screen = () => tmux('capture-pane', '-p', '-t', 'top');
    await until(() => screen().includes(s.id), 30_000, 'first frame');
    tmux('send-keys', '-t', 'top', 'C-c');
    await until(() => existsSync(status) && readFileSync(status, 'utf8').endsWith('\n'), 30_000, 'top to exit');
    expect(readFileSync(status, 'utf8')).toBe('130\n');
    expect(isAlive(s.pid)).toBe(true);
  }, 90_000);
});

describe('--state-dir and --json before the command', () => {
  it('are accepted before any command and reach it; after the command they still work', async () => {
    const state = tempDir();
    const start = await cli(['--state-dir', state, '--json', 'start', '--', 'echo hi']);
    expect(start.code, start.stderr).toBe(0);
    const id = JSON.parse(start.stdout).id as string;
    await cli(['--state-dir', state, 'wait', '-q', id]);
    const ps = await cli(['--state-dir', state, 'ps']);
    expect(ps.code, ps.stderr).toBe(0);
    expect(ps.stdout).toContain(id);
    const json = await cli(['--json', '--state-dir', state, 'poll', id]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ id, status: 'exited', exitCode: 0 });
    // Mixed: one before, one after.
    const mixed = await cli(['--json', 'list', '--state-dir', state]);
    expect(JSON.parse(mixed.stdout).map((s: { id: string }) => s.id)).toEqual([id]);
    // A job's own words after the command stay its own.
    const own = await cli(['--state-dir', state, 'start', '-q', '--', 'echo', '--json']);
    await cli(['--state-dir', state, 'wait', '-q', own.stdout.trim()]);
    expect((await cli(['--state-dir', state, 'log', own.stdout.trim()])).stdout).toBe('--json\n');
  });
});

describe('output the log cap dropped', () => {
  it('log says which lines it printed and which are gone, in the job own line numbers; --offset and --json showing agree', async () => {
    const state = tempDir();
    const id = await ended(state, 'seq 1 2000', '--log-max-bytes', '8KiB');
    const all = await cli(['log', id, '--state-dir', state]);
    expect(all.code).toBe(0);
    const printed = all.stdout.trimEnd().split('\n');
    const first = Number(printed[0]);
    expect(first).toBeGreaterThan(1);
    expect(printed.at(-1)).toBe('2000');
    const note = new RegExp(`^procward: ${id}: not all output was kept: printed lines ${first}-2000 of the 2000 the job wrote; lines 1-${first - 1} \\(\\d+ bytes\\) were dropped by the log cap \\(--log-max-bytes\\) and are gone\\n$`);
    expect(all.stderr).toMatch(note);
    // The last three lines: the note names them, not the log's last line alone.
    const tail = await cli(['log', id, '-n', '3', '--state-dir', state]);
    expect(tail.stdout).toBe('1998\n1999\n2000\n');
    expect(tail.stderr).toContain('printed lines 1998-2000 of the 2000 the job wrote');
    // --offset counts from the job's first line: line 1999 is offset 1998.
    const page = await cli(['log', id, '--offset', '1998', '--limit', '2', '--state-dir', state]);
    expect(page.stdout).toBe('1999\n2000\n');
    expect(page.stderr).toContain('printed lines 1999-2000 of the 2000');
    // The library's showing states both numberings: kept lines and the job's own.
    const json = JSON.parse((await cli(['log', id, '--json', '--limit', '2', '--state-dir', state])).stdout);
    expect(json.lines).toEqual(['1999', '2000']);
    expect(json.offset + json.droppedLines + 1).toBe(1999);
    expect(json.showing).toMatch(new RegExp(`^lines ${json.offset + 1}-${json.offset + 2} of ${json.totalLines} kept \\(lines 1999-2000 of the 2000 the job wrote; earlier output dropped by the log cap \\(logMaxBytes\\): ${first - 1} lines \\(1-${first - 1}\\), \\d+ bytes, gone\\)$`));
  }, 60_000);
});
