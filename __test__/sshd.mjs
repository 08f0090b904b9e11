// A throwaway sshd on 127.0.0.1 for the SSH environment tests: its own host key, one
// authorized test key, its own process group (so a test can drop every connection at once).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { descendants } from '../dist/index.mjs';
import { userInfo } from 'node:os';

export const SSHD = '/usr/sbin/sshd';

function freePort() {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function listening(port, ms = 5000) {
  const { connect } = await import('node:net');
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`sshd did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Prepares (not starts) a throwaway sshd with its keys in `dir`. */
export async function testSshd(dir) {
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const hostKey = join(dir, 'host_ed25519');
  const identityFile = join(dir, 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', identityFile]);
  const authorized = join(dir, 'authorized_keys');
  execFileSync('cp', [`${identityFile}.pub`, authorized]);
  const port = await freePort();
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `AuthorizedKeysFile ${authorized}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin prohibit-password',
      'StrictModes no',
      'UsePAM no',
      'LogLevel ERROR',
    ].join('\n'),
  );
  let child;
  const server = {
    port,
    user: userInfo().username,
    identityFile,
    options: ['StrictHostKeyChecking=no', 'UserKnownHostsFile=/dev/null', 'LogLevel=ERROR'],
    async start() {
      child = spawn(SSHD, ['-D', '-e', '-f', config], { detached: true, stdio: 'ignore' });
      await listening(port);
    },
    async stop() {
      if (!child?.pid) return;
      const exited = new Promise((r) => child?.once('exit', r));
      // Each connection is served by a child of sshd in a session of its own: kill those
      // (found as sshd's descendants, by PID) as well as the listener's group.
      for (const d of descendants(child.pid)) {
        try {
          process.kill(d.pid, 'SIGKILL');
        } catch {}
      }
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
      await exited;
      child = undefined;
    },
  };
  return server;
}

export const haveSshd = existsSync(SSHD);
