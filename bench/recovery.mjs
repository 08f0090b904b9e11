// Recovery benchmark (DESIGN section 6): opening a registry whose checkpoint lists 1000
// sessions, half alive and half gone, against reading and parsing the same file alone.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { identity, ProcessRegistry } from '../dist/index.mjs';
import { fmt, killGroup, median, ratio, startTree, table } from './lib.mjs';

export async function recoveryBench({ rounds = 5 } = {}) {
  const tree = await startTree('i=0; while [ $i -lt 500 ]; do sleep 600 & i=$((i+1)); done; wait', 500);
  const dir = mkdtempSync(join(tmpdir(), 'procward-recovery-'));
  try {
    const writer = { pid: 1, startTime: '1', bootId: identity(process.pid).bootId };
    const now = Date.now();
    const entry = (i, id, pid) => ({
      id: `proc_${i.toString(16).padStart(12, '0')}`,
      command: `sleep 600 # ${i}`,
      cwd: '/tmp',
      pid,
      identity: id,
      startedAt: now - 1000,
      exitedAt: null,
      status: 'running',
      exitCode: null,
      signal: null,
      reason: null,
      terminationSource: null,
      durable: false,
      logPath: null,
      exitPath: null,
      writer,
      updatedAt: now,
    });
    const sessions = [];
    for (const [i, p] of tree.members.slice(0, 500).entries()) sessions.push(entry(i, p.identity, p.pid));
    for (let i = 500; i < 1000; i++) sessions.push(entry(i, { pid: 4_000_000 + i, startTime: '1', bootId: writer.bootId }, 4_000_000 + i));
    const text = JSON.stringify({ version: 1, sessions });
    const parse = [];
    const open = [];
    for (let r = 0; r < rounds; r++) {
      const state = join(dir, `s${r}`);
      rmSync(state, { recursive: true, force: true });
      const reg0 = await ProcessRegistry.open({ stateDir: state });
      await reg0.close();
      writeFileSync(join(state, 'checkpoint.json'), text);
      let t = performance.now();
      JSON.parse(await readFile(join(state, 'checkpoint.json'), 'utf8'));
      parse.push(performance.now() - t);
      t = performance.now();
      const reg = await ProcessRegistry.open({ stateDir: state });
      open.push(performance.now() - t);
      const running = (await reg.list()).filter((s) => s.status === 'running').length;
      if (running !== 500) throw new Error(`expected 500 running after recovery, got ${running}`);
      await reg.close();
    }
    const [p, o] = [median(parse), median(open)];
    return table(`Recovery of a 1000-entry checkpoint (500 alive, 500 gone) — median ms of ${rounds}`, ['read + JSON.parse', 'ProcessRegistry.open (validate, verdicts, write back)', 'ratio'], [
      [fmt(p), fmt(o), ratio(o, p)],
    ]);
  } finally {
    killGroup(tree.pgid);
    rmSync(dir, { recursive: true, force: true });
  }
}
