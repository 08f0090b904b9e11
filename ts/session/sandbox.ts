/**
 * A sandbox session: a job launched detached on the far side of an execution environment
 * (see `remote/sandbox.ts`), followed by a poller, killed on the far side. Its PID is never
 * signalled on this host. Only the environment's name is recorded: after a restart a host
 * follows and kills it through its own configuration of that name.
 */
import { ProcwardError } from '../errors.js';
import type { ExecutionEnvironment } from '../remote/environments.js';
import { farSignalResult, signalRemote } from '../remote/farsignal.js';
import { farDir, killRemote, launch, SandboxPoller, sandboxDir } from '../remote/sandbox.js';
import type { KillResult, SignalResult } from '../types.js';
import { BaseSession } from './base.js';
import { EMPTY_REPORT, type StartSpec } from './kind.js';

export class SandboxSession extends BaseSession {
  private follow: { env: ExecutionEnvironment; poller: SandboxPoller } | undefined;
  private launching = false;

  /**
   * Launches the job: registered and checkpointed before the launch (a host that dies
   * meanwhile leaves a record the next host can follow through the far-side directory). A
   * launch that fails is recorded as `failed_start` with the wrapper's status and output,
   * and never as running.
   */
  async start(spec: StartSpec): Promise<void> {
    const { live, host } = this;
    const r = live.record;
    const sandbox = spec.sandbox as { env: ExecutionEnvironment; name?: string };
    const { env } = sandbox;
    Object.assign(r, { pidScope: 'sandbox', durable: false, logPath: null, exitPath: null, ...(sandbox.name !== undefined && { environment: sandbox.name }) });
    host.environments.remember(r.id, env);
    host.register(live);
    let res: Awaited<ReturnType<typeof launch>>;
    // The launch attaches the poller: a refresh meanwhile (a `list` during a slow launch)
    // must not attach a second one, which would append the output twice.
    this.launching = true;
    try {
      await host.persist();
      res = await launch(env, r.id, spec.command, { ...(spec.cwd !== undefined && { cwd: spec.cwd }), ...(spec.vars && { vars: spec.vars }) });
    } finally {
      this.launching = false;
    }
    if (res.ok === false) {
      live.tail.append(res.output);
      host.finish(live, { exitCode: res.code, signal: null, reason: 'failed_start', source: 'environment' });
      await host.persist();
      return;
    }
    if (res.ok === true) r.pid = res.pid;
    this.attach(env);
    await host.persist();
  }

  /** Attaches a poller to a running session this host owns, through this host's environment of its name. */
  async refresh(): Promise<void> {
    const r = this.live.record;
    const env = r.status === 'running' && !this.follow && !this.launching && !this.live.foreign ? this.host.environments.forRecord(r) : null;
    if (env) this.attach(env);
  }

  waitTick(): (() => void) | undefined {
    const poller = this.follow?.poller;
    return poller ? () => void poller.tick() : super.waitTick();
  }

  /** Starts following the session (after spawn, or after a host restart). */
  private attach(env: ExecutionEnvironment): void {
    const { live, host } = this;
    const poller = new SandboxPoller(
      env,
      sandboxDir(env, live.record.id),
      {
        pid: (pid) => {
          if (live.record.pid !== pid) {
            live.record.pid = pid;
            host.persistSoon();
          }
        },
        output: (text) => {
          live.tail.append(text);
          host.watch(live, text);
        },
        exit: (code, signal) => {
          // During a kill the kill decides whether this end is `killed` (see kill).
          if (live.killsInFlight > 0) live.pendingExit = { exitCode: code, signal };
          else this.endFromExit({ exitCode: code, signal });
        },
        lost: (reason) => {
          // A kill (in flight, or done and about to record its end) makes the wrapper vanish
          // on purpose: the kill records the end.
          if (live.killsInFlight > 0 || live.killed) {
            live.pendingLost = reason;
            return;
          }
          host.diagnostics.push(`${live.record.id}: ${reason}`);
          live.tail.append(`\n[procward: session lost: ${reason}]\n`);
          host.finish(live, { exitCode: null, signal: null, reason: 'lost', source: 'environment' });
        },
      },
      {
        ...(host.options.sandbox?.pollIntervalMs !== undefined && { intervalMs: host.options.sandbox.pollIntervalMs }),
        ...(host.options.sandbox?.lostAfterMs !== undefined && { lostAfterMs: host.options.sandbox.lostAfterMs }),
      },
    );
    this.follow = { env, poller };
    poller.start();
  }

  /**
   * Kill on the far side: its process group there, then survivors. Works for sessions
   * another live host follows, and for `lost` ones whose environment is back. Errors:
   * `ENVIRONMENT_UNAVAILABLE` (the session stays as it was), `KILL_SURVIVORS`.
   */
  async kill(graceMs: number): Promise<KillResult> {
    const { live, host } = this;
    const r = live.record;
    const base = { id: r.id, ...EMPTY_REPORT };
    const killable = r.status === 'running' || r.reason === 'lost';
    if (!killable || !r.pid) return { ...base, outcome: 'already_exited', exitCode: r.exitCode, signal: r.signal };
    const env = this.follow?.env ?? host.environments.forRecord(r);
    if (!env) {
      throw new ProcwardError('ENVIRONMENT_UNAVAILABLE', `${r.id} runs in environment ${r.environment === undefined ? '(unnamed, known only to the host that started it)' : JSON.stringify(r.environment)}, which this host has not configured; nothing was run`);
    }
    live.killsInFlight++;
    let res: Awaited<ReturnType<typeof killRemote>>;
    try {
      res = await killRemote(env, sandboxDir(env, r.id), graceMs);
    } finally {
      live.killsInFlight--;
    }
    const seen = live.pendingExit;
    const lost = live.pendingLost;
    delete live.pendingExit;
    delete live.pendingLost;
    if (res === 'exited') {
      if (seen) this.endFromExit(seen);
      else if (lost) host.finish(live, { exitCode: null, signal: null, reason: 'lost', source: 'environment' });
      await this.follow?.poller.tick();
      host.consume(live);
      return { ...base, outcome: 'already_exited', exitCode: r.exitCode, signal: r.signal };
    }
    if (res.length > 0) {
      if (seen) this.endFromExit(seen);
      throw new ProcwardError('KILL_SURVIVORS', `${res.length} process(es) survived the kill of ${r.id} on the far side: ${res.join(', ')}`, { survivors: res });
    }
    live.killed = true;
    await this.follow?.poller.tick();
    this.follow?.poller.stop();
    host.finish(live, { exitCode: null, signal: 'SIGTERM', reason: 'killed', source: 'kill' });
    host.consume(live);
    return { ...base, outcome: 'killed', signalled: [r.pid], exitCode: r.exitCode, signal: r.signal };
  }

  /**
   * One signal to the job's own tree on the far side, never its wrapper, whose process group
   * the job shares (see `remote/farsignal.ts`). Errors: those of `signalRemote`;
   * `SESSION_EXITED` when the job's process is gone (its end is read at once);
   * `ENVIRONMENT_UNAVAILABLE` when this host has not configured its environment.
   */
  async signal(name: string): Promise<SignalResult> {
    const r = this.live.record;
    const env = this.follow?.env ?? this.host.environments.forRecord(r);
    if (!env) throw new ProcwardError('ENVIRONMENT_UNAVAILABLE', `${r.id} runs in environment ${JSON.stringify(r.environment ?? '(unnamed)')}, which this host has not configured; ${name} was not sent`);
    const far = await signalRemote(env, sandboxDir(env, r.id), name);
    if (far !== 'exited') return farSignalResult(r.id, name, far);
    await this.follow?.poller.tick();
    throw new ProcwardError('SESSION_EXITED', `session ${r.id} has ended; ${name} was not sent`);
  }

  close(): void {
    super.close();
    this.follow?.poller.stop();
  }

  /** The far side's session directory (derived from the id and this host's own configuration) goes with the session, best effort. */
  pruned(): void {
    super.pruned();
    const env = this.host.environments.forRecord(this.live.record);
    if (env) env.exec(`${farDir(sandboxDir(env, this.live.record.id))}\nrm -rf "$D"`).catch(() => undefined);
    this.host.environments.forget(this.live.record.id);
  }
}
