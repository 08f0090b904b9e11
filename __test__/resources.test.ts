// DESIGN sections 4-5: file descriptors are not leaked, and running out of them fails one
// spawn at a time with a clear EMFILE error. Each case runs in its own host process.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support.js';

function host(body: string, shellPrefix = ''): Promise<any> {
  const index = join(ROOT, 'dist', 'index.js');
  const script = `const { ProcessRegistry } = require(${JSON.stringify(index)});
const fds = () => require('fs').readdirSync('/proc/self/fd').length;
(async () => {
${body}
})().catch((e) => { console.log(JSON.stringify({ crash: String(e && e.stack || e) })); });`;
  const cmd = shellPrefix ? '/bin/bash' : process.execPath;
  const args = shellPrefix ? ['-c', `${shellPrefix} exec "$0" -e "$1"`, process.execPath, script] : ['-e', script];
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { timeout: 60_000 }, (err, stdout) => {
      if (err) reject(new Error(`${err.message}\n${stdout}`));
      else resolve(JSON.parse(stdout.trim().split('\n').pop() as string));
    }),
  );
}

describe('file descriptors', () => {
  it('300 sequential and 150 concurrent sessions leave no descriptor behind', async () => {
    const res = await host(`
  const r = await ProcessRegistry.open();
  // The first job starts the reactor, which holds its epoll and waker descriptors for the
  // registry's life: count from after it.
  await r.wait((await r.spawn('exit 0')).id);
  const before = fds();
  for (let i = 0; i < 300; i++) { const s = await r.spawn('exit 0'); await r.wait(s.id); }
  const all = await Promise.all(Array.from({ length: 150 }, () => r.spawn('sleep 0.3', { stdin: true })));
  for (const s of all) await r.wait(s.id);
  await r.close();
  if (global.gc) global.gc();
  await new Promise((res) => setTimeout(res, 300));
  console.log(JSON.stringify({ before, after: fds() }));`);
    expect(res.crash).toBeUndefined();
    // Input sides are closed when a session ends; a couple of descriptors may be Node's own.
    expect(res.after - res.before).toBeLessThanOrEqual(2);
  }, 60_000);

  it('spawns past the descriptor limit fail one by one with EMFILE, and the host recovers', async () => {
    const res = await host(
      `
  const r = await ProcessRegistry.open();
  const errors = []; const started = [];
  for (let i = 0; i < 80; i++) {
    try { started.push(await r.spawn('sleep 5')); } catch (e) { errors.push(e.code); }
  }
  for (const s of started) await r.kill(s.id, { graceMs: 200 });
  await new Promise((res) => setTimeout(res, 200));
  let after = null;
  try { const s = await r.spawn('echo again'); after = (await r.wait(s.id)).outputPreview; } catch (e) { after = 'failed: ' + e.code; }
  await r.close();
  console.log(JSON.stringify({ started: started.length, errors, after }));`,
      'ulimit -n 64;',
    );
    expect(res.crash).toBeUndefined();
    expect(res.started).toBeGreaterThan(0);
    expect(res.errors.length).toBeGreaterThan(0);
    expect(new Set(res.errors)).toEqual(new Set(['EMFILE']));
    expect(res.after).toBe('again\n');
  }, 60_000);
});
