// Issue 18 item 8: parallel CLI starts against one state directory are quiet. Each CLI
// invocation is a fresh host that recovers first (DESIGN section 8); what another host is
// writing at that moment is not damage and is not reported as such. A checkpoint that is
// really missing, and a session whose host really died before writing it, still are.
import { mkdirSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { CLI, tempDir } from './support.js';

/**
 * `cli` with room for a loaded machine: ten Node hosts starting at once beside CPU hogs can
 * take longer than `cli`'s 30 s; a run killed for time says so instead of passing as exit 1.
 */
function slowCli(args: string[]): Promise<{ code: number | string; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { timeout: 240_000 }, (err, stdout, stderr) => {
      const code = err ? (err.killed ? `killed (${err.signal})` : typeof err.code === 'number' ? err.code : String(err.code)) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe.skipIf(process.platform === 'win32')('parallel starts', () => {
  it('ten concurrent `procward start`s, three rounds on one state directory: nothing on stderr, all thirty listed', async () => {
    const dir = tempDir();
    const ids: string[] = [];
    for (let round = 0; round < 3; round++) {
      const runs = await Promise.all(Array.from({ length: 10 }, () => slowCli(['start', '--state-dir', dir, '--', 'sleep 1'])));
      for (const r of runs) {
        expect(r.stderr, `round ${round}`).toBe('');
        expect(r.code).toBe(0);
        ids.push(r.stdout.trim());
      }
    }
    expect(new Set(ids).size).toBe(30);
    const listed = await slowCli(['list', '--state-dir', dir, '--json']);
    expect(listed.stderr).toBe('');
    const seen = new Set((JSON.parse(listed.stdout) as { id: string }[]).map((s) => s.id));
    for (const id of ids) expect(seen.has(id), id).toBe(true);
  }, 900_000);

  it('a checkpoint that is really missing still warns, and so does a session its dead host never checkpointed', async () => {
    const dir = tempDir();
    // Two hosts in turn, each a process that ends: the second write of checkpoint.json keeps
    // the first as checkpoint.prev.json.
    for (let i = 0; i < 2; i++) expect((await slowCli(['start', '--state-dir', dir, '--', 'true'])).stderr).toBe('');
    rmSync(join(dir, 'checkpoint.json'));
    const listed = await slowCli(['list', '--state-dir', dir]);
    expect(listed.stderr).toContain('checkpoint.json is missing; read the previous generation');
    // The second host's session is only in its directory now, and that host is gone.
    expect(listed.stderr).toContain('recovered from its session directory (its host stopped before writing the checkpoint)');
  }, 600_000);

  it('a session directory without session.json is a start under way for a minute (quiet), and reported after that', async () => {
    const dir = tempDir();
    expect((await slowCli(['start', '--state-dir', dir, '--', 'true'])).stderr).toBe('');
    // Another host has made its session directory and not yet written session.json in it.
    const young = join(dir, 'sessions', 'proc_0123456789ab');
    const old = join(dir, 'sessions', 'proc_ba9876543210');
    mkdirSync(young, { mode: 0o700 });
    mkdirSync(old, { mode: 0o700 });
    const twoMinutesAgo = new Date(Date.now() - 120_000);
    utimesSync(old, twoMinutesAgo, twoMinutesAgo);
    const listed = await slowCli(['list', '--state-dir', dir]);
    expect(listed.stderr).not.toContain('proc_0123456789ab');
    expect(listed.stderr).toContain(`${old}: not in the checkpoint and no readable session.json; left alone`);
  }, 600_000);
});
