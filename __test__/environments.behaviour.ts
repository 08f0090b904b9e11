// The behaviour every far side must show, run against each real one (a live sshd on
// 127.0.0.1, a live podman container): start, output, exit codes and signals, a job that
// outlives the launching call, late output, a replaced log, tree kill with a setsid
// escapee, and a restarted host re-attaching. Far-side processes are checked from the far
// side itself (the environment runs the check), since a container's PIDs are not the host's.
import { randomInt } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { type ExecutionEnvironment, ProcessRegistry } from '../dist/index.mjs';
import { crashHost, ROOT, startHost, tempDir, until } from './support.js';

/** A far side under test. */
export interface FarSide {
  env: ExecutionEnvironment;
  /** A JS expression that builds the same environment in another host process (`M` is the package). */
  envSource: string;
}

export const QUOTING = `printf '%s|' "a b" 'c"d' \`echo e\` $((1+1)) '$HOME' "it's"; cat <<'EOF'\nline $HOME\n\`x\`\nEOF\necho café; exit 3`;
export const QUOTED_OUTPUT = `a b|c"d|e|2|$HOME|it's|line $HOME\n\`x\`\ncafé\n`;

/** Runs `script` on the far side and returns its stdout. */
export async function farRun(env: ExecutionEnvironment, script: string): Promise<string> {
  const res = await env.exec(script, { timeoutMs: 20_000 });
  if (res.code !== 0) throw new Error(`far-side check failed (${res.code}): ${res.stderr}`);
  return res.stdout.toString();
}

/** Single-quotes a value for a POSIX shell. */
function shq(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** How many live (non-zombie) far-side processes have a command line containing `text` (one `ps`, BusyBox or procps). */
export async function farCount(env: ExecutionEnvironment, text: string): Promise<number> {
  // The text goes in through the environment, so no command line holds it but the ones counted.
  const out = await farRun(env, `export T=${shq(text)}\nps -eo stat,args | awk 'NR > 1 && $1 !~ /^Z/ && index($0, ENVIRON["T"]) { n++ } END { print n + 0 }'`);
  return Number(out.trim());
}

/** The far-side PIDs of live (non-zombie) processes whose command line contains `text`. */
async function farPids(env: ExecutionEnvironment, text: string): Promise<number[]> {
  const out = await farRun(env, `export T=${shq(text)}\nps -eo pid,stat,args | awk 'NR > 1 && $2 !~ /^Z/ && index($0, ENVIRON["T"]) { print $1 }'`);
  return out.split('\n').filter(Boolean).map(Number);
}

/**
 * A sleep duration no other test uses, to find this test's processes on the far side, and
 * bounded (about 300 s), so a job a failed test could not kill still ends by itself.
 */
function uniqueSleep(): string {
  return `300.${100_000 + randomInt(800_000)}`;
}

/** Shell that waits until `/tmp/<marker>` exists, for at most about 120 s. */
function awaitMarker(marker: string): string {
  return `i=0; while [ ! -e /tmp/${marker} ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done`;
}

/** Registers the shared behaviour tests; `far()` gives the far side once the block's `beforeAll` ran. */
export function farSideBehaviour(far: () => FarSide): void {
  const opened: ProcessRegistry[] = [];
  const open = async () => {
    const r = await ProcessRegistry.open({ sandbox: { pollIntervalMs: 50 } });
    opened.push(r);
    return r;
  };
  // A test that failed midway leaves its far-side job running: kill what is still running.
  afterEach(async () => {
    for (const r of opened.splice(0)) {
      for (const s of await r.list().catch(() => [])) {
        if (s.status === 'running') await r.kill(s.id, { graceMs: 0 }).catch(() => undefined);
      }
      await r.close().catch(() => undefined);
    }
  });

  it('runs a job with exact output and exit code', async () => {
    const r = await open();
    const s = await r.spawn(QUOTING, { environment: far().env });
    expect(s).toMatchObject({ status: 'running', pidScope: 'sandbox' });
    const w = await r.wait(s.id, { timeoutMs: 20_000 });
    expect(w).toMatchObject({ status: 'exited', exitCode: 3, signal: null, reason: 'exited', outputPreview: QUOTED_OUTPUT });
    await r.close();
  });

  it('a job outlives the call that launched it: spawn returns while it runs, and its output and status arrive later', async () => {
    const r = await open();
    const { env } = far();
    const marker = `outlives-${uniqueSleep()}`;
    const s = await r.spawn(`echo started; ${awaitMarker(marker)}; echo released; exit 7`, { environment: env });
    await until(async () => (await r.poll(s.id)).outputPreview.includes('started'), 20_000, 'first line');
    expect((await r.poll(s.id)).status).toBe('running');
    await farRun(env, `touch /tmp/${marker}`);
    const w = await r.wait(s.id, { timeoutMs: 20_000 });
    expect(w).toMatchObject({ exitCode: 7, outputPreview: 'started\nreleased\n' });
    await farRun(env, `rm -f /tmp/${marker}`);
    await r.close();
  });

  it('a job killed by a signal reports the signal, not the shell status 128+N', async () => {
    const r = await open();
    const { env } = far();
    for (const [cmd, signal] of [
      ['echo before; kill -TERM $$', 'SIGTERM'],
      ['kill -USR1 $$', 'SIGUSR1'],
      ['sleep 0.2; kill -KILL $$', 'SIGKILL'],
    ] as const) {
      const s = await r.spawn(cmd, { environment: env });
      const w = await r.wait(s.id, { timeoutMs: 20_000 });
      expect(w, cmd).toMatchObject({ status: 'exited', exitCode: null, signal, reason: 'exited' });
    }
    // A job that exits with 128+N by itself is an exit code, not a signal.
    for (const code of [143, 130]) {
      const s = await r.spawn(`exit ${code}`, { environment: env });
      expect(await r.wait(s.id, { timeoutMs: 20_000 })).toMatchObject({ exitCode: code, signal: null, reason: 'exited' });
    }
    await r.close();
  });

  it('output a background grandchild writes after the job ended is read', async () => {
    const r = await open();
    const { env } = far();
    const marker = `late-${uniqueSleep()}`;
    const s = await r.spawn(`( ${awaitMarker(marker)}; echo late-one; sleep 0.2; echo late-two ) & echo early; exit 0`, { environment: env });
    const w = await r.wait(s.id, { timeoutMs: 20_000 });
    expect(w).toMatchObject({ exitCode: 0, reason: 'exited' });
    expect(w.outputPreview).toContain('early');
    // Only now does the grandchild write.
    await farRun(env, `touch /tmp/${marker}`);
    await until(async () => (await r.poll(s.id)).outputPreview.includes('late-two'), 20_000, 'late output');
    expect((await r.poll(s.id)).outputPreview).toBe('early\nlate-one\nlate-two\n');
    expect((await r.readLog(s.id)).text).toContain('late-two');
    await farRun(env, `rm -f /tmp/${marker}`);
    await r.close();
  });

  for (const [how, start, replace] of [
    ['by a new file renamed over it (new inode)', 'REPLACED-START', `printf 'REPLACED-START and a much longer text than before\\n' > "$L.new"; mv "$L.new" "$L"`],
    ['in place (same inode, truncated and rewritten)', 'REWRITTEN-START', `printf 'REWRITTEN-START and a much longer text than before\\n' > "$L"`],
  ] as const) {
    it(`a log replaced ${how} by a longer one is read again from its start, not from the old offset`, async () => {
      const r = await open();
      const { env } = far();
      const marker = `replace-${uniqueSleep()}`;
      const s = await r.spawn(`echo first-line; ${awaitMarker(marker)}; exit 0`, { environment: env });
      await until(async () => (await r.poll(s.id)).outputPreview.includes('first-line'), 20_000, 'first line');
      await farRun(env, `L=$(echo '${env.tmpDir}/${s.id}/output.log' | sed "s/%i/$(id -u)/g"); ${replace}`);
      await until(async () => (await r.poll(s.id)).outputPreview.includes('much longer'), 20_000, 'the new log read');
      const text = (await r.poll(s.id)).outputPreview;
      expect(text).toContain(`${start} and a much longer text than before\n`);
      expect(text).toContain('the log on the far side was replaced');
      await farRun(env, `touch /tmp/${marker}`);
      expect(await r.wait(s.id, { timeoutMs: 20_000 })).toMatchObject({ exitCode: 0 });
      await farRun(env, `rm -f /tmp/${marker}`);
      await r.close();
    });
  }

  it('files planted in the session directory are not trusted: a FIFO kill, a symlink to /dev/zero as the log and a garbage killed file neither hang the poller nor end the session', async () => {
    const r = await open();
    const { env } = far();
    const marker = `planted-${uniqueSleep()}`;
    const s = await r.spawn(`echo armed; ${awaitMarker(marker)}; exit 0`, { environment: env });
    await until(async () => (await r.poll(s.id)).outputPreview.includes('armed'), 20_000, 'first line');
    await farRun(env, `D=$(echo '${env.tmpDir}/${s.id}' | sed "s/%i/$(id -u)/g"); mkfifo "$D/kill"; printf 'SIGKILL; junk\\n' > "$D/killed"; ln -sf /dev/zero "$D/output.log"`);
    // Polls go by with the planted files in place: the session still runs.
    expect(await r.wait(s.id, { timeoutMs: 1000 })).toMatchObject({ status: 'running', timedOut: true });
    await farRun(env, `touch /tmp/${marker}`);
    expect(await r.wait(s.id, { timeoutMs: 60_000 })).toMatchObject({ status: 'exited', reason: 'exited', exitCode: 0, signal: null });
    await farRun(env, `rm -f /tmp/${marker}`);
    await r.close();
  }, 90_000);

  it('kill stops the whole far-side tree, a setsid escapee and a background subshell included', async () => {
    const r = await open();
    const { env } = far();
    const [a, b, c] = [uniqueSleep(), uniqueSleep(), uniqueSleep()];
    // The escapee has a session of its own: the job's process group and session miss it.
    const s = await r.spawn(`setsid sleep ${a} & sh -c 'sleep ${b}' & sleep ${c}; wait`, { environment: env });
    await until(async () => (await farCount(env, `sleep ${a}`)) === 1 && (await farCount(env, `sleep ${b}`)) >= 1 && (await farCount(env, `sleep ${c}`)) === 1, 20_000, 'the tree');
    const k = await r.kill(s.id, { graceMs: 1000 });
    // The job's own shell ended on SIGTERM (whatever else needed SIGKILL).
    expect(k).toMatchObject({ outcome: 'killed', signal: 'SIGTERM' });
    expect(await r.poll(s.id)).toMatchObject({ status: 'exited', reason: 'killed', signal: 'SIGTERM' });
    expect(await farCount(env, `sleep ${a}`)).toBe(0);
    expect(await farCount(env, `sleep ${b}`)).toBe(0);
    expect(await farCount(env, `sleep ${c}`)).toBe(0);
    await r.close();
  });

  // Issue 19: the escapee's parent exits at once, so it is neither in the job's tree nor in
  // its session; it carries the session's mark in its environment, as the job's processes do.
  it('kill stops a setsid escapee whose parent exited before the kill, and counts it as signalled', async () => {
    const r = await open();
    const { env } = far();
    const [a, c] = [uniqueSleep(), uniqueSleep()];
    const s = await r.spawn(`sh -c 'setsid sleep ${a} &'; echo up; sleep ${c}`, { environment: env });
    await until(async () => (await r.poll(s.id)).outputPreview.includes('up') && (await farCount(env, `sleep ${a}`)) === 1, 20_000, 'the escapee');
    const [escapee] = await farPids(env, `sleep ${a}`);
    const k = await r.kill(s.id, { graceMs: 1000 });
    expect(k).toMatchObject({ outcome: 'killed', signal: 'SIGTERM', survivors: [] });
    expect(k.signalled).toContain(escapee);
    expect(await farCount(env, `sleep ${a}`)).toBe(0);
    expect(await farCount(env, `sleep ${c}`)).toBe(0);
    await r.close();
  });

  it("kill leaves a process started outside the job with a forged mark (another nonce, or the job's mark with more after it)", async () => {
    const r = await open();
    const { env } = far();
    const [c, x, y] = [uniqueSleep(), uniqueSleep(), uniqueSleep()];
    const s = await r.spawn(`echo up; sleep ${c}`, { environment: env });
    await until(async () => (await r.poll(s.id)).outputPreview.includes('up'), 20_000, 'the job');
    // The test reads the job's own mark (it is the same user) and starts, after the job and
    // outside it, one process with the job's session id and another nonce, and one whose
    // entry starts with the job's whole mark: neither entry is the job's.
    const D = `D=$(echo '${env.tmpDir}/${s.id}' | sed "s/%i/$(id -u)/g")`;
    await farRun(
      env,
      `${D}; M=$(cat "$D/mark")\n` +
        `PROCWARD_SESSION_ID=${s.id}:${'0'.repeat(32)} setsid sleep ${x} > /dev/null 2>&1 < /dev/null &\n` +
        `PROCWARD_SESSION_ID="$M"0 setsid sleep ${y} > /dev/null 2>&1 < /dev/null &`,
    );
    await until(async () => (await farCount(env, `sleep ${x}`)) === 1 && (await farCount(env, `sleep ${y}`)) === 1, 20_000, 'the forgers');
    const forgers = [...(await farPids(env, `sleep ${x}`)), ...(await farPids(env, `sleep ${y}`))];
    const k = await r.kill(s.id, { graceMs: 1000 });
    expect(k).toMatchObject({ outcome: 'killed', survivors: [] });
    expect(await farCount(env, `sleep ${c}`)).toBe(0);
    expect(await farCount(env, `sleep ${x}`)).toBe(1);
    expect(await farCount(env, `sleep ${y}`)).toBe(1);
    for (const p of forgers) expect(k.signalled).not.toContain(p);
    await farRun(env, `kill ${forgers.join(' ')}`);
    await r.close();
  });

  it('kill of a job that ignores SIGTERM escalates to SIGKILL after the grace period, and says SIGKILL ended it', async () => {
    const r = await open();
    const { env } = far();
    const n = uniqueSleep();
    const s = await r.spawn(`trap '' TERM; echo armed; sleep ${n}; sleep ${n}`, { environment: env });
    await until(async () => (await r.poll(s.id)).outputPreview.includes('armed'), 20_000, 'trap set');
    expect(await r.kill(s.id, { graceMs: 300 })).toMatchObject({ outcome: 'killed', signal: 'SIGKILL', escalated: true });
    expect(await r.poll(s.id)).toMatchObject({ status: 'exited', reason: 'killed', exitCode: null, signal: 'SIGKILL' });
    expect(await farCount(env, `sleep ${n}`)).toBe(0);
    await r.close();
  });

  // Another host kills while this one follows: the follower believes the kill's claim on the
  // far side (the wrapper usually dies with the job and writes no exit file; when it wrote
  // the trap's code, that is the end's status), so it records killed, never lost.
  for (const [how, job, graceMs, signal, escalated] of [
    ['traps SIGTERM and exits 0', (n: string) => `trap 'echo trapped; exit 0' TERM; echo armed; sleep ${n} & wait`, 10_000, 'SIGTERM', false],
    ['ignores SIGTERM (the kill escalates)', (n: string) => `trap '' TERM; echo armed; sleep ${n}; sleep ${n}`, 300, 'SIGKILL', true],
  ] as const) {
    it(`a host following a job that ${how} records it killed (the kill sent ${signal}) when another host kills it, never lost`, async () => {
      const state = tempDir();
      const { env } = far();
      const n = uniqueSleep();
      const follower = await ProcessRegistry.open({ stateDir: state, environments: { far: env }, sandbox: { pollIntervalMs: 50 } });
      opened.push(follower);
      const s = await follower.spawn(job(n), { environment: 'far' });
      await until(async () => (await follower.poll(s.id)).outputPreview.includes('armed'), 20_000, 'trap set');
      const followed = follower.wait(s.id, { timeoutMs: 120_000 });
      // A second host of the same state directory (the session is the follower's: foreign here).
      const killer = await ProcessRegistry.open({ stateDir: state, environments: { far: env }, sandbox: { pollIntervalMs: 50 } });
      opened.push(killer);
      expect(await killer.kill(s.id, { graceMs })).toMatchObject({ outcome: 'killed', killSignal: signal, escalated });
      // Issue 28, kind 4: `signal` only when a signal ended the job. The far-side kill takes
      // the wrapper with the job, so the trap's own status is seldom recorded: then the
      // kill's signal is all that is known; when it is, it is the job's exit code.
      const end = await followed;
      expect(end).toMatchObject({ status: 'exited', reason: 'killed', timedOut: false });
      const expected = escalated || end.exitCode === null ? { exitCode: null, signal } : { exitCode: 0, signal: null };
      expect({ exitCode: end.exitCode, signal: end.signal }).toEqual(expected);
      expect(await follower.poll(s.id)).toMatchObject({ reason: 'killed', ...expected });
      expect(await farCount(env, `sleep ${n}`)).toBe(0);
    }, 180_000);
  }

  it('a restarted host re-attaches through its own configuration of the name and reads on', async () => {
    const state = tempDir();
    const marker = `reattach-${uniqueSleep()}`;
    const { env, envSource } = far();
    const { line: s, host } = await startHost(
      state,
      `const s = await r.spawn('echo a; ${awaitMarker(marker)}; echo b; exit 4', { environment: 'far' }); console.log(JSON.stringify(s));`,
      `{ environments: { far: ((M) => ${envSource})(require(${JSON.stringify(`${ROOT}/dist/index.js`)})) } }`,
    );
    await crashHost(host);
    const next = await ProcessRegistry.open({ stateDir: state, environments: { far: env }, sandbox: { pollIntervalMs: 50 } });
    expect(await next.poll(s.id)).toMatchObject({ pidScope: 'sandbox', status: 'running' });
    await farRun(env, `touch /tmp/${marker}`);
    const w = await next.wait(s.id, { timeoutMs: 20_000 });
    expect(w).toMatchObject({ exitCode: 4, reason: 'exited', outputPreview: 'a\nb\n' });
    await farRun(env, `rm -f /tmp/${marker}`);
    await next.close();
  });
}
