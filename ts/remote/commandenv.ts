/**
 * What an execution environment is: a far side that runs a POSIX shell script (`sh -s`,
 * the script on stdin, so no layer of quoting can alter it) and returns its output and
 * status, and the one way procward reaches most of them: a client program (`ssh`, `docker
 * exec`, `kubectl exec`, the local `sh`) whose last arguments start `sh -s` there.
 */
import { spawn } from 'node:child_process';
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
  | { kind: 'docker'; container: string; engine?: string; host?: string; user?: string; tmpDir?: string }
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
  /**
   * Asked after a script failed to run: why the far side is gone for good (a container
   * stopped or removed: no job of ours can still run there), or null when it may come back
   * (then the session is lost only after the poller's deadline). Optional.
   */
  goneReason?(): Promise<string | null>;
}

/** One base per far-side user: another user cannot create it first (see `remote/sandbox.ts`). */
export const DEFAULT_TMP = '/tmp/procward-sandbox-%i';

/** An environment reached by running a client program whose last arguments start `sh -s`. */
export class CommandEnvironment implements ExecutionEnvironment {
  readonly tmpDir: string;

  constructor(
    readonly description: EnvironmentDescription,
    /** The client's argv (program first), ending with the far side's `sh -s`. */
    readonly argv: string[],
    /** See {@link ExecutionEnvironment.goneReason}. */
    readonly goneReason?: () => Promise<string | null>,
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

