// Support of the platform-neutral behaviour suite (run by `node --test`, natively and under
// Wine): the built package, temporary directories, polling, host and CLI processes, and
// cleanup of what a test started (by PID, never by name).
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isWindows } from './commands.mjs';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(ROOT, 'dist', 'cli.mjs');
export const INDEX_CJS = join(ROOT, 'dist', 'index.js');
export const pkg = await import(new URL('../../dist/index.mjs', import.meta.url).href);

const dirs = [];
const pids = [];

/** A fresh temporary directory, removed by `cleanup`. */
export function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), 'procward-platform-'));
  dirs.push(dir);
  return dir;
}

/** Kills this PID at the end (its process group too on Unix: jobs lead their own). */
export function cleanupPid(pid) {
  if (pid) pids.push(pid);
}

/** Kills session `s`'s job at the end, and a durable one's supervisor with its process group (even when `pid` is null). */
export function cleanupSession(s) {
  cleanupPid(s.pid);
  cleanupPid(s.supervisorPid);
}

/** Kills what the tests started and removes their directories (call from `after`). */
export async function cleanup() {
  for (const pid of pids.splice(0)) {
    try {
      if (!isWindows) process.kill(-pid, 'SIGKILL');
    } catch {}
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  for (const dir of dirs.splice(0)) {
    // Windows keeps a file of a process that is still ending; a leftover temp dir is harmless.
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
    } catch {}
  }
}

/** Alive means present and not a zombie (PID 1 may reap orphans late). */
export function isAlive(pid) {
  return pkg.probe([pid])[0]?.alive === true;
}

/** Resolves once `cond()` holds; throws naming `what` after `ms` (a hang bound, not a timing check). */
export async function until(cond, ms = 20_000, what = 'condition') {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Runs the built CLI in the Node that runs the suite: a fresh host per call. */
export function cli(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { timeout: 60_000, windowsHide: true }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Runs `body` in a separate Node process with `r`, a registry opened on `stateDir` from the
 * CommonJS build; `body` prints one JSON line, then the process closes the registry and
 * exits. Resolves with the parsed line.
 */
export function inOtherHost(stateDir, body) {
  const script = `const { ProcessRegistry } = require(${JSON.stringify(INDEX_CJS)});
ProcessRegistry.open({ stateDir: ${JSON.stringify(stateDir)} }).then(async (r) => {
${body}
await r.close();
});`;
  return new Promise((resolve, reject) => {
    const host = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
    let out = '';
    let err = '';
    host.stdout.on('data', (d) => {
      out += d;
    });
    host.stderr.on('data', (d) => {
      err += d;
    });
    host.once('error', reject);
    host.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || !line) reject(new Error(`host exited ${code}: ${out}${err}`));
      else resolve(JSON.parse(line));
    });
  });
}

/**
 * Call inside a `describe`: opens one in-memory registry (with `options`) before its tests
 * and closes it after them, then cleans up. `ctx.registry` is the registry.
 */
export function describeRegistry(options = {}) {
  const ctx = {};
  before(async () => {
    ctx.registry = await pkg.ProcessRegistry.open(options);
  });
  after(async () => {
    await ctx.registry.close();
    await cleanup();
  });
  return ctx;
}

/**
 * Asserts that session `s` names its job's own process: a positive `pid`, alive, and not
 * its supervisor's (`supervisorPid`, durable sessions only). Under qemu-user (the arm64 run)
 * a supervisor that read its own identity by absolute path left `pid` null (issue 15).
 */
export function assertOwnPid(s) {
  assert.equal(typeof s.pid, 'number', `the session names its job's PID: ${JSON.stringify(s)}`);
  assert.ok(s.pid > 0, `pid ${s.pid}`);
  assert.notEqual(s.pid, s.supervisorPid, "the job's PID, not its supervisor's");
  assert.equal(isAlive(s.pid), true, `the job ${s.pid} is alive`);
}
