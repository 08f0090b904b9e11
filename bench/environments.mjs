// Poll cost of a sandbox session over SSH, with connection multiplexing (ControlMaster)
// and without (a new handshake per poll), against a throwaway sshd on 127.0.0.1.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SshEnvironment } from '../dist/index.mjs';
import { fmt, median, ratio, table } from './lib.mjs';

export async function sshPollBench({ rounds = 20 } = {}) {
  const { haveSshd, testSshd } = await import('../__test__/sshd.mjs');
  if (!haveSshd) return '### SSH poll cost\n\nskipped: no /usr/sbin/sshd on this machine\n';
  const dir = mkdtempSync(join(tmpdir(), 'procward-bench-ssh-'));
  const sshd = await testSshd(dir);
  await sshd.start();
  const desc = { kind: 'ssh', host: '127.0.0.1', port: sshd.port, user: sshd.user, identityFile: sshd.identityFile, options: sshd.options, tmpDir: dir };
  const script = 'E=$(cat /nonexistent/exit 2>/dev/null || echo -); echo "0 $E"';
  const times = {};
  try {
    for (const multiplex of [true, false]) {
      const env = new SshEnvironment(desc, { multiplex });
      await env.exec(script);
      const t = [];
      for (let i = 0; i < rounds; i++) {
        const t0 = performance.now();
        await env.exec(script);
        t.push(performance.now() - t0);
      }
      await env.close();
      times[multiplex] = median(t);
    }
  } finally {
    await sshd.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return table(`SSH poll cost per sandbox session (one round trip) — median ms of ${rounds}`, ['with multiplexing (ControlMaster)', 'new connection per poll', 'speed-up'], [
    [fmt(times.true), fmt(times.false), ratio(times.false, times.true)],
  ]);
}
