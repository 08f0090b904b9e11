// Builds the napi addon (procward.<platform>.node + index.js/index.d.ts) and the durable
// job supervisor, and puts the supervisor beside the addon where the facade looks for it.
//
//   node scripts/build-native.mjs [--target <rust triple>] [--zig]
//
// Without --target it builds for this machine. --zig cross-compiles (napi's zig support for
// the addon, cargo-zigbuild for the supervisor), as the CI workflow does for Linux arm64/musl.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const targetAt = args.indexOf('--target');
const target = targetAt >= 0 ? args[targetAt + 1] : undefined;
const zig = args.includes('--zig');
const windowsTarget = target ? target.includes('windows') : process.platform === 'win32';

const run = (cmd, cmdArgs) => execFileSync(cmd, cmdArgs, { stdio: 'inherit', shell: process.platform === 'win32' });
run('npx', ['napi', 'build', '--platform', '--release', '--no-const-enum', ...(target ? ['--target', target] : []), ...(zig ? ['-x'] : [])]);
run('cargo', [zig ? 'zigbuild' : 'build', '--release', '-p', 'procward-core', '--bin', 'procward-supervise', ...(target ? ['--target', target] : [])]);
const exe = windowsTarget ? 'procward-supervise.exe' : 'procward-supervise';
const targetDir = process.env.CARGO_TARGET_DIR ?? 'target';
copyFileSync(join(targetDir, ...(target ? [target] : []), 'release', exe), exe);
if (!windowsTarget) chmodSync(exe, 0o755);
