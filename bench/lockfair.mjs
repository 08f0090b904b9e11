// Fairness of the checkpoint lock (issue 12, finding 10): three hosts on one state
// directory, each taking `checkpoint.lock`, writing a checkpoint-sized file (temp + fsync
// + rename) and releasing, in a loop with no pause. Counts LOCK_TIMEOUTs (a wait over the
// timeout) and the worst wait per host, for two policies:
//
// - `poll`: the previous lock (tryLockFile, then sleep 1, 2, 4 … 20 ms and try again);
// - `kernel`: the current one (`lockFile`: a blocking flock on a native thread, woken by the
//   kernel when the holder releases).
//
// Usage: node bench/lockfair.mjs [seconds per policy, default 20] [timeout ms, default 10000]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const seconds = Number(process.argv[2] ?? 20);
const timeoutMs = Number(process.argv[3] ?? 10_000);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const host = (dir, policy) => `
const { closeSync, fsyncSync, openSync, renameSync, writeSync } = require('node:fs');
const native = require(${JSON.stringify(join(root, 'index.js'))});
const lockPath = ${JSON.stringify(join(dir, 'checkpoint.lock'))};
const doc = 'x'.repeat(200 * 1024);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function pollLock() {
  const end = Date.now() + ${timeoutMs};
  for (let delay = 1; ; delay = Math.min(delay * 2, 20)) {
    const lock = native.tryLockFile(lockPath);
    if (lock) return lock;
    if (Date.now() > end) return null;
    await sleep(delay);
  }
}
const kernelLock = () => new Promise((resolve, reject) => native.lockFile(lockPath, ${timeoutMs}, (err, lock) => (err ? reject(err) : resolve(lock ?? null))));
(async () => {
  let writes = 0, timeouts = 0, worst = 0;
  const end = Date.now() + ${seconds * 1000};
  while (Date.now() < end) {
    const t = Date.now();
    const lock = await (${JSON.stringify(policy)} === 'poll' ? pollLock() : kernelLock());
    worst = Math.max(worst, Date.now() - t);
    if (!lock) { timeouts++; continue; }
    const temp = ${JSON.stringify(join(dir, 'checkpoint.json.'))} + process.pid;
    const fd = openSync(temp, 'w', 0o600);
    writeSync(fd, doc);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temp, ${JSON.stringify(join(dir, 'checkpoint.json'))});
    lock.release();
    writes++;
    // What a host does between two writes (the event loop runs): nothing here, the worst case.
    await new Promise((r) => setImmediate(r));
  }
  console.log(JSON.stringify({ writes, timeouts, worstMs: worst }));
})();`;

function run(dir, policy) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', host(dir, policy)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`host exited with ${code}`))));
  });
}

for (const policy of ['poll', 'kernel']) {
  const dir = mkdtempSync(join(tmpdir(), 'procward-lockfair-'));
  try {
    const hosts = await Promise.all([0, 1, 2].map(() => run(dir, policy)));
    const line = hosts.map((h, i) => `host ${i + 1}: ${h.writes} writes, ${h.timeouts} LOCK_TIMEOUT, worst wait ${h.worstMs} ms`).join('; ');
    console.log(`${policy.padEnd(6)} ${seconds} s: ${line}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
