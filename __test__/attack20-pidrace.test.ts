// Attack round 20, what held: the job's PID reused between the far side's snapshot and its
// signal. The signal script is instrumented right after its snapshot: the job's process is
// killed, reaped, and a decoy started under the same PID (ns_last_pid); the signal must
// find the decoy is not the job (another start time) and send nothing, to it or to the
// job's orphaned child.
//
// It runs in a PID namespace of its own (`unshare --pid --fork --mount-proc`, root only):
// PIDs there are handed out in order, so the decoy gets the job's PID, and nothing outside
// the namespace could be reached whatever the script did.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from './support.js';

/** Run inside the namespace: prints one JSON line with what happened. */
const SCRIPT = (dist: string) => `
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localShell, ProcessRegistry } from ${JSON.stringify(dist)};
const far = mkdtempSync(join(tmpdir(), 'pw-race-'));
const mark = join(far, 'decoy');
const plain = localShell({ tmpDir: far });
// Right after the snapshot: the job's process is killed and reaped, and a decoy takes its PID.
const race = [
  'kill -KILL "$JP"',
  'i=0; while [ -e "/proc/$JP" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done',
  'echo $((JP - 1)) > /proc/sys/kernel/ns_last_pid',
  'sleep 300 > /dev/null 2>&1 &',
  'echo "$! $JP" > ' + JSON.stringify(mark),
].join('\\n');
const env = { description: plain.description, tmpDir: far, close: () => plain.close(),
  exec: (s, o) => plain.exec(s.includes('kill -s') ? s.replace('\\nFIRST=1\\n', '\\n' + race + '\\nFIRST=1\\n') : s, o) };
const r = await ProcessRegistry.open({ environments: { far: env }, sandbox: { pollIntervalMs: 60000 } });
const s = await r.spawn('echo ready; sleep 300 & wait', { environment: 'far' });
while (!(await r.readLog(s.id)).text.includes('ready')) await new Promise((res) => setTimeout(res, 20));
await new Promise((res) => setTimeout(res, 200));
const code = await r.signal(s.id, 'SIGTERM').then((x) => 'sent:' + JSON.stringify(x), (e) => e.code);
const [decoy, job] = existsSync(mark) ? readFileSync(mark, 'utf8').trim().split(' ').map(Number) : [0, -1];
await new Promise((res) => setTimeout(res, 300));
const alive = (pid) => { try { return !/\\) Z /.test(readFileSync('/proc/' + pid + '/stat', 'utf8')); } catch { return false; } };
console.log(JSON.stringify({ code, reused: decoy === job, decoyAlive: alive(decoy), instrumented: existsSync(mark) }));
process.exit(0);
`;

describe('attack 20 holds: a PID reused between the far side`s snapshot and its signal', () => {
  it('the decoy under the job`s PID is not signalled, and the call says the session ended', async (ctx) => {
    const file = join(tempDir(), 'race.mjs');
    writeFileSync(file, SCRIPT(join(ROOT, 'dist', 'index.mjs')));
    const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, file], { timeout: 120_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
    // Without the right to make a PID namespace (not root), there is nothing to run.
    if (/unshare failed|Operation not permitted|not found/i.test(out.stderr) && !out.stdout) ctx.skip();
    expect(out.code, out.stderr).toBe(0);
    const res = JSON.parse(out.stdout.trim().split('\n').pop() as string);
    expect(res).toMatchObject({ instrumented: true, reused: true, decoyAlive: true, code: 'SESSION_EXITED' });
  }, 150_000);
});
