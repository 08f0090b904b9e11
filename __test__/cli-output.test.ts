// Issue 18, DESIGN section 8 (CLI): output that is never lost. The built CLI runs as a
// subprocess behind real shell pipes: a slow reader gets every line, a reader that goes
// away ends the CLI with 141, `log -f` follows a job across log rotations and ends with it.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, cleanupPid, cli, started, tempDir, until } from './support.js';

/** Runs `script` in /bin/sh with `$CLI` set to `node dist/cli.mjs`; resolves with its stdout and exit status. */
function sh(script: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', script], { env: { ...process.env, ...env, CLI: `${process.execPath} ${CLI}` }, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

describe('piped output is never lost', () => {
  it('wait of a 500 000-line job into a reader that sleeps first: wc -l is exactly 500000, and log gives the same bytes', async () => {
    const state = tempDir();
    const s = await started(state, 'seq 500000');
    const waited = await sh(`$CLI wait ${s.id} --state-dir ${state} | (sleep 1; wc -l)`);
    expect(waited.stdout.trim()).toBe('500000');
    expect(waited.stderr).toContain('exit code 0');
    let expected = '';
    for (let i = 1; i <= 500_000; i++) expected += `${i}\n`;
    const logged = await sh(`$CLI log ${s.id} --state-dir ${state} | (sleep 1; md5sum)`);
    expect(logged.stdout.split(' ')[0]).toBe(md5(expected));
  }, 120_000);

  it('300 lines of 20 000 bytes each (6 MB, pages of several MiB) reach a slow reader whole: wc -c is exact', async () => {
    const state = tempDir();
    const s = await started(state, 'i=0; while [ $i -lt 300 ]; do i=$((i+1)); printf "%05d%020000d\\n" $i 0; done');
    const r = await sh(`$CLI wait ${s.id} --state-dir ${state} | (sleep 1; wc -c)`);
    expect(r.stdout.trim()).toBe(String(300 * 20_006));
  }, 120_000);

  it('a reader that goes away (| head -2) ends the CLI with status 141 and no error message', async () => {
    const state = tempDir();
    const s = await started(state, 'seq 200000');
    await sh(`$CLI wait ${s.id} --state-dir ${state} >/dev/null`);
    const err = join(state, 'err');
    const r = await sh(`$CLI log ${s.id} --state-dir ${state} 2>${err} | head -2; echo "status $(cat ${err} | wc -l)"`);
    expect(r.stdout).toBe('1\n2\nstatus 0\n');
    const bash = await sh(`bash -c 'set -o pipefail; $CLI log ${s.id} --state-dir ${state} | head -1 >/dev/null; echo $?'`);
    expect(bash.stdout.trim()).toBe('141');
  }, 60_000);

  it('log --tail N gives the last N lines, --offset/--limit a window; --raw keeps colour escapes, the default strips them', async () => {
    const state = tempDir();
    const s = await started(state, 'seq 1000; printf "\\033[31mred\\033[0m\\n"');
    await cli(['wait', s.id, '--state-dir', state]);
    expect((await cli(['log', s.id, '--state-dir', state, '--tail', '3'])).stdout).toBe('999\n1000\nred\n');
    expect((await cli(['logs', s.id, '--state-dir', state, '-n', '1'])).stdout).toBe('red\n');
    expect((await cli(['log', s.id, '--state-dir', state, '--offset', '10', '--limit', '2'])).stdout).toBe('11\n12\n');
    expect((await cli(['log', s.id, '--state-dir', state, '--tail', '1', '--raw'])).stdout).toBe('\u001b[31mred\u001b[0m\n');
  }, 60_000);
});

describe('log --follow', () => {
  /** Collects a child's stdout as it comes. */
  function collect(child: ChildProcess): { text: () => string; exit: Promise<number | null> } {
    let text = '';
    child.stdout?.on('data', (d) => {
      text += String(d);
    });
    return { text: () => text, exit: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
  }

  it('follows a job across log rotations (8 KiB cap: one rotation per round), every line once and in order, and exits 0 with the job', async () => {
    const state = tempDir();
    // Each round writes 30 lines of 100 bytes (3 KB, under the 4 KiB rotation size) and waits for
    // its gate: the test opens the gate once the follower printed the round, so no part is
    // rotated away unread, however slow the machine.
    const rounds = 8;
    const pad = 'x'.repeat(80);
    const job = `r=0; while [ $r -lt ${rounds} ]; do r=$((r+1)); i=0; while [ $i -lt 30 ]; do i=$((i+1)); printf "round %d line %03d ${pad}\\n" $r $i; done; while [ ! -e ${state}/gate$r ]; do sleep 0.02; done; done`;
    const s = await started(state, job, '--log-max-bytes', '8KiB');
    const follower = spawn(process.execPath, [CLI, 'log', '-f', s.id, '--state-dir', state], { stdio: ['ignore', 'pipe', 'pipe'] });
    cleanupPid(follower.pid);
    const got = collect(follower);
    const expected: string[] = [];
    for (let r = 1; r <= rounds; r++) {
      for (let i = 1; i <= 30; i++) expected.push(`round ${r} line ${String(i).padStart(3, '0')} ${pad}`);
      await until(() => got.text().includes(`round ${r} line 030`), 30_000, `round ${r} followed`);
      writeFileSync(join(state, `gate${r}`), '');
    }
    expect(await got.exit).toBe(0);
    expect(got.text()).toBe(`${expected.join('\n')}\n`);
    // The log did rotate: the start is gone from what `log` can still read, and log says so.
    const after = await cli(['log', s.id, '--state-dir', state]);
    expect(after.stdout.startsWith('round 1 line 001')).toBe(false);
    expect(after.stderr).toMatch(/not all output was kept: .*dropped by the log cap/);
  }, 120_000);

  it('Ctrl-C (SIGINT) stops following with status 130 and leaves the job running', async () => {
    const state = tempDir();
    const s = await started(state, 'echo first; sleep 60');
    const follower = spawn(process.execPath, [CLI, 'log', '--follow', s.id, '--state-dir', state], { stdio: ['ignore', 'pipe', 'pipe'] });
    cleanupPid(follower.pid);
    const got = collect(follower);
    let err = '';
    follower.stderr?.on('data', (d) => {
      err += String(d);
    });
    await until(() => got.text().includes('first'), 30_000, 'first line followed');
    follower.kill('SIGINT');
    expect(await got.exit).toBe(130);
    expect(err).toContain('the job keeps running');
    const p = JSON.parse((await cli(['poll', s.id, '--state-dir', state, '--json'])).stdout);
    expect(p.status).toBe('running');
    expect(existsSync(join(state, 'sessions', s.id))).toBe(true);
  }, 60_000);
});
