// Environments named in the host's configuration file (issue 19 item 3, library side): the
// file says what each name is, checked strictly; a caller only picks a name.
import { chownSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CommandEnvironment, environmentsConfigPath, loadEnvironments, ProcessRegistry, readEnvironmentsConfig } from '../dist/index.mjs';
import { configFile } from './envfile.js';
import { tempDir } from './support.js';

describe('environments from a configuration file', () => {
  it('builds each kind from the file and a registry runs a job in one by its name', async () => {
    const far = tempDir();
    const path = configFile({
      environments: {
        box: { kind: 'local', tmpDir: far },
        build: { kind: 'ssh', host: 'build.internal', user: 'ci', port: 2222, identityFile: '~/.ssh/ci_ed25519', options: ['ConnectTimeout=5'] },
        web: { kind: 'docker', container: 'web-1', engine: 'podman', host: 'unix:///run/podman/podman.sock', user: 'app' },
        api: { kind: 'kubectl', pod: 'api-0', namespace: 'prod', container: 'app' },
      },
    });
    const envs = loadEnvironments({ path });
    expect(Object.keys(envs).sort()).toEqual(['api', 'box', 'build', 'web']);
    expect((envs.web as unknown as CommandEnvironment).argv).toEqual(['podman', '--url', 'unix:///run/podman/podman.sock', 'exec', '-i', '-u', 'app', 'web-1', 'sh', '-s']);
    expect((envs.api as unknown as CommandEnvironment).argv).toEqual(['kubectl', 'exec', '-i', 'api-0', '-c', 'app', '-n', 'prod', '--', 'sh', '-s']);
    const build = envs.build as unknown as CommandEnvironment;
    expect(build.argv).toContain('ci@build.internal');
    expect(build.argv.join(' ')).toMatch(/-i \/\S+\/\.ssh\/ci_ed25519/);
    const r = await ProcessRegistry.open({ environments: envs });
    const s = await r.spawn('echo from-the-file; exit 2', { environment: 'box' });
    expect(await r.wait(s.id, { timeoutMs: 10_000 })).toMatchObject({ exitCode: 2, outputPreview: 'from-the-file\n' });
    await expect(r.spawn('true', { environment: 'nope' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await r.close();
    await build.close();
  });

  it('the file is found through PROCWARD_ENVIRONMENTS, else under XDG_CONFIG_HOME; a missing default file means none', () => {
    const path = configFile({ environments: { box: { kind: 'local' } } });
    expect(environmentsConfigPath({ PROCWARD_ENVIRONMENTS: path })).toBe(path);
    expect(readEnvironmentsConfig({ env: { PROCWARD_ENVIRONMENTS: path } })).toEqual({ box: { kind: 'local' } });
    const xdg = tempDir();
    expect(environmentsConfigPath({ XDG_CONFIG_HOME: xdg })).toBe(join(xdg, 'procward', 'environments.json'));
    expect(readEnvironmentsConfig({ env: { XDG_CONFIG_HOME: xdg } })).toEqual({});
    mkdirSync(join(xdg, 'procward'));
    writeFileSync(join(xdg, 'procward', 'environments.json'), JSON.stringify({ environments: { b: { kind: 'local' } } }), { mode: 0o600 });
    expect(Object.keys(readEnvironmentsConfig({ env: { XDG_CONFIG_HOME: xdg } }))).toEqual(['b']);
    // A file that was named must exist.
    expect(() => readEnvironmentsConfig({ env: { PROCWARD_ENVIRONMENTS: join(xdg, 'missing.json') } })).toThrow(/missing\.json/);
  });

  it('refuses a file others may write, another user owns, or that is a symlink', () => {
    const loose = configFile({ environments: {} }, 0o664);
    expect(() => readEnvironmentsConfig({ path: loose })).toThrow(/writable by its group or by others/);
    const worldly = configFile({ environments: {} }, 0o602);
    expect(() => readEnvironmentsConfig({ path: worldly })).toThrow(/writable by its group or by others/);
    const link = join(tempDir(), 'link.json');
    symlinkSync(configFile({ environments: {} }), link);
    expect(() => readEnvironmentsConfig({ path: link })).toThrow(/not a regular file/);
    if (process.getuid?.() === 0) {
      const theirs = configFile({ environments: {} });
      chownSync(theirs, 65534, 65534);
      expect(() => readEnvironmentsConfig({ path: theirs })).toThrow(/owned by uid 65534/);
    }
  });

  it('refuses secrets, unknown keys, option-like values and bad names, naming the place', () => {
    const bad: [unknown, RegExp][] = [
      [{ environments: { b: { kind: 'ssh', host: 'h', password: 'hunter2' } } }, /environments\.b.*password|Unrecognized key.*password/],
      [{ environments: { b: { kind: 'ssh', host: '-oProxyCommand=touch /tmp/x' } } }, /host must not start with "-"/],
      [{ environments: { b: { kind: 'docker', container: '--privileged' } } }, /container must not start with "-"/],
      [{ environments: { b: { kind: 'ssh', host: 'h', options: ['-oProxyCommand=x'] } } }, /ssh option must not start/],
      [{ environments: { b: { kind: 'ssh', host: 'h', port: '22' } } }, /environments\.b\.port/],
      [{ environments: { b: { kind: 'ftp', host: 'h' } } }, /environments\.b\.kind|Invalid/],
      [{ environments: { 'has space': { kind: 'local' } } }, /environment name/],
      [{ environments: { b: { kind: 'local', tmpDir: 'relative/dir' } } }, /environments\.b\.tmpDir/],
      [{ environments: {}, extra: 1 }, /extra/],
      ['{ not json', /not JSON/],
    ];
    for (const [content, message] of bad) {
      const path = configFile(content);
      expect(() => readEnvironmentsConfig({ path }), JSON.stringify(content)).toThrow(message);
      expect(() => readEnvironmentsConfig({ path }), JSON.stringify(content)).toThrow(path);
    }
  });
});
