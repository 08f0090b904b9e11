// What a newcomer running the README read in the CLI's messages and help, and where it left
// them stuck: the environments file's format and its errors' fixes, an unknown session's
// state directory, signal's target for --in sessions, top's defaults. The built CLI runs as
// a subprocess (a fresh host each call).
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliHost, configFile } from './envfile.js';
import { cli, tempDir, until } from './support.js';

/** The environment of a host with no PROCWARD_ENVIRONMENTS and its default file under a fresh XDG_CONFIG_HOME. */
function noFileEnv(): { env: NodeJS.ProcessEnv; path: string } {
  const xdg = tempDir();
  return { env: { PROCWARD_ENVIRONMENTS: '', XDG_CONFIG_HOME: xdg, PROCWARD_STATE_DIR: tempDir() }, path: join(xdg, 'procward', 'environments.json') };
}

describe('the environments file: its format, shown where it is missing or wrong', () => {
  it('environments --help shows a file whose example is valid: procward environments lists its names and kinds', async () => {
    const help = await cli(['environments', '--help']);
    expect(help.code).toBe(0);
    const example = help.stdout.slice(help.stdout.indexOf('{"environments"'));
    const json = example.slice(0, example.indexOf('}}}') + 3);
    expect(json).toContain('"kind": "docker"');
    const listed = await cliHost(configFile(JSON.parse(json)))('environments', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).environments).toEqual([
      { name: 'web', kind: 'docker' },
      { name: 'build', kind: 'ssh' },
      { name: 'api', kind: 'kubectl' },
      { name: 'here', kind: 'local' },
    ]);
    expect(help.stdout).toContain('chmod 600');
    // start --in points at it.
    expect((await cli(['start', '--help'])).stdout.replace(/\s+/g, ' ')).toContain('its format: procward environments --help');
  });

  it('with no file, environments says it does not exist and where its format is; an empty one, that it names none', async () => {
    const { env, path } = noFileEnv();
    expect(existsSync(path)).toBe(false);
    const none = await cli(['environments'], env);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe(`no environments: ${path} does not exist (its format: procward environments --help)\n`);
    mkdirSync(join(path, '..'), { recursive: true });
    const empty = configFile({ environments: {} }, 0o600, join(path, '..'));
    const named = await cli(['environments'], env);
    expect(named.stdout).toBe(`no environments: ${empty} names none (its format: procward environments --help)\n`);
  });

  it('a file writable by its group (0664): start --in says chmod 600 FILE, not start --help', async () => {
    const path = configFile({ environments: { box: { kind: 'local' } } }, 0o664);
    const r = await cliHost(path)('start', '--in', 'box', '--', 'echo never');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is writable by its group or by others (mode 0664)');
    expect(r.stderr.trimEnd()).toMatch(new RegExp(`\\(run chmod 600 ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\)$`));
    expect(r.stderr).not.toContain('start --help');
    // A command that goes on without the file warns with the same fix.
    const list = await cliHost(path)('list');
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).toContain(`(run chmod 600 ${path})`);
  });

  it('an unknown key, or an --in name the file lacks, points to environments --help', async () => {
    const path = configFile({ environments: { box: { kind: 'local', password: 'x' } } });
    const r = await cliHost(path)('start', '--in', 'box', '--', 'echo never');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/password/);
    expect(r.stderr.trimEnd()).toMatch(/\(see procward environments --help\)$/);
    const { env } = noFileEnv();
    const unknown = await cli(['start', '--in', 'box', '--', 'echo never'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trimEnd()).toMatch(/is not configured.*\(see procward environments --help\)$/);
  });
});

describe('other CLI messages', () => {
  it('an unknown session names the state directory searched and where it came from', async () => {
    const state = tempDir();
    const given = await cli(['poll', 'dead', '--state-dir', state]);
    expect(given.code).toBe(1);
    expect(given.stderr).toContain(`procward: UNKNOWN_SESSION: no session matches "dead" in the state directory ${state} (--state-dir)`);
    const fromEnv = await cli(['kill', 'dead', '--json'], { PROCWARD_STATE_DIR: state });
    expect(JSON.parse(fromEnv.stdout).error).toMatchObject({ code: 'UNKNOWN_SESSION', details: { stateDir: state }, message: expect.stringContaining(`${state} ($PROCWARD_STATE_DIR)`) });
  });

  it('signal --help says what a CLI job and an --in job get (the job and its descendants), and it is what signal does', async () => {
    const help = (await cli(['signal', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toContain("send one signal to a session's job and its descendants (on the far side for a job started with --in;");
    expect(help).not.toContain('(its process group');
    // A CLI job (durable): the job's process and its descendants, not a process group.
    const state = tempDir();
    const id = (await cli(['start', '--state-dir', state, '--', "trap '' USR1; sleep 30 & sleep 30 & wait"])).stdout.trim();
    try {
      await until(async () => (await cli(['tree', id, '--json', '--state-dir', state])).stdout.split('sleep 30').length >= 3, 10_000, 'both children');
      const sent = await cli(['signal', id, 'USR1', '--state-dir', state]);
      expect(sent.stdout).toMatch(new RegExp(`^${id}: SIGUSR1 sent to process \\d+ and 2 descendants\n$`));
    } finally {
      await cli(['kill', id, '-t', '0', '--state-dir', state]);
    }
  });

  it('top --help shows each default once', async () => {
    const help = (await cli(['top', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('time between refreshes (default: 1s)');
    expect(help).toContain('sort by cpu, mem, output, started or status (default: cpu)');
    expect(help.match(/\(default/g)?.length).toBe(3); // --state-dir's, --sort's and --interval's
  });
});
