/**
 * Containers and pods as execution environments. A container engine (`docker`, `podman`,
 * or another binary that speaks docker's command line) and `kubectl` take the same path:
 * a {@link CommandEnvironment} whose client runs `sh -s` inside the target (`exec -i`), plus
 * an inspection that tells, after a script failed to run, whether the target is gone for
 * good (stopped, removed, a pod that finished) or may come back. Only the two argv builders
 * and the reading of the inspection differ per client.
 */
import { execFile } from 'node:child_process';
import { basename } from 'node:path';
import { childEnvironment } from '../policy/environment.js';
import { CommandEnvironment, type EnvironmentDescription } from './commandenv.js';

/** Options of {@link dockerExec}. */
export interface ContainerEngineOptions {
  /**
   * The engine's client: `docker` (default), `podman`, or a path to a binary. A binary whose
   * name contains `podman` takes podman's options; any other takes docker's.
   */
  engine?: string;
  /**
   * The engine's API endpoint (`unix:///run/user/1000/podman/podman.sock`,
   * `tcp://10.0.0.5:2376`): docker's `--host`, podman's `--url`. Default: the client's own
   * (DOCKER_HOST, CONTAINER_HOST, its configuration).
   */
  host?: string;
  /** The user to run as inside the container (`exec -u`). Default: the container's. */
  user?: string;
  /** Far-side directory for session files (see `ExecutionEnvironment.tmpDir`). */
  tmpDir?: string;
}

/** The engine's global options that select its endpoint. */
function endpointArgs(engine: string, host: string | undefined): string[] {
  if (host === undefined) return [];
  return basename(engine).includes('podman') ? ['--url', host] : ['--host', host];
}

/** Runs an inspection; resolves with its output, or the error text when it failed. */
function inspect(argv: string[]): Promise<{ ok: boolean; text: string }> {
  const [cmd, ...args] = argv as [string, ...string[]];
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 15_000, env: childEnvironment(process.env) }, (err, stdout, stderr) => {
      resolve(err ? { ok: false, text: `${stderr}${err.message}` } : { ok: true, text: String(stdout).trim() });
    });
  });
}

/**
 * An environment reached through a container client: `argv` runs `sh -s` in the target,
 * `inspectArgv` prints its state, and `verdict` turns that state (or the inspection's
 * error) into why the target is gone for good, or null.
 */
function clientEnvironment(
  description: EnvironmentDescription,
  argv: string[],
  inspectArgv: string[],
  verdict: (res: { ok: boolean; text: string }) => string | null,
): CommandEnvironment {
  return new CommandEnvironment(description, argv, async () => verdict(await inspect(inspectArgv)));
}

/**
 * A running container, reached with `<engine> exec -i [-u user] <container> sh -s`. The
 * container needs `sh`, and for sandbox sessions `setsid`, `base64`, `awk`, `mkfifo` and
 * /proc (BusyBox has them all). When a script cannot run, the engine's `inspect` tells
 * whether the container stopped or was removed (its jobs are gone: a session there is lost
 * at once, with that reason) or the engine is only unreachable (the session is lost after
 * the poller's deadline).
 */
export function dockerExec(container: string, opts: ContainerEngineOptions = {}): CommandEnvironment {
  const engine = opts.engine ?? 'docker';
  const global = [engine, ...endpointArgs(engine, opts.host)];
  const description: EnvironmentDescription = {
    kind: 'docker',
    container,
    ...(opts.engine !== undefined && { engine: opts.engine }),
    ...(opts.host !== undefined && { host: opts.host }),
    ...(opts.user !== undefined && { user: opts.user }),
    ...(opts.tmpDir && { tmpDir: opts.tmpDir }),
  };
  return clientEnvironment(
    description,
    [...global, 'exec', '-i', ...(opts.user !== undefined ? ['-u', opts.user] : []), container, 'sh', '-s'],
    [...global, 'inspect', '--type', 'container', '--format', '{{.State.Status}}', container],
    ({ ok, text }) => {
      if (!ok) return /no such (container|object)|no container with name or id/i.test(text) ? `container ${container} no longer exists` : null;
      const status = text.split('\n')[0]?.trim() ?? '';
      return ['running', 'paused', 'restarting', ''].includes(status) ? null : `container ${container} is not running (${status})`;
    },
  );
}

/**
 * A pod, reached with `kubectl [--context c] exec -i <pod> [-c container] [-n namespace] --
 * sh -s`; `kubectl get pod` tells whether it finished or was deleted. No cluster runs in
 * procward's tests: what is verified is the command lines built here.
 */
export function kubectlExec(pod: string, opts: { container?: string; namespace?: string; context?: string; tmpDir?: string } = {}): CommandEnvironment {
  const global = ['kubectl', ...(opts.context ? ['--context', opts.context] : [])];
  const ns = opts.namespace ? ['-n', opts.namespace] : [];
  return clientEnvironment(
    {
      kind: 'kubectl',
      pod,
      ...(opts.container && { container: opts.container }),
      ...(opts.namespace && { namespace: opts.namespace }),
      ...(opts.context && { context: opts.context }),
      ...(opts.tmpDir && { tmpDir: opts.tmpDir }),
    },
    [...global, 'exec', '-i', pod, ...(opts.container ? ['-c', opts.container] : []), ...ns, '--', 'sh', '-s'],
    [...global, 'get', 'pod', pod, ...ns, '-o', 'jsonpath={.status.phase}'],
    ({ ok, text }) => {
      if (!ok) return /not ?found/i.test(text) ? `pod ${pod} no longer exists` : null;
      return text === 'Succeeded' || text === 'Failed' ? `pod ${pod} has ended (${text})` : null;
    },
  );
}
