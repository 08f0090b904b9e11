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
import { childEnvironment } from '../policy/environment.js';
import { ProcwardError } from '../errors.js';

/** What running a script gave. `code` is null when a signal ended the client or it timed out. */
export interface ExecResult {
  stdout: Buffer;
  stderr: string;
  code: number | null;
  timedOut: boolean;
}

/**
 * What an environment is (never secrets: no passwords, no key material). It is not
 * persisted: a sandbox session records only its environment's name in
 * `RegistryOptions.environments`, so a record can never supply an ssh option or a command.
 */
export type EnvironmentDescription =
  | { kind: 'local'; tmpDir?: string }
  | { kind: 'ssh'; host: string; user?: string; port?: number; identityFile?: string; options?: string[]; tmpDir?: string }
  | { kind: 'docker'; container: string; tmpDir?: string }
  | { kind: 'kubectl'; pod: string; container?: string; namespace?: string; context?: string; tmpDir?: string };

/** Where sandbox sessions run. */
export interface ExecutionEnvironment {
  /** What it is (see {@link environmentFrom}). */
  readonly description: EnvironmentDescription;
  /**
   * Directory on the far side for session files; `%i` stands for the far-side user's numeric
   * id. Default `/tmp/procward-sandbox-%i`. The launch creates it 0700 and refuses it unless
   * it is a real directory owned by that user and writable by no one else.
   */
  readonly tmpDir: string;
  /** Runs `script` with `sh -s` on the far side. Rejects only when the client cannot start. */
  exec(script: string, opts?: { timeoutMs?: number }): Promise<ExecResult>;
  /** Releases connections (SSH control masters). */
  close(): Promise<void>;
}

/** One base per far-side user: another user cannot create it first (see `remote/sandbox.ts`). */
const DEFAULT_TMP = '/tmp/procward-sandbox-%i';

/** An environment reached by running a client program whose last arguments start `sh -s`. */
export class CommandEnvironment implements ExecutionEnvironment {
  readonly tmpDir: string;

  constructor(
    readonly description: EnvironmentDescription,
    /** The client's argv (program first), ending with the far side's `sh -s`. */
    readonly argv: string[],
  ) {
    this.tmpDir = description.tmpDir ?? DEFAULT_TMP;
  }

  exec(script: string, opts: { timeoutMs?: number } = {}): Promise<ExecResult> {
    const [cmd, ...args] = this.argv as [string, ...string[]];
    return new Promise((resolve, reject) => {
      // The client gets the host's environment without its secrets, as local jobs do (the
      // local shell passes it on to the job; ssh/docker/kubectl need only their own).
      const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: childEnvironment(process.env) });
      const out: Buffer[] = [];
      let err = '';
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, opts.timeoutMs ?? 30_000);
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(new ProcwardError('ENVIRONMENT_UNAVAILABLE', `cannot run ${cmd}: ${e.message}`));
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ stdout: Buffer.concat(out), stderr: err, code: timedOut ? null : code, timedOut });
      });
      child.stdin.on('error', () => {});
      child.stdin.end(script);
    });
  }

  async close(): Promise<void> {}
}

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

/** `docker exec -i <container> sh -s` (command construction is tested; no engine runs here). */
export function dockerExec(container: string, opts: { tmpDir?: string } = {}): CommandEnvironment {
  return new CommandEnvironment({ kind: 'docker', container, ...(opts.tmpDir && { tmpDir: opts.tmpDir }) }, ['docker', 'exec', '-i', container, 'sh', '-s']);
}

/** `kubectl exec -i <pod> [-c container] [-n namespace] -- sh -s` (command construction is tested only). */
export function kubectlExec(pod: string, opts: { container?: string; namespace?: string; context?: string; tmpDir?: string } = {}): CommandEnvironment {
  return new CommandEnvironment(
    {
      kind: 'kubectl',
      pod,
      ...(opts.container && { container: opts.container }),
      ...(opts.namespace && { namespace: opts.namespace }),
      ...(opts.context && { context: opts.context }),
      ...(opts.tmpDir && { tmpDir: opts.tmpDir }),
    },
    [
      'kubectl',
      ...(opts.context ? ['--context', opts.context] : []),
      'exec', '-i', pod,
      ...(opts.container ? ['-c', opts.container] : []),
      ...(opts.namespace ? ['-n', opts.namespace] : []),
      '--', 'sh', '-s',
    ],
  );
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
