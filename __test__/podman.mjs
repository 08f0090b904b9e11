// A throwaway container engine for the container environment tests: podman's Docker-
// compatible API service on a private socket, with its own storage, run and tmp
// directories in one temp dir (nothing shared with a system podman), runc as the runtime
// (podman's default crun refuses this machine's hybrid cgroup layout) and cgroupfs. The
// image is a busybox root filesystem (Debian's busybox-static) packed with tar and loaded
// with `import`: no registry is needed. Every name is unique to the run; containers are
// removed through the engine and the service is stopped by the PID this file started.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, copyFileSync, chmodSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, delimiter } from 'node:path';
import { randomBytes } from 'node:crypto';

/** The first `name` on PATH (or under /usr/sbin, /sbin), or null. */
export function which(name) {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/sbin', '/usr/local/bin'];
  for (const d of dirs) {
    if (d && existsSync(join(d, name))) return join(d, name);
  }
  return null;
}

export const PODMAN = which('podman');
export const RUNC = which('runc');
export const DOCKER = which('docker');
export const BUSYBOX = ['/usr/bin/busybox', '/bin/busybox'].find((p) => existsSync(p)) ?? null;

/** What the container tests need and is missing here (empty when they can run). */
export const missingForEngine = [
  !PODMAN && 'podman',
  !RUNC && 'runc',
  !BUSYBOX && 'busybox (busybox-static)',
  process.platform !== 'linux' && 'Linux',
].filter(Boolean);

function run(file, args, opts = {}) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024, ...opts }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${file} ${args.join(' ')}: ${err.message}\n${stderr}`));
      else resolve(String(stdout).trim());
    });
  });
}

/** A busybox root filesystem as a tarball in `dir` (statically linked: no libc needed). */
async function busyboxTarball(dir) {
  const root = join(dir, 'rootfs');
  for (const d of ['bin', 'tmp', 'proc', 'sys', 'dev', 'etc', 'root']) mkdirSync(join(root, d), { recursive: true });
  copyFileSync(BUSYBOX, join(root, 'bin', 'busybox'));
  chmodSync(join(root, 'bin', 'busybox'), 0o755);
  const applets = (await run(BUSYBOX, ['--list'])).split('\n').filter((a) => a && a !== 'busybox');
  for (const a of applets) symlinkSync('busybox', join(root, 'bin', a));
  chmodSync(join(root, 'tmp'), 0o1777);
  writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n');
  writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
  const tar = join(dir, 'rootfs.tar');
  await run('tar', ['-C', root, '-cf', tar, '.']);
  rmSync(root, { recursive: true, force: true });
  return tar;
}

async function listening(sock, child, ms = 60_000) {
  const end = Date.now() + ms;
  while (!existsSync(sock)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`podman system service exited (${child.exitCode ?? child.signalCode})`);
    if (Date.now() > end) throw new Error(`podman did not create ${sock}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts podman's API service on a private socket and imports the busybox image. Returns
 * the engine: `url` for DOCKER_HOST / `--host` / `--url`, `image`, `container()` to start a
 * uniquely named container (removed by `stop`), and `stop()`.
 */
export async function startPodman() {
  if (missingForEngine.length > 0) throw new Error(`missing: ${missingForEngine.join(', ')}`);
  const dir = mkdtempSync(join(tmpdir(), 'procward-podman-'));
  const tag = randomBytes(4).toString('hex');
  const sock = join(dir, 'api.sock');
  const url = `unix://${sock}`;
  const global = [
    '--root', join(dir, 'root'),
    '--runroot', join(dir, 'run'),
    '--tmpdir', join(dir, 'tmp'),
    '--storage-driver', 'vfs',
    '--runtime', RUNC,
    '--cgroup-manager', 'cgroupfs',
    '--events-backend', 'file',
  ];
  const log = join(dir, 'service.log');
  writeFileSync(log, '');
  const { openSync } = await import('node:fs');
  const fd = openSync(log, 'a');
  const service = spawn(PODMAN, [...global, 'system', 'service', '--time=0', url], { detached: true, stdio: ['ignore', fd, fd] });
  await listening(sock, service);
  const containers = [];
  // The docker CLI when there is one (the engine most users name), else podman's own client.
  const client = DOCKER ? { engine: DOCKER, host: url } : { engine: PODMAN, host: url };
  const cli = (args) => run(client.engine, [...(client.engine === PODMAN ? ['--url', url] : ['--host', url]), ...args]);
  const image = `procward-test-busybox:${tag}`;
  await cli(['import', await busyboxTarball(dir), image]);

  const engine = {
    dir,
    url,
    image,
    /** The client binary the tests drive (docker when installed, else podman) and its host option. */
    client,
    /** The podman binary, for tests of the `podman` engine name. */
    podman: PODMAN,
    cli,
    /** Starts a new container that sleeps until stopped; returns its unique name. */
    async container() {
      const name = `procward-test-${tag}-${containers.length}`;
      containers.push(name);
      // runc's default limits exceed this machine's hard limits; no network is needed.
      await cli(['run', '-d', '--name', name, '--network', 'none', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024', image, 'sleep', '2147483647']);
      return name;
    },
    async stop() {
      for (const name of containers) await cli(['rm', '-f', name]).catch(() => undefined);
      await cli(['rmi', '-f', image]).catch(() => undefined);
      if (service.exitCode === null && service.signalCode === null) {
        const exited = new Promise((r) => service.once('exit', r));
        process.kill(service.pid, 'SIGTERM');
        const timer = setTimeout(() => process.kill(service.pid, 'SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      // conmon monitors (one per container or exec session) daemonise away from the service;
      // those still running for this run's storage (their argv names this run's directory) go too.
      for (const pid of monitorsOf(dir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
  return engine;
}

/** PIDs of processes whose command line names `dir` (this run's conmon monitors). */
function monitorsOf(dir) {
  const pids = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, 'utf8');
      if (argv.startsWith('/usr/bin/conmon') || argv.includes('conmon\0')) {
        if (argv.includes(dir)) pids.push(Number(e));
      }
    } catch {}
  }
  return pids;
}
