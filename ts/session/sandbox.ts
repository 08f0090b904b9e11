/**
 * A sandbox session: a job launched detached on the far side of an execution environment
 * (see `remote/sandbox.ts`), followed by a poller, killed on the far side. Its PID is never
 * signalled on this host. Only the environment's name is recorded: after a restart a host
 * follows and kills it through its own configuration of that name.
 *
 * A host that did not start the job (a later CLI call, a host that recovered it, one that
 * shows another live host's session) reads the far-side log up to its end whenever it is
 * asked for output (`output`, `readLog`, and so `poll` and `wait`): one round trip, the last
 * `maxOutputChars` bytes at most, the ones before them counted as dropped.
 */
import { ProcwardError } from '../errors.js';
import { pageTail } from '../output/paging.js';
import { OutputTail } from '../output/tail.js';
import { leadsWithKeyMaterial } from '../policy/redact.js';
import type { ExecutionEnvironment } from '../remote/environments.js';
import { farSignalResult, signalRemote } from '../remote/farsignal.js';
import { farDir, killRemote, launch, SandboxPoller, sandboxDir } from '../remote/sandbox.js';
import type { SignalResult } from '../types.js';
import { BaseSession } from './base.js';
import { EMPTY_REPORT, type LogOptions, type LogPage, type OutputText, type RedactView, type StartSpec, type KindKillResult } from './kind.js';

export class SandboxSession extends BaseSession {
  /** The poller of this session: following it (`following`), or only read from on demand. */
  private follow: { env: ExecutionEnvironment; poller: SandboxPoller } | undefined;
  private following = false;
  private launching = false;
  /** This host launched the job and follows it from its first byte: its tail is the whole story. */
  private startedHere = false;
  /** Log bytes left out by a read up to the end: the tail's text starts somewhere in the log. */
  private skippedBytes = 0;
  /** An ended session's log was read up to its end after the end: later reads cost no round trip. */
  private readAfterEnd = false;

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
    this.startedHere = true;
    this.attach(env);
    await host.persist();
  }

  /** Attaches a poller to a running session this host owns, through this host's environment of its name. */
  async refresh(): Promise<void> {
    const r = this.live.record;
    const env = r.status === 'running' && !this.following && !this.launching && !this.live.foreign ? this.host.environments.forRecord(r) : null;
    if (env) this.attach(env);
  }

  waitTick(): (() => void) | undefined {
    const poller = this.following ? this.follow?.poller : undefined;
    return poller ? () => void poller.tick() : super.waitTick();
  }

  /** The tail, read up to the log's end first when this host did not start the job. */
  async output(): Promise<OutputText> {
    await this.catchUp();
    const { text, startsInKeyBlock } = await super.output();
    return { text, startsInKeyBlock: startsInKeyBlock || (this.skippedBytes > 0 && leadsWithKeyMaterial(text)) };
  }

  /** A page of the tail, read up to the log's end first when this host did not start the job. */
  async readLog(opts: LogOptions, redactView: RedactView): Promise<LogPage> {
    await this.catchUp();
    if (this.skippedBytes === 0) return super.readLog(opts, redactView);
    // Where the log's bytes before the tail are not known, key material at its head is taken for the inside of a block.
    return pageTail(this.live.tail, opts, (text, view, inKey) => redactView(text, view, inKey || leadsWithKeyMaterial(text)));
  }

  /**
   * Reads the far-side log up to its end (see the module docs), unless this host started the
   * job, cannot reach its environment, or read it after its end already; a launch that
   * failed left no log to read.
   */
  private async catchUp(): Promise<void> {
    const r = this.live.record;
    if (this.startedHere || this.launching || this.readAfterEnd || r.pidScope !== 'sandbox' || r.reason === 'failed_start') return;
    const env = this.follow?.env ?? this.host.environments.forRecord(r);
    if (!env) return;
    const ended = r.status === 'exited';
    await this.pollerFor(env).readToEnd(this.host.tailChars);
    if (ended) this.readAfterEnd = true;
    // The end, by the follower's own rules (a kill's claim first), when this host follows the
    // job: its first read after the end says so, not only a later one.
    else if (this.following && r.status === 'running') await this.follow?.poller.tick();
  }

  /** Starts following the session (after spawn, or after a host restart). */
  private attach(env: ExecutionEnvironment): void {
    this.following = true;
    this.pollerFor(env).start();
  }

  /** The session's one poller (made once: it holds the offset read up to). */
  private pollerFor(env: ExecutionEnvironment): SandboxPoller {
    if (this.follow) return this.follow.poller;
    const { live, host } = this;
    const poller = new SandboxPoller(
      env,
      sandboxDir(env, live.record.id),
      {
        pid: (pid) => {
          if (live.record.pid !== pid && !live.foreign) {
            live.record.pid = pid;
            host.persistSoon();
          }
        },
        output: (text) => {
          live.tail.append(text);
          // Another live host's session: its watchers are that host's.
          if (!live.foreign) host.watch(live, text);
        },
        skipped: (bytes) => {
          this.skippedBytes += bytes;
          if (live.tail instanceof OutputTail) live.tail.skip(bytes);
        },
        killed: (signal, exit) => {
          // A kill of any host ended it (its claim on the far side says so, and by which
          // signal). The job's own status when the wrapper recorded one (a trap's exit
          // code after the SIGTERM), else the claim's signal: `signal` only when a signal ended it.
          live.killSignal ??= signal;
          const known = exit !== null && (exit.exitCode !== null || exit.signal !== null);
          host.finish(live, { exitCode: known ? exit.exitCode : null, signal: known ? exit.signal : signal, reason: 'killed', source: 'kill' });
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
    return poller;
  }

  /**
   * Kill on the far side: its process group there, then survivors. Works for sessions
   * another live host follows (they read its claim there, see `killRemote`), and for `lost`
   * ones whose environment is back. The report's `signal` is the one that ended the job
   * (SIGKILL, with `escalated`, when the job's own process outlived the grace period).
   * An ended session is `already_exited`, though the far-side kill still takes what is left
   * of it while its environment is configured, best effort (the job can write its own exit
   * file while it runs on, or leave processes behind).
   * Errors: `ENVIRONMENT_UNAVAILABLE` (the session stays as it was), `KILL_SURVIVORS`.
   */
  async kill(graceMs: number): Promise<KindKillResult> {
    const { live, host } = this;
    const r = live.record;
    const base = { id: r.id, ...EMPTY_REPORT };
    const killable = r.status === 'running' || r.reason === 'lost';
    const env = this.follow?.env ?? host.environments.forRecord(r);
    if (!killable || !r.pid) {
      if (env && r.pid && r.reason !== 'failed_start') await killRemote(env, sandboxDir(env, r.id), graceMs).catch(() => undefined);
      return { ...base, outcome: 'already_exited', exitCode: r.exitCode, signal: r.signal };
    }
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
      return { ...base, outcome: 'already_exited', exitCode: r.exitCode, signal: r.signal };
    }
    if (res.survivors.length > 0) {
      if (seen) this.endFromExit(seen);
      const { survivors } = res;
      throw new ProcwardError('KILL_SURVIVORS', `${survivors.length} process(es) survived the kill of ${r.id} on the far side: ${survivors.join(', ')}`, { survivors });
    }
    live.killed = true;
    live.killSignal = res.signal;
    await this.follow?.poller.tick();
    this.follow?.poller.stop();
    // The signal that ended the job (a follower may have recorded the same from the claim already).
    host.finish(live, { exitCode: null, signal: res.signal, reason: 'killed', source: 'kill' });
    return { ...base, outcome: 'killed', signalled: res.signalled, escalated: res.escalated, exitCode: r.exitCode, signal: r.signal };
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
