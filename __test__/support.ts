// Shared test support: temporary state directories, cleanup of the processes a test
// started (by PID or by the process group it created, never by name), and a CLI runner.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, afterEach, beforeEach, expect } from 'vitest';
import { ProcessRegistry, probe, type RegistryOptions, type SessionSummary, type SpawnOptions } from '../dist/index.mjs';

export const ROOT = join(__dirname, '..');
export const CLI = join(ROOT, 'dist', 'cli.mjs');

const dirs: string[] = [];
const groups: number[] = [];
const pids: number[] = [];

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'procward-test-'));
  dirs.push(dir);
  return dir;
}

/** Kill this process group at the end of the test (a group the test created, or the group this PID is in). */
export function cleanupGroup(pgid: number | null | undefined): void {
  if (pgid) groups.push(pgid);
}

/** Kill this PID at the end of the test (a process the test started). */
export function cleanupPid(pid: number | null | undefined): void {
  if (pid) pids.push(pid);
}

afterEach(async () => {
  // A durable session's `pid` is its job's, in the group its supervisor leads: the group the
  // PID is in is killed too (never this test process's own group).
  const own = probe([process.pid])[0]?.pgid;
  const targets = groups.splice(0).flatMap((g) => [g, probe([g])[0]?.pgid ?? g]);
  for (const g of new Set(targets)) {
    if (g <= 1 || g === own) continue;
    try {
      process.kill(-g, 'SIGKILL');
    } catch {}
  }
  for (const p of pids.splice(0)) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {}
  }
  // A far-side wrapper the test just left (its job ended, or was killed above) may still write
  // its exit file into a directory being removed: ENOTEMPTY is tried again (Node's retries).
  // Under load the wrapper can start late and write for a while: tried for up to 30 s.
  for (const d of dirs.splice(0)) await removeDir(d);
});

async function removeDir(d: string): Promise<void> {
  const end = Date.now() + 30_000;
  for (;;) {
    try {
      rmSync(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOTEMPTY' || Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

// Jobs the tests killed by process group leave empty cgroups (when the host may create
// them); remove those after each file.
afterAll(() => {
  createRequire(__filename)('../index.js').sweepCgroups();
});

/** Alive means present and not a zombie (this machine's PID 1 reaps orphans slowly). */
export function isAlive(pid: number): boolean {
  return probe([pid])[0]?.alive === true;
}

/**
 * Waits for `cond`, checking every 10 ms. `ms` is what the condition normally needs; the
 * bound is at least 20 s, because the suite must hold beside CPU hogs (load 8 on 2 cores
 * stretches a 1 s step several times). It returns as soon as the condition holds, so the
 * floor costs time only when a test is failing anyway.
 */
export async function until(cond: () => boolean | Promise<boolean>, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + Math.max(ms, 20_000);
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as a separate process (a fresh host each time). */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Starts a separate host process that opens a registry on `stateDir`, runs `body` (with
 * `r` the registry; it must print one JSON line), and then stays alive until killed.
 * Resolves with the parsed line and the host's PID.
 */
export async function startHost(stateDir: string, body: string, registryOptions = '{}'): Promise<{ line: any; host: ChildProcess }> {
  const index = join(ROOT, 'dist', 'index.js');
  const script = `const { ProcessRegistry } = require(${JSON.stringify(index)});
ProcessRegistry.open({ stateDir: ${JSON.stringify(stateDir)}, ...${registryOptions} }).then(async (r) => {
${body}
setInterval(() => {}, 1000);
});`;
  const host = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanupPid(host.pid);
  let buf = '';
  const line = await new Promise<string>((resolve, reject) => {
    host.stdout!.on('data', (d) => {
      buf += String(d);
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(buf.slice(0, nl));
    });
    host.once('exit', (code) => reject(new Error(`host exited with ${code} before printing`)));
  });
  return { line: JSON.parse(line), host };
}

/** SIGKILLs a host process the test started and waits for it to be gone. */
export async function crashHost(host: ChildProcess): Promise<void> {
  if (host.exitCode === null && host.signalCode === null) {
    const gone = new Promise((r) => host.once('exit', r));
    host.kill('SIGKILL');
    await gone;
  }
}

/**
 * A fresh registry for each test (closed after it), and `start`, which spawns a job and
 * kills its process group after the test.
 */
export function perTestRegistry(options: RegistryOptions = {}) {
  const ctx = {} as { registry: ProcessRegistry; start(command: string, opts?: SpawnOptions): Promise<SessionSummary> };
  beforeEach(async () => {
    ctx.registry = await ProcessRegistry.open(options);
  });
  afterEach(async () => {
    await ctx.registry.close();
  });
  ctx.start = async (command, opts = {}) => {
    const s = await ctx.registry.spawn(command, opts);
    cleanupGroup(s.pid);
    return s;
  };
  return ctx;
}

/** A plausible finished checkpoint entry written by a host that is gone (a dead writer); `fields` override. */
export function deadHostEntry(id: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Date.now();
  return {
    id,
    command: 'sleep 1',
    cwd: '/',
    pid: null,
    identity: null,
    startedAt: now - 1000,
    exitedAt: now - 500,
    status: 'exited',
    exitCode: 0,
    signal: null,
    reason: 'exited',
    terminationSource: 'process',
    durable: false,
    logPath: null,
    exitPath: null,
    writer: { pid: 999_999, startTime: '1', bootId: 'not-this-boot' },
    updatedAt: now - 500,
    ...fields,
  };
}

/** Starts `command` through the built CLI (`start --json`, a fresh host) and returns its session; its group is cleaned up after the test. */
export async function started(state: string, command: string, ...flags: string[]): Promise<{ id: string; pid: number }> {
  const r = await cli(['start', '--state-dir', state, '--json', ...flags, '--', command]);
  expect(r.code, r.stderr).toBe(0);
  const s = JSON.parse(r.stdout);
  cleanupGroup(s.pid);
  return s;
}
