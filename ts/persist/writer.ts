/**
 * Who writes checkpoint entries: this host process (its identity) and which registry in it.
 * An entry written by another host that is still alive belongs to that host.
 */
import { randomBytes } from 'node:crypto';
import { identity as readIdentity, verdict, type Identity } from '../processes.js';
import type { SessionRecord } from '../session/record.js';
import { registryOpen } from './hostlock.js';

/** Registries open in this process, by instance id (two may share a state directory). */
const openInstances = new Set<string>();

export type WriterIdentity = Identity & { instance: string };

/** This registry's writer identity (registered as open until `release`). */
export function newWriter(): WriterIdentity {
  const self = readIdentity(process.pid) ?? { pid: process.pid, startTime: '0', bootId: 'unknown' };
  const writer = { ...self, instance: randomBytes(4).toString('hex') };
  openInstances.add(writer.instance);
  return writer;
}

/** Marks the writer's registry closed. */
export function releaseWriter(writer: WriterIdentity): void {
  openInstances.delete(writer.instance);
}

/**
 * Whether `record` was written by another registry that is still open: one in this process
 * that has not closed, or another host that is alive and, when it left a lock file in
 * `stateDir` (see `hostlock.ts`), still holds it. A host that closed its registry and lives
 * on owns nothing any more.
 */
export function isForeign(record: SessionRecord, me: WriterIdentity, stateDir: string | null): boolean {
  const w = record.writer;
  if (w.pid === me.pid && w.startTime === me.startTime && w.bootId === me.bootId) {
    return w.instance !== undefined && w.instance !== me.instance && openInstances.has(w.instance);
  }
  if (w.bootId === 'unknown') return false;
  const v = verdict(w);
  if (v === 'gone' || v === 'replaced') return false;
  return stateDir === null || v === 'unknown' || registryOpen(stateDir, w) !== false;
}
