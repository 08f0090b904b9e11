// DESIGN section 4, durable jobs: the log on disk is capped by rotation, the rotated part
// stays readable, and what the cap dropped is reported, never silent.
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, crashHost, isAlive, startHost, tempDir, until } from './support.js';

// About 109 KB: 20 000 numbered lines, then `done`.
const NUMBERS = 'for i in $(seq 0 19); do seq $((i*1000+1)) $((i*1000+1000)); done; echo done';

describe('durable log cap', () => {
  it('rotates at half of logMaxBytes, keeps one rotated part (0600) and reports what it dropped', async () => {
    const stateDir = tempDir();
    const r = await ProcessRegistry.open({ stateDir, logMaxBytes: 32 * 1024 });
    try {
      const s = await r.spawn(NUMBERS);
      cleanupGroup(s.pid);
      expect((await r.wait(s.id, { timeoutMs: 10_000 })).exitCode).toBe(0);
      const dir = join(stateDir, 'sessions', s.id);
      const files = readdirSync(dir).filter((f) => f.startsWith('output') || f.startsWith('log'));
      expect(files.sort()).toEqual(['log-state.json', 'output.log', 'output.log.1']);
      for (const f of files) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
      const onDisk = statSync(join(dir, 'output.log')).size + statSync(join(dir, 'output.log.1')).size;
      // Two parts of 16 KiB, each cut at the first line break past the limit.
      expect(onDisk).toBeLessThanOrEqual(32 * 1024 + 16);

      const head = await r.readLog(s.id, { offset: 0, limit: 1 });
      expect(head.droppedLines).toBeGreaterThan(0);
      // Parts end on whole lines, so the first kept line is the one after the dropped ones.
      expect(head.lines).toEqual([String((head.droppedLines as number) + 1)]);
      expect(head.totalLines + (head.droppedLines as number)).toBe(20_001);
      expect(head.droppedChars + onDisk).toBe(108_894 + 'done\n'.length);
      expect(head.showing).toMatch(/^lines 1-1 of \d+ kept \(lines (\d+)-\1 of the 20001 the job wrote; earlier output dropped by the log cap \(logMaxBytes\): (\d+) lines \(1-\2\), \d+ bytes, gone\)$/);
      const tail = await r.readLog(s.id, { limit: 2 });
      expect(tail.lines).toEqual(['20000', 'done']);

      // The LLM tool says it too, in snake_case.
      const viaTool = (await handleToolCall(r, 'process', { action: 'log', session_id: s.id, offset: 0, limit: 1 })) as Record<string, unknown>;
      expect(String(viaTool.note)).toContain('dropped by the log cap');
      expect(String(viaTool.note)).toContain(`${head.droppedLines} lines`);
    } finally {
      await r.close();
    }
  });

  it('a second host reads the same rotated log from the state directory', async () => {
    const stateDir = tempDir();
    const a = await ProcessRegistry.open({ stateDir, logMaxBytes: 32 * 1024 });
    const s = await a.spawn(NUMBERS);
    cleanupGroup(s.pid);
    await a.wait(s.id, { timeoutMs: 10_000 });
    const fromA = await a.readLog(s.id, { offset: 0, limit: 5 });
    await a.close();
    const b = await ProcessRegistry.open({ stateDir });
    try {
      const fromB = await b.readLog(s.id, { offset: 0, limit: 5 });
      expect(fromB).toMatchObject({ lines: fromA.lines, totalLines: fromA.totalLines, droppedChars: fromA.droppedChars, droppedLines: fromA.droppedLines });
    } finally {
      await b.close();
    }
  });

  it('a log below the cap reports nothing dropped', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn(NUMBERS);
      cleanupGroup(s.pid);
      await r.wait(s.id, { timeoutMs: 10_000 });
      const log = await r.readLog(s.id, { offset: 0, limit: 1 });
      expect(log).toMatchObject({ lines: ['1'], totalLines: 20_001, droppedChars: 0, droppedLines: 0, showing: 'lines 1-1 of 20001' });
    } finally {
      await r.close();
    }
  });

  it('logMaxBytes below 4096 or not an integer is refused when the registry opens', async () => {
    await expect(ProcessRegistry.open({ stateDir: tempDir(), logMaxBytes: 100 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(ProcessRegistry.open({ stateDir: tempDir(), logMaxBytes: 1.5e4 + 0.5 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('durable jobs and grandchildren', () => {
  it('the end is published from the exit file while a grandchild holds the output; its late output reaches the log', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      // The grandchild writes only once the test opens its gate: the wait cannot have waited for it.
      const gate = join(tempDir(), 'gate');
      const s = await r.spawn(`echo started; (while [ ! -e ${gate} ]; do sleep 0.05; done; echo late) & exit 4`);
      cleanupGroup(s.pid);
      const w = await r.wait(s.id, { timeoutMs: 10_000 });
      expect(w).toMatchObject({ status: 'exited', exitCode: 4, signal: null, reason: 'exited' });
      expect((await r.readLog(s.id)).lines).not.toContain('late');
      writeFileSync(gate, '');
      await until(async () => (await r.readLog(s.id)).lines.includes('late'), 5000, 'late output in the log');
      expect((await r.readLog(s.id)).lines).toEqual(['started', 'late']);
    } finally {
      await r.close();
    }
  });

  it('a host that recovers such a job sees it ended although its supervisor still runs', async () => {
    const stateDir = tempDir();
    const a = await ProcessRegistry.open({ stateDir });
    const s = await a.spawn('echo started; sleep 30 & exit 5');
    cleanupGroup(s.pid);
    await a.wait(s.id, { timeoutMs: 10_000 });
    await a.close();
    const b = await ProcessRegistry.open({ stateDir });
    try {
      expect(await b.poll(s.id)).toMatchObject({ status: 'exited', exitCode: 5, reason: 'exited' });
    } finally {
      await b.close();
    }
  });
});

describe('recovered durable jobs', () => {
  it('keep the time their job ended, not the time a later host noticed', async () => {
    const stateDir = tempDir();
    const a = await ProcessRegistry.open({ stateDir });
    // It ends after its host is gone, and is noticed by the next host 1.5 s later.
    const s = await a.spawn('sleep 0.3; exit 0');
    cleanupGroup(s.pid);
    await a.close();
    await new Promise((res) => setTimeout(res, 1800));
    const b = await ProcessRegistry.open({ stateDir });
    try {
      const p = await b.poll(s.id);
      expect(p).toMatchObject({ status: 'exited', exitCode: 0 });
      expect(p.uptimeMs).toBeGreaterThanOrEqual(300);
      expect(p.uptimeMs).toBeLessThan(1200);
    } finally {
      await b.close();
    }
  });
});

describe('recovered durable jobs ending while a host waits', () => {
  it('get the exit code from their exit file, every one of them', async () => {
    const stateDir = tempDir();
    const a = await ProcessRegistry.open({ stateDir });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const s = await a.spawn(`sleep 0.${3 + (i % 7)}; exit 42`);
      cleanupGroup(s.pid);
      ids.push(s.id);
    }
    await a.close();
    // A second host adopts them all while they run, and waits for each.
    const b = await ProcessRegistry.open({ stateDir });
    // A busy event loop widens the window between reading the exit file and the verdict.
    const busy = setInterval(() => {
      const t = Date.now();
      while (Date.now() - t < 3);
    }, 1);
    try {
      const ends = await Promise.all(ids.map((id) => b.wait(id, { timeoutMs: 10_000 })));
      clearInterval(busy);
      expect(ends.filter((w) => w.exitCode !== 42 || w.reason !== 'exited').map((w) => `${w.id} ${w.reason} ${w.exitCode}`)).toEqual([]);
    } finally {
      clearInterval(busy);
      await b.close();
    }
  });
});

describe('ends nobody recorded', () => {
  it('a supervisor SIGKILLed alone makes the end unknown (lost), never its own signal', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      const s = await r.spawn('sleep 5; echo after');
      cleanupGroup(s.pid);
      await new Promise((res) => setTimeout(res, 300));
      process.kill(s.supervisorPid as number, 'SIGKILL');
      // The job runs on (its own PID drives the session) until its echo meets the closed pipe.
      const w = await r.wait(s.id, { timeoutMs: 30_000 });
      expect(w).toMatchObject({ status: 'exited', exitCode: null, signal: null, reason: 'lost' });
      expect(isAlive(s.pid as number)).toBe(false);
      // Nothing of it is left for a kill.
      const k = await r.kill(s.id, { graceMs: 200 });
      expect(k).toMatchObject({ outcome: 'already_exited', signalled: [] });
    } finally {
      await r.close();
    }
  });

  it('a pipe-mode job of a host that died before its checkpoint write can be killed by the next host', async () => {
    const stateDir = tempDir();
    const { line, host } = await startHost(stateDir, `const s = await r.spawn('sleep 30', { durable: false }); console.log(JSON.stringify(s));`);
    cleanupGroup(line.pid);
    await crashHost(host);
    const b = await ProcessRegistry.open({ stateDir });
    try {
      expect(await b.poll(line.id)).toMatchObject({ status: 'running', pid: line.pid });
      const k = await b.kill(line.id, { graceMs: 200 });
      expect(k).toMatchObject({ outcome: 'killed' });
      expect(k.signalled).toContain(line.pid);
    } finally {
      await b.close();
    }
  });

  it('a damaged checkpoint loses no pipe-mode ends: session.json keeps them', async () => {
    const stateDir = tempDir();
    const a = await ProcessRegistry.open({ stateDir });
    const ids: string[] = [];
    for (const code of [3, 6]) {
      const s = await a.spawn(`exit ${code}`, { durable: false });
      cleanupGroup(s.pid);
      await a.wait(s.id, { timeoutMs: 10_000 });
      ids.push(s.id);
    }
    await a.close();
    writeFileSync(join(stateDir, 'checkpoint.json'), '{"version":1,"sessions":[{"id":"garbage"}]}');
    const b = await ProcessRegistry.open({ stateDir });
    try {
      expect((await b.poll(ids[0] as string)).exitCode).toBe(3);
      expect((await b.poll(ids[1] as string)).exitCode).toBe(6);
    } finally {
      await b.close();
    }
  });
});

describe('third breaker', () => {
  it('a durable job that ended on its own just before a kill stays exited, with its code', async () => {
    const r = await ProcessRegistry.open({ stateDir: tempDir() });
    try {
      // A grandchild that keeps writing holds the supervisor in its drain window (120 ms)
      // after the job's exit 3: the session is still running when the kill comes.
      const s = await r.spawn('(while :; do echo tick; sleep 0.01; done) & exit 3');
      cleanupGroup(s.pid);
      await new Promise((res) => setTimeout(res, 50));
      expect((await r.poll(s.id)).status).toBe('running');
      const k = await r.kill(s.id, { graceMs: 500 });
      expect(k.outcome).toBe('already_exited');
      expect(await r.wait(s.id, { timeoutMs: 5000 })).toMatchObject({ reason: 'exited', exitCode: 3 });
    } finally {
      await r.close();
    }
  });

  it('a deleted checkpoint.json: the previous generation is read with a diagnostic, and session.json gives the newer end', async () => {
    const stateDir = tempDir();
    const a = await ProcessRegistry.open({ stateDir });
    const s = await a.spawn('sleep 0.3; exit 3', { durable: false });
    cleanupGroup(s.pid);
    await new Promise((res) => setTimeout(res, 250));
    await a.wait(s.id, { timeoutMs: 5000 });
    await a.close();
    // A previous generation that still lists the job running, and no current one.
    writeFileSync(join(stateDir, 'checkpoint.prev.json'), JSON.stringify({ version: 1, sessions: [{ ...JSON.parse(readFileSync(join(stateDir, 'checkpoint.json'), 'utf8')).sessions[0], status: 'running', exitCode: null, reason: null, exitedAt: null, updatedAt: 1 }] }));
    rmSync(join(stateDir, 'checkpoint.json'));
    const b = await ProcessRegistry.open({ stateDir });
    try {
      expect(b.diagnostics.join('\n')).toMatch(/missing; read the previous generation/);
      expect(await b.poll(s.id)).toMatchObject({ status: 'exited', exitCode: 3, reason: 'exited' });
    } finally {
      await b.close();
    }
  });

  /** A `sleep 30` started in pipe mode by a host that closed since, opened by a new host. */
  async function recoveredPipeJob(stateDir: string) {
    const a = await ProcessRegistry.open({ stateDir });
    const s = await a.spawn('sleep 30', { durable: false });
    cleanupGroup(s.pid);
    await a.close();
    return { id: s.id, b: await ProcessRegistry.open({ stateDir }) };
  }

  it('two kills at once of a recovered pipe-mode job: it ends killed', async () => {
    const stateDir = tempDir();
    for (let round = 0; round < 5; round++) {
      const { id, b } = await recoveredPipeJob(stateDir);
      try {
        const kills = await Promise.all([b.kill(id, { graceMs: 200 }), b.kill(id, { graceMs: 200 })]);
        expect(kills.map((k) => k.outcome)).toContain('killed');
        const p = await b.poll(id);
        expect(p.reason).toBe('killed');
        // No exit file for a pipe-mode job: the signal is the one the kill sent, or unknown
        // when the other kill's look at the process table recorded the end first.
        expect(['SIGTERM', null]).toContain(p.signal);
      } finally {
        await b.close();
      }
    }
  });

  it('one kill of a recovered pipe-mode job records the signal it sent', async () => {
    const { id, b } = await recoveredPipeJob(tempDir());
    try {
      expect((await b.kill(id, { graceMs: 200 })).outcome).toBe('killed');
      expect(await b.poll(id)).toMatchObject({ reason: 'killed', signal: 'SIGTERM' });
    } finally {
      await b.close();
    }
  });
});
