// Issue 18, DESIGN sections 3, 5 and 8: the CLI as a person meets it. Usage errors, units,
// colour on a terminal and not in a pipe, what list, poll, tree and recover show, the
// environment a job gets, signal and kill. The built CLI runs as a subprocess each time.
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI, cleanupGroup, cli, isAlive, tempDir, until } from './support.js';

async function started(state: string, command: string, ...flags: string[]): Promise<{ id: string; pid: number; supervisorPid?: number }> {
  const r = await cli(['start', '--state-dir', state, '--json', ...flags, '--', command]);
  expect(r.code, r.stderr).toBe(0);
  const s = JSON.parse(r.stdout);
  cleanupGroup(s.pid);
  return s;
}

/** The CLI under a pseudo-terminal (util-linux `script`), with colour variables as given and no others. */
async function onTerminal(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  // Without CI: Node counts a terminal under a generic `CI=true` as colourless (tty.hasColors).
  const { FORCE_COLOR: _f, NO_COLOR: _n, CI: _ci, ...rest } = process.env;
  const command = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const once = () =>
    new Promise<string>((resolve, reject) =>
      execFile('script', ['-qfec', command, '/dev/null'], { env: { ...rest, TERM: 'xterm-256color', ...env }, timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
  // util-linux `script` can end before it has read the pseudo-terminal when the program
  // exits at once on a loaded machine (seen beside CPU hogs: empty output). The CLI printed
  // nothing only if every try is empty.
  let out = '';
  for (let i = 0; i < 3 && out === ''; i++) out = await once();
  return out;
}

/** The CLI with stdout a pipe and colour variables as given and no others. */
function inPipe(args: string[], env: NodeJS.ProcessEnv = {}) {
  const { FORCE_COLOR: _f, NO_COLOR: _n, ...rest } = process.env;
  return new Promise<string>((resolve) => execFile(process.execPath, [CLI, ...args], { env: { ...rest, ...env }, timeout: 30_000 }, (_e, stdout) => resolve(stdout)));
}

describe('usage errors and units', () => {
  it('a duration without a unit is refused with a hint, for --timeout and --grace alike; exit 2 (wait: its own 125), one line', async () => {
    const state = tempDir();
    for (const [args, value] of [
      [['wait', 'proc_0000', '--timeout', '30'], '30'],
      [['kill', 'proc_0000', '--grace', '5'], '5'],
      [['start', '--timeout', '1.5', '--', 'true'], '1.5'],
    ] as const) {
      const r = await cli([...args, '--state-dir', state]);
      expect(r.code).toBe(args[0] === 'wait' ? 125 : 2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(new RegExp(`^procward: INVALID_ARGUMENT: .*give a unit: ${value.replace('.', '\\.')}s or ${value.replace('.', '\\.')}ms\\?`));
      expect(r.stderr).toMatch(/--help\)\n$/);
    }
  });

  it('unknown commands and options, missing and excess arguments: one line "procward: INVALID_ARGUMENT: …", exit 2, no help dump', async () => {
    for (const args of [['frobnicate'], ['list', '--bogus'], ['poll'], ['poll', 'a', 'b'], ['log', 'x', '--tail', '-3'], ['start', '--env', 'NOEQUALS', '--', 'true']]) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^procward: INVALID_ARGUMENT: [^\n]+\n$/);
      expect(r.stderr).not.toContain('Usage:');
    }
    const json = await cli(['poll', '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'INVALID_ARGUMENT' } });
  });

  it('a missing session is exit 1 (wait: its own 125) with the library code; tree of a PID that does not exist is not success', async () => {
    const state = tempDir();
    const r = await cli(['wait', 'proc_000000000000', '--state-dir', state]);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(/^procward: UNKNOWN_SESSION: /);
    for (const pid of ['999999', '4194304']) {
      const t = await cli(['tree', pid]);
      expect(t.code).toBe(1);
      expect(t.stderr).toContain(`no process ${pid}`);
    }
  });

  it('--help ends with the exit status table; --version prints the version alone', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit status:\n {2}0 +success[\s\S]*124 +wait gave up first[\s\S]*125 +wait itself failed/);
    const v = await cli(['--version']);
    expect(v.stdout).toMatch(/^\d+\.\d+\.\d+\S*\n$/);
  });
});

describe('colour', () => {
  it('list is coloured on a pseudo-terminal and plain in a pipe; NO_COLOR and FORCE_COLOR are honoured', async () => {
    const state = tempDir();
    const s = await started(state, 'exit 3');
    await cli(['wait', s.id, '--state-dir', state]);
    const args = ['list', '--state-dir', state];
    const tty = await onTerminal(args);
    expect(tty).toContain(s.id);
    expect(tty).toMatch(/\u001b\[31mexit 3/);
    const noColor = await onTerminal(args, { NO_COLOR: '1' });
    expect(noColor).toContain('exit 3');
    expect(noColor).not.toContain('\u001b[');
    const pipe = await inPipe(args);
    expect(pipe).toContain('exit 3');
    expect(pipe).not.toContain('\u001b[');
    expect(await inPipe(args, { FORCE_COLOR: '1' })).toMatch(/\u001b\[31mexit 3/);
    expect(await inPipe(['poll', s.id, '--state-dir', state], { FORCE_COLOR: '0' })).not.toContain('\u001b[');
  }, 60_000);

  it('list cuts long commands to the terminal width on a terminal, and keeps them whole in a pipe', async () => {
    const state = tempDir();
    const long = `echo ${'word '.repeat(60)}end-of-command`;
    const s = await started(state, long);
    await cli(['wait', s.id, '--state-dir', state]);
    const tty = await onTerminal(['list', '--state-dir', state], { COLUMNS: '100' });
    const row = tty.split(/\r?\n/).find((l) => l.includes(s.id)) as string;
    expect(row).toContain('…');
    expect(row.replace(/\u001b\[[0-9;]*m/g, '').length).toBeLessThanOrEqual(100);
    expect(await inPipe(['list', '--state-dir', state])).toContain('end-of-command');
  }, 60_000);

  it('output: control characters (bell, shift-out, ESC ( 0) are shown escaped by the plain view, on a terminal and in a pipe (issue 28, kind 8); --raw keeps them and colour', async () => {
    const state = tempDir();
    const s = await started(state, 'printf "bell\\007 so\\016 si\\017 charset\\033(0q\\033(B end\\n"; printf "\\033[32mgreen\\033[0m\\n"');
    await cli(['wait', s.id, '--state-dir', state]);
    const tty = await onTerminal(['log', s.id, '--state-dir', state]);
    expect(tty).toContain('bell\\x07 so\\x0e si\\x0f charset\\x1b(0q\\x1b(B end');
    expect(tty).not.toMatch(/[\u0007\u000e\u000f\u001b]/);
    const waited = await onTerminal(['wait', s.id, '--state-dir', state]);
    expect(waited).toContain('bell\\x07');
    expect(waited).not.toContain('\u0007');
    expect(await inPipe(['log', s.id, '--state-dir', state])).toBe('bell\\x07 so\\x0e si\\x0f charset\\x1b(0q\\x1b(B end\ngreen\n');
    expect(await inPipe(['log', s.id, '--state-dir', state, '--raw'])).toContain('bell\u0007 so\u000e si\u000f charset\u001b(0q');
    expect(await onTerminal(['log', s.id, '--state-dir', state, '--raw', '--tail', '1'])).toContain('\u001b[32mgreen\u001b[0m');
    expect(await inPipe(['poll', s.id, '--state-dir', state])).not.toContain('\u0007');
  }, 60_000);

  it('a command with escape sequences is shown escaped, never sent to the terminal', async () => {
    const state = tempDir();
    const s = await started(state, "printf '' # \u001b]0;pwned\u0007\u001b[2J");
    const out = await inPipe(['list', '--state-dir', state]);
    expect(out).toContain('\\x1b]0;pwned\\x07\\x1b[2J');
    expect(out).not.toContain('\u001b');
    expect(await inPipe(['poll', s.id, '--state-dir', state])).not.toContain('\u0007');
  });
});

describe('list, poll, tree and recover', () => {
  it("list shows start, end and run time; list and poll flag a job whose child outlived it ('sleep 77 & echo started')", async () => {
    const state = tempDir();
    const s = await started(state, 'sleep 77 & echo started');
    await until(async () => (JSON.parse((await cli(['poll', s.id, '--state-dir', state, '--json'])).stdout).leftovers ?? 0) >= 1, 30_000, 'leftovers noticed');
    const list = await cli(['ps', '--state-dir', state]);
    expect(list.stdout).toMatch(/SESSION +PID +STATUS +STARTED +ENDED +RAN +NOTES +COMMAND/);
    const row = list.stdout.split('\n').find((l) => l.includes(s.id)) as string;
    expect(row).toMatch(/exit 0 +\d+s ago +\d+s ago +\d+s +1 left running +sleep 77 & echo started/);
    const poll = await cli(['poll', s.id, '--state-dir', state]);
    expect(poll.stdout).toContain(`note: 1 left running; procward kill ${s.id} ends what it left running`);
    // kill ends the leftover (and says it had exited).
    const k = await cli(['stop', s.id, '--state-dir', state, '--grace', '500ms']);
    expect(k.stdout).toMatch(/had already exited \(its leftovers: \d+ process(es)? signalled/);
  }, 60_000);

  it('tree takes a session id (or prefix) or a PID and draws the tree with command lines', async () => {
    const state = tempDir();
    const s = await started(state, 'sleep 61 & sleep 62 & wait');
    let text = '';
    await until(async () => {
      // proc_ + 7 hex: a prefix of digits alone would be read as a PID.
      text = (await cli(['tree', s.id.slice(0, 12), '--state-dir', state])).stdout;
      return text.includes('sleep 61') && text.includes('sleep 62');
    }, 30_000, 'both sleeps in the tree');
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^${s.pid}  .*sleep 61 & sleep 62 & wait`));
    expect(lines).toHaveLength(3);
    expect(lines.slice(1).map((l) => l.slice(0, 3)).sort()).toEqual(['└─ ', '├─ ']);
    expect(lines.slice(1).map((l) => l.replace(/^\S+ \d+ {2}/, '')).sort()).toEqual(['sleep 61', 'sleep 62']);
    expect((await cli(['tree', String(s.pid)])).stdout).toBe(text);
  }, 60_000);

  // Issue 27, kind 9: a process's command line is another program's output; tree printed it raw.
  it('tree masks secrets in the command lines it shows, in text and --json (a flag, a quoted password with a blank, KEY=value)', async () => {
    const state = tempDir();
    const key = `k3y-${Math.random().toString(36).slice(2)}Zq81`;
    const pw = `two words ${Math.random().toString(36).slice(2)}`;
    const token = `t0k-${Math.random().toString(36).slice(2)}Xy`;
    const s = await started(state, `sh -c 'sleep 63; :' app --api-key=${key} --password "${pw}" DB_TOKEN=${token} & wait`);
    let text = '';
    await until(async () => {
      text = (await cli(['tree', String(s.pid)])).stdout;
      return text.split('--api-key=').length === 3;
    }, 30_000, 'the command line in the tree, as the root and its child');
    const json = (await cli(['tree', String(s.pid), '--json'])).stdout;
    for (const out of [text, json]) {
      for (const secret of [key, pw, pw.split(' ')[2] as string, token]) expect(out).not.toContain(secret);
      expect(out).toContain('--api-key=');
      expect(out).toContain('sleep 63');
    }
  }, 60_000);

  it('recover lists each session with its verdict; prune forgets the ended ones and keeps the running one', async () => {
    const state = tempDir();
    const running = await started(state, 'sleep 60');
    const ended = await started(state, 'exit 4');
    await cli(['wait', ended.id, '--state-dir', state]);
    const r = await cli(['recover', '--state-dir', state]);
    expect(r.stdout).toMatch(new RegExp(`${running.id} +adopted +pid ${running.pid} `));
    expect(r.stdout).toMatch(new RegExp(`${ended.id} +ended +exited \\(exit code 4\\)`));
    expect(r.stdout).toContain('2 session(s): 1 running, 1 ended');
    const p = await cli(['prune', '--state-dir', state, '--json']);
    expect(JSON.parse(p.stdout)).toEqual({ removed: [ended.id] });
    const ids = JSON.parse((await cli(['ls', '--state-dir', state, '--json'])).stdout).map((s: { id: string }) => s.id);
    expect(ids).toEqual([running.id]);
  }, 60_000);
});

describe('environment, signal and kill', () => {
  it('--env reaches the job; secret-looking variables are withheld and named on stderr (not their values); --allow-env passes one; --quiet silences', async () => {
    const state = tempDir();
    // The field report's four (DATABASE_URL, PASSWORD, GITHUB_TOKEN, MY_API_KEY) and a plain one.
    const env = { MY_API_KEY: 'value-of-key-123', GITHUB_TOKEN: 'ghp_notreal', DATABASE_URL: 'postgres://u:pw@db/x', PASSWORD: 'hunter2', PLAIN_VAR: 'plain' };
    const r = await cli(['start', '--state-dir', state, '--env', 'FOO=bar baz', '-e', 'EMPTY=', '--', 'echo "[$FOO][$EMPTY][$MY_API_KEY][$GITHUB_TOKEN][$DATABASE_URL][$PASSWORD][$PLAIN_VAR]"'], env);
    const id = r.stdout.trim();
    expect(id).toMatch(/^proc_[0-9a-f]{12}$/);
    expect(r.stderr).toMatch(/withheld from the job .*DATABASE_URL, GITHUB_TOKEN, MY_API_KEY, PASSWORD/);
    for (const value of Object.values(env)) expect(r.stderr).not.toContain(value);
    expect((await cli(['wait', id, '--state-dir', state])).stdout).toBe('[bar baz][][][][][][plain]\n');
    const allowed = await cli(['start', '--state-dir', state, '--allow-env', 'MY_API_KEY', '--quiet', '--', 'echo "[$MY_API_KEY]"'], env);
    expect(allowed.stderr).toBe('');
    expect((await cli(['wait', allowed.stdout.trim(), '--state-dir', state])).stdout).toBe('[value-of-key-123]\n');
  }, 60_000);

  it("the PID list and poll show is the job's own (the shell's $$; kill -USR1 <pid> reaches the job), the supervisor's beside it", async () => {
    const state = tempDir();
    const s = await started(state, 'trap "echo got USR1" USR1; echo "me $$"; while :; do sleep 0.05; done');
    await until(async () => (await cli(['log', s.id, '--state-dir', state])).stdout.includes('me '), 30_000, 'pid printed');
    const me = Number(/me (\d+)/.exec((await cli(['log', s.id, '--state-dir', state])).stdout)?.[1]);
    expect(me).toBe(s.pid);
    const poll = await cli(['poll', s.id, '--state-dir', state]);
    expect(poll.stdout).toMatch(new RegExp(`^${s.id} {2}pid ${me} \\(supervisor \\d+\\)`));
    expect((await cli(['ls', '--state-dir', state])).stdout).toMatch(new RegExp(`${s.id} +${me} +running`));
    process.kill(me, 'SIGUSR1');
    await until(async () => (await cli(['log', s.id, '--state-dir', state])).stdout.includes('got USR1'), 30_000, 'USR1 reached the job');
  }, 60_000);

  it('parallel starts print nothing but their ids', async () => {
    const state = tempDir();
    const all = await Promise.all(Array.from({ length: 8 }, () => cli(['start', '--state-dir', state, '--', 'exit 0'], { MY_API_KEY: '' })));
    for (const r of all) {
      expect(r.stdout).toMatch(/^proc_[0-9a-f]{12}\n$/);
      expect(r.stderr.replace(/^procward: withheld from the job[^\n]*\n/m, '')).toBe('');
    }
  }, 60_000);

  it('signal sends one signal and never escalates: SIGINT to a job that traps it, then kill --grace 0 ends a TERM-ignoring job at once', async () => {
    const state = tempDir();
    const s = await started(state, 'trap "echo got INT" INT; trap "" TERM; echo ready; while :; do sleep 0.05; done');
    await until(async () => (await cli(['log', s.id, '--state-dir', state])).stdout.includes('ready'), 30_000, 'traps set');
    const sig = await cli(['signal', s.id, 'int', '--state-dir', state]);
    // A durable job's group is led by its supervisor, which ignores SIGINT: the group gets it.
    expect(sig.stdout).toMatch(new RegExp(`^${s.id}: SIGINT sent to process group ${s.supervisorPid ?? s.pid}\n$`));
    await until(async () => (await cli(['log', s.id, '--state-dir', state])).stdout.includes('got INT'), 30_000, 'INT handled');
    expect(isAlive(s.pid)).toBe(true);
    const bad = await cli(['signal', s.id, 'SIGBOGUS', '--state-dir', state]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^procward: INVALID_ARGUMENT: /);
    const k = await cli(['kill', s.id, '--grace', '0', '--state-dir', state, '--json']);
    expect(k.code, k.stderr).toBe(0);
    expect(JSON.parse(k.stdout)).toMatchObject({ outcome: 'killed', escalated: true, survivors: [] });
    expect(isAlive(s.pid)).toBe(false);
    const p = JSON.parse((await cli(['poll', s.id, '--state-dir', state, '--json'])).stdout);
    expect(p).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGKILL' });
  }, 60_000);

  it('kill --grace 0s of a TERM-ignoring tree (a child ignoring it too) leaves nothing alive and never says it keeps trying', async () => {
    const state = tempDir();
    const s = await started(state, 'trap "" TERM; sh -c \'trap "" TERM; echo ready; sleep 60\' & wait');
    await until(async () => (await cli(['log', s.id, '--state-dir', state])).stdout.includes('ready'), 30_000, 'child ready');
    const k = await cli(['kill', s.id, '--grace', '0s', '--state-dir', state]);
    expect(k.code, k.stderr).toBe(0);
    expect(k.stdout).toMatch(/killed \(\d+ process(es)? signalled, escalated to SIGKILL\)/);
    expect(`${k.stdout}${k.stderr}`).not.toMatch(/background/);
    expect(isAlive(s.pid)).toBe(false);
  }, 60_000);
});
