// DESIGN sections 6 and 7: notifications after recovery. A watch event is delivered at most
// once across hosts (each line is matched once: the record's watchCursor), and at least once
// (a line printed while no host ran is matched by the next one); a live host's own entries
// are not overridden by a future-dated edit of the checkpoint.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ProcwardEvent, ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, crashHost, startHost, tempDir, until } from './support.js';

const WATCH = { watch: { cooldownMs: 0 } };
const settle = (ms = 150) => new Promise((r) => setTimeout(r, ms));
const lines = (events: ProcwardEvent[]) => events.filter((e) => e.type === 'watch').map((e) => (e as { line: string }).line);

/** A durable job that prints `FATAL one`, then `FATAL two` once `gate` exists, then sleeps. */
function gatedJob(gate: string): string {
  return `echo "FATAL one"; while [ ! -e ${gate} ]; do sleep 0.05; done; echo "FATAL two"; sleep 30`;
}

/** Drains until `count` watch events arrived (or 10 s passed), then once more: a duplicate shows up in the total. */
async function drainWatch(r: ProcessRegistry, count: number): Promise<string[]> {
  const got: string[] = [];
  await until(async () => {
    got.push(...lines(await r.drainNotifications()));
    return got.length >= count;
  }, 10_000, `${count} watch events`);
  await settle(300);
  got.push(...lines(await r.drainNotifications()));
  return got;
}

/** A third host drains no watch event of the job, then kills it. */
async function thirdHostDrainsNothing(state: string, id: string): Promise<void> {
  const c = await ProcessRegistry.open({ stateDir: state, ...WATCH });
  await settle(300);
  expect(lines(await c.drainNotifications())).toEqual([]);
  await c.kill(id, { graceMs: 0 });
  await c.close();
}

/**
 * A host process spawns `job` with `patterns`, drains until it has an event (it must be
 * `FATAL one`), closes and is gone. Returns the job's summary.
 */
async function firstHostDrains(state: string, job: string, patterns: string[]): Promise<{ s: { id: string; pid: number } }> {
  const body = `const s = await r.spawn(${JSON.stringify(job)}, { watchPatterns: ${JSON.stringify(patterns)} });
let got = [];
while (got.length === 0) { await new Promise((res) => setTimeout(res, 50)); got = await r.drainNotifications(); }
await r.close();
console.log(JSON.stringify({ s, got: got.map((e) => e.line) }));`;
  const { line, host } = await startHost(state, body, JSON.stringify(WATCH));
  cleanupGroup(line.s.pid);
  expect(line.got).toEqual(['FATAL one']);
  await crashHost(host);
  return line;
}

async function checkpointHas(state: string, text: string): Promise<void> {
  await until(() => existsSync(join(state, 'checkpoint.json')) && readFileSync(join(state, 'checkpoint.json'), 'utf8').includes(text), 5000, `checkpoint with ${text}`);
}

describe('watch events after recovery of a running durable job', () => {
  it('an event the first host drained is not delivered again; a later line is delivered once by the next host, and by no third', async () => {
    const state = tempDir();
    const gate = join(state, 'gate');
    const line = await firstHostDrains(state, gatedJob(gate), ['FATAL']);
    const b = await ProcessRegistry.open({ stateDir: state, ...WATCH });
    expect((await b.poll(line.s.id)).status).toBe('running');
    expect(lines(await b.drainNotifications())).toEqual([]);
    writeFileSync(gate, '');
    expect(await drainWatch(b, 1)).toEqual(['FATAL two']);
    await b.close();
    await thirdHostDrainsNothing(state, line.s.id);
  });

  it('an event still queued when the host closes is delivered once by the next host', async () => {
    const state = tempDir();
    // A durable job does not keep Node alive: the interval does, until the host closes.
    const body = `const alive = setInterval(() => {}, 1000);
const seen = new Promise((res) => r.once('watch', res));
const s = await r.spawn('echo "FATAL one"; sleep 30', { watchPatterns: ['FATAL'] });
await seen;
await r.close();
clearInterval(alive);
console.log(JSON.stringify({ s }));`;
    const { line, host } = await startHost(state, body, JSON.stringify(WATCH));
    cleanupGroup(line.s.pid);
    await crashHost(host);
    const b = await ProcessRegistry.open({ stateDir: state, ...WATCH });
    expect((await b.poll(line.s.id)).status).toBe('running');
    expect(await drainWatch(b, 1)).toEqual(['FATAL one']);
    await b.kill(line.s.id, { graceMs: 0 });
    await b.close();
  });

  it('after a crash: the queued event once, and a line printed while no host ran once', async () => {
    const state = tempDir();
    const gate = join(state, 'gate');
    const body = `const s = await r.spawn(${JSON.stringify(gatedJob(gate))}, { watchPatterns: ['FATAL'] });
console.log(JSON.stringify({ s }));`;
    const { line, host } = await startHost(state, body, JSON.stringify(WATCH));
    cleanupGroup(line.s.pid);
    // The event is queued in the checkpoint (with the cursor past its line); then the host dies.
    await checkpointHas(state, '"FATAL one"');
    await crashHost(host);
    writeFileSync(gate, '');
    await until(() => readFileSync(join(state, 'sessions', line.s.id, 'output.log'), 'utf8').includes('FATAL two'), 5000, 'second line in the log');
    const b = await ProcessRegistry.open({ stateDir: state, ...WATCH });
    expect((await drainWatch(b, 2)).sort()).toEqual(['FATAL one', 'FATAL two']);
    await b.close();
    await thirdHostDrainsNothing(state, line.s.id);
  });
});

describe('watch cursor at a line start', () => {
  it('after invalid UTF-8 (counted as U+FFFD by the first host), the next host matches whole lines only', async () => {
    const state = tempDir();
    const gate = join(state, 'gate');
    const job = `printf '\\377\\377\\377 noise\\nFATAL one\\n'; while [ ! -e ${gate} ]; do sleep 0.05; done; echo "FATAL two"; echo "FATAL three"; sleep 30`;
    const line = await firstHostDrains(state, job, ['FATAL', 'two']);
    writeFileSync(gate, '');
    const log = join(state, 'sessions', line.s.id, 'output.log');
    await until(() => readFileSync(log, 'utf8').includes('FATAL three'), 5000, 'the last line in the log');
    const b = await ProcessRegistry.open({ stateDir: state, ...WATCH });
    const got = await drainWatch(b, 1);
    expect(got).toContain('FATAL three');
    // No event holds the tail of a line (the cursor fell inside "FATAL two").
    const whole = readFileSync(log, 'utf8').split('\n');
    for (const l of got) expect(whole).toContain(l);
    await b.kill(line.s.id, { graceMs: 0 });
    await b.close();
  });
});

describe("a live host's own entries", () => {
  it('a future-dated edit that turns its running job exited is overwritten by its next save', async () => {
    const state = tempDir();
    const a = await ProcessRegistry.open({ stateDir: state });
    const s = await a.spawn('sleep 30');
    cleanupGroup(s.pid);
    await checkpointHas(state, s.id);
    const path = join(state, 'checkpoint.json');
    const doc = JSON.parse(readFileSync(path, 'utf8'));
    const entry = doc.sessions.find((e: { id: string }) => e.id === s.id);
    Object.assign(entry, { status: 'exited', reason: 'exited', exitCode: 0, exitedAt: Date.now(), updatedAt: Date.now() + 1e9 });
    writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
    // Any save of this host merges its records with the edited file.
    const t = await a.spawn('true');
    await a.wait(t.id, { timeoutMs: 5000 });
    await until(() => readFileSync(path, 'utf8').includes(t.id), 5000, 'the next save');
    const after = JSON.parse(readFileSync(path, 'utf8')).sessions.find((e: { id: string }) => e.id === s.id);
    expect(after).toMatchObject({ status: 'running', exitCode: null, reason: null });
    expect(after.updatedAt).toBeLessThan(Date.now() + 1e6);
    await a.kill(s.id, { graceMs: 0 });
    await a.close();
  });
});
