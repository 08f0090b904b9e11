// Builds the napi addon (procward.<platform>.node + index.js/index.d.ts) and the durable
// job supervisor, and puts the supervisor beside the addon where the facade looks for it.
import { execFileSync } from 'node:child_process';
import { copyFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';

const run = (cmd, args) => execFileSync(cmd, args, { stdio: 'inherit', shell: process.platform === 'win32' });
run('npx', ['napi', 'build', '--platform', '--release', '--no-const-enum']);
run('cargo', ['build', '--release', '-p', 'procward-core', '--bin', 'procward-supervise']);
const exe = process.platform === 'win32' ? 'procward-supervise.exe' : 'procward-supervise';
copyFileSync(join(process.env.CARGO_TARGET_DIR ?? 'target', 'release', exe), exe);
chmodSync(exe, 0o755);
