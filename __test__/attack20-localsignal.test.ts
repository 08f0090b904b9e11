// Attack round 20, the local signal path against a forged checkpoint record: a running,
// non-durable local entry naming, with its true start time, a process that does not lead
// its group (a member of someone else's job). kill refuses it (not_session_leader); signal
// sent the signal to that process alone and reported it as sent to a process group.
// Every real non-durable job leads its own session and group (it starts with setsid).
//
// The stranger is this test's own: a `sleep` in a detached shell's group.
//
// Fixed in signalPlan (ts/session/signal.ts): a non-durable POSIX root must lead its own
// process group before signalJob (the core sends a non-leader's signal to it alone, which a
// durable job's shell needs), else `not_session_leader`.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { code, entry, stateWith } from './statedir-support.js';
import { cleanupGroup, isAlive, until } from './support.js';

function identityOf(pid: number) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] as string;
  return { pid, startTime, bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() };
}

describe('attack 20: a forged local record naming a process that leads no group', () => {
  it('signal refuses it as kill does (KILL_REFUSED), and the process is not signalled', async () => {
    const outer = spawn('sh', ['-c', 'sleep 300 & echo $!; wait'], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
    cleanupGroup(outer.pid);
    const pid = Number(await new Promise<string>((res) => outer.stdout?.once('data', (d) => res(String(d).trim()))));
    await until(() => isAlive(pid), 5000, 'the stranger');
    const e = entry({ status: 'running', exitedAt: null, exitCode: null, reason: null, terminationSource: null, pid, identity: identityOf(pid) });
    const r = await ProcessRegistry.open({ stateDir: stateWith([e]) });
    try {
      expect((await r.poll(e.id as string)).status).toBe('running');
      expect(await code(r.kill(e.id as string, { graceMs: 0 }))).toBe('KILL_REFUSED');
      expect(await code(r.signal(e.id as string, 'SIGTERM'))).toBe('KILL_REFUSED');
      await new Promise((res) => setTimeout(res, 200));
      expect(isAlive(pid)).toBe(true);
    } finally {
      await r.close();
    }
  }, 60_000);
});
