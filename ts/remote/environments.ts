/**
 * Execution environments: where a sandbox session runs. An environment runs a POSIX shell
 * script on the far side and returns its output and exit status; it never needs a daemon
 * of ours there, only `sh` (plus `base64`, `setsid`, `kill`, `tail`, `head`, `wc` for
 * sandbox sessions).
 *
 * Every adapter sends the script on the far shell's stdin (`sh -s`), so no layer of quoting
 * can alter it: commands reach the far side byte for byte.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandEnvironment, type EnvironmentDescription, type ExecutionEnvironment } from './commandenv.js';
import { dockerExec, kubectlExec } from './containers.js';

export { CommandEnvironment, type EnvironmentDescription, type ExecResult, type ExecutionEnvironment } from './commandenv.js';
export { type ContainerEngineOptions, dockerExec, kubectlExec } from './containers.js';

/** The local shell (tests, and sandboxes the host reaches through its own filesystem). */
export function localShell(opts: { tmpDir?: string } = {}): CommandEnvironment {
  return new CommandEnvironment({ kind: 'local', ...(opts.tmpDir && { tmpDir: opts.tmpDir }) }, ['/bin/sh', '-s']);
}

/** SSH through the system `ssh` client, with connection multiplexing (ControlMaster). */
export class SshEnvironment extends CommandEnvironment {
  private readonly controlDir: string;

  constructor(desc: Extract<EnvironmentDescription, { kind: 'ssh' }>, opts: { multiplex?: boolean } = {}) {
    const controlDir = mkdtempSync(join(tmpdir(), 'procward-ssh-'));
    const mux = opts.multiplex === false ? [] : ['-o', 'ControlMaster=auto', '-o', `ControlPath=${join(controlDir, 'cm')}`, '-o', 'ControlPersist=60'];
    super(desc, sshArgv(desc, mux));
    this.controlDir = controlDir;
  }

  override async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      const [cmd, ...args] = sshArgv(this.description as Extract<EnvironmentDescription, { kind: 'ssh' }>, ['-o', `ControlPath=${join(this.controlDir, 'cm')}`, '-O', 'exit']);
      const child = spawn(cmd as string, args.slice(0, -2), { stdio: 'ignore' });
      child.on('close', () => resolve());
      child.on('error', () => resolve());
    });
    rmSync(this.controlDir, { recursive: true, force: true });
  }
}

/** The argv of an `ssh` call that runs `sh -s` on the far side. */
export function sshArgv(d: Extract<EnvironmentDescription, { kind: 'ssh' }>, extra: string[] = []): string[] {
  return [
    'ssh',
    '-o', 'BatchMode=yes',
    '-o', 'ConnectTimeout=10',
    ...(d.port !== undefined ? ['-p', String(d.port)] : []),
    ...(d.identityFile !== undefined ? ['-i', d.identityFile, '-o', 'IdentitiesOnly=yes'] : []),
    ...(d.options ?? []).flatMap((o) => ['-o', o]),
    ...extra,
    d.user ? `${d.user}@${d.host}` : d.host,
    'sh', '-s',
  ];
}

/**
 * Builds an environment from a description in the host's own configuration (for
 * `RegistryOptions.environments`). procward never calls it on what it reads from the state
 * directory: a description there could name `ProxyCommand` or any other ssh option.
 */
export function environmentFrom(d: EnvironmentDescription): ExecutionEnvironment {
  switch (d.kind) {
    case 'local':
      return localShell(d);
    case 'ssh':
      return new SshEnvironment(d);
    case 'docker':
      return dockerExec(d.container, d);
    case 'kubectl':
      return kubectlExec(d.pod, d);
  }
}
