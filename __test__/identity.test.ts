// DESIGN section 2 (process identity) and section 3 (trees and kill), through the JS API.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { descendants, identity, killTree, probe, verdict } from '../dist/index.mjs';
import { cleanupGroup, isAlive, until } from './support.js';

function startGroup(script: string) {
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' });
  cleanupGroup(child.pid);
  return child;
}

describe('process identity', () => {
  it('reads pid, start ticks and boot id of a live process, and null for a missing one', () => {
    const me = identity(process.pid);
    expect(me?.pid).toBe(process.pid);
    expect(me?.startTime).toMatch(/^\d+$/);
    expect(me?.bootId).toMatch(/^[0-9a-f-]{36}$/);
    expect(identity(2 ** 22 + 12345)).toBeNull();
  });

  it('a recorded identity with its start time one tick off is replaced, and tree kill signals nothing', async () => {
    const child = startGroup('sleep 30');
    const id = identity(child.pid as number);
    expect(id).not.toBeNull();
    expect(verdict(id!)).toBe('current');
    const shifted = { ...id!, startTime: String(BigInt(id!.startTime) + 1n) };
    expect(verdict(shifted)).toBe('replaced');
    const report = await killTree(shifted, { graceMs: 100 });
    expect(report.refusedReused).toEqual([child.pid]);
    expect(report.signalled).toEqual([]);
    expect(isAlive(child.pid as number)).toBe(true);
  });

  it('another boot id is replaced, never current', () => {
    const me = identity(process.pid)!;
    expect(verdict({ ...me, bootId: '00000000-0000-0000-0000-000000000000' })).toBe('replaced');
  });

  it('a zombie is gone even though the PID still exists', async () => {
    // Not reaped until the exit event is delivered to this (busy) event loop.
    const child = spawn('sh', ['-c', 'exit 0'], { stdio: 'ignore' });
    const pid = child.pid as number;
    const id = identity(pid);
    await until(() => probe([pid])[0]?.state === 'Z' || probe([pid])[0]?.exists === false, 5000, 'exit');
    if (id) expect(verdict(id)).toBe('gone');
    expect(isAlive(pid)).toBe(false);
  });

  it('a malformed start time is a clear EINVAL error', () => {
    expect(() => verdict({ pid: 1, startTime: 'soon', bootId: 'x' })).toThrow(/startTime/);
  });
});

describe('probe and descendants', () => {
  it('probes many PIDs in one call with state, ppid and pgid', () => {
    const [me, missing] = probe([process.pid, 2 ** 22 + 54321]);
    expect(me).toMatchObject({ pid: process.pid, alive: true, exists: true, ppid: process.ppid });
    expect(missing).toMatchObject({ alive: false, exists: false });
  });

  it('finds children and grandchildren with identities', async () => {
    const child = startGroup('sh -c "sleep 30" & sleep 30 & wait');
    await until(() => descendants(child.pid as number).filter((d) => d.alive).length >= 3, 5000, 'tree');
    const tree = descendants(child.pid as number);
    for (const d of tree) expect(d.identity.pid).toBe(d.pid);
    expect(tree.filter((d) => d.ppid === child.pid).length).toBe(2);
  });
});

describe('tree kill', () => {
  it('kills the leader, its group and a member that escaped with setsid', async () => {
    const child = startGroup('setsid sleep 45 & sleep 30 & wait');
    const ready = () => descendants(child.pid as number).filter((d) => d.alive);
    await until(() => ready().length >= 2 && ready().some((d) => d.pgid !== child.pid), 5000, 'tree with an escaped member');
    const members = descendants(child.pid as number);
    const escaped = members.find((d) => d.pgid !== child.pid);
    expect(escaped).toBeDefined();
    const report = await killTree(identity(child.pid as number)!, { graceMs: 500 });
    expect(report.survivors).toEqual([]);
    for (const m of members) expect(isAlive(m.pid)).toBe(false);
    cleanupGroup(escaped?.pgid);
  });

  it('rejects a negative grace period', async () => {
    await expect(killTree(identity(process.pid)!, { graceMs: -1 })).rejects.toThrow(/graceMs/);
  });
});
