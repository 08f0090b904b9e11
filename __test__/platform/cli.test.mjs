// DESIGN section 8 (CLI) on every platform: `start`, `wait` and `kill` are separate host
// processes that find the job through the state directory.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gatedExit, lines, sleep } from './commands.mjs';
import { assertOwnPid, cleanup, cleanupSession, cli, isAlive, tempDir, until } from './support.mjs';

describe('CLI start, wait and kill', () => {
  after(cleanup);

  it('start in one process, wait in another: the job output on stdout and its exit code as the exit status', async () => {
    const work = tempDir();
    const stateDir = join(work, 'state');
    const started = await cli(['start', '--state-dir', stateDir, '--cwd', work, '--json', gatedExit(4)]);
    assert.equal(started.code, 0, started.stdout + started.stderr);
    const s = JSON.parse(started.stdout);
    cleanupSession(s);
    assert.match(s.id, /^proc_[0-9a-f]{12}$/);
    assert.equal(typeof s.supervisorPid, 'number', 'a CLI job is durable: it has a supervisor');
    assertOwnPid(s);

    writeFileSync(join(work, 'gate'), '');
    const waited = await cli(['wait', s.id, '--state-dir', stateDir]);
    assert.equal(waited.code, 4, waited.stdout + waited.stderr);
    assert.deepEqual(lines(waited.stdout), ['first', 'second']);
    assert.match(waited.stderr, /exit code 4/);
  });

  it('start with the command as words after --: each word reaches the program as one argument', async () => {
    const stateDir = join(tempDir(), 'state');
    const words = [process.execPath, '-e', "console.log(process.argv.slice(1).join('|'))", 'plain', 'two words', 'a"quote', 'back\\slash', '100%', '%PATH%', 'x&y'];
    const started = await cli(['start', '--state-dir', stateDir, '--json', '--', ...words]);
    assert.equal(started.code, 0, started.stdout + started.stderr);
    const s = JSON.parse(started.stdout);
    cleanupSession(s);
    const waited = await cli(['wait', s.id, '--state-dir', stateDir]);
    assert.equal(waited.code, 0, waited.stdout + waited.stderr);
    assert.deepEqual(lines(waited.stdout), [words.slice(3).join('|')]);
  });

  it('kill from another process stops the running job, and poll then reports it killed', async () => {
    const stateDir = join(tempDir(), 'state');
    const started = await cli(['start', '--state-dir', stateDir, '--json', sleep(120)]);
    assert.equal(started.code, 0, started.stdout + started.stderr);
    const s = JSON.parse(started.stdout);
    cleanupSession(s);
    assertOwnPid(s);

    const killed = await cli(['kill', s.id, '--state-dir', stateDir, '--json', '--grace', '1s']);
    assert.equal(killed.code, 0, killed.stdout + killed.stderr);
    const k = JSON.parse(killed.stdout);
    assert.equal(k.outcome, 'killed');
    assert.deepEqual(k.survivors, []);
    await until(() => !isAlive(s.pid), 20_000, 'the job gone (or a zombie)');

    const polled = JSON.parse((await cli(['poll', s.id, '--state-dir', stateDir, '--json'])).stdout);
    assert.equal(polled.status, 'exited');
    assert.equal(polled.reason, 'killed');
  });
});
