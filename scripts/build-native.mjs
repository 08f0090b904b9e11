// Builds the napi addon (procward.<platform>.node + index.js/index.d.ts) and the durable
// job supervisor, and puts the supervisor beside the addon where the facade looks for it.
//
//   node scripts/build-native.mjs [--target <rust triple>] [--zig]
//
// Without --target it builds for this machine. --zig cross-compiles (napi's zig support, which
// runs cargo-zigbuild), as the CI workflow does for Linux arm64/musl.
//
// One cargo invocation builds both: napi's `cargo build` with `-p procward-node -p procward-core
// --lib --bin procward-supervise` passed through after `--`. Two invocations (napi's, then a
// `cargo build -p procward-core --bin procward-supervise` without `--target`) compiled every
// shared crate twice: napi always passes `--target` (the host's triple by default), which
// puts its build in target/<triple>/ apart from target/release/, and features resolve per
// invocation (even with the same --target, a supervisor-only build recompiled memchr,
// aho-corasick, vte, vt100, regex-automata, regex and the core). A clean `npm run build` took
// 3 min 44 s with two invocations and 2 min 43 s with one (this 2-core machine, under load).
// The supervisor is therefore at target/<triple>/release/ for every build.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const targetAt = args.indexOf('--target');
const target = targetAt >= 0 ? args[targetAt + 1] : undefined;
const zig = args.includes('--zig');
const windowsTarget = target ? target.includes('windows') : process.platform === 'win32';

/** The triple napi builds for without `--target`: rustc's host, as `napi build` reads it. */
const hostTriple = () => /^host: (\S+)$/m.exec(execFileSync(process.env.RUSTC || 'rustc', ['-vV'], { encoding: 'utf8' }))[1];

const run = (cmd, cmdArgs) => execFileSync(cmd, cmdArgs, { stdio: 'inherit', shell: process.platform === 'win32' });
const cargoArgs = ['-p', 'procward-node', '-p', 'procward-core', '--lib', '--bin', 'procward-supervise'];
run('npx', ['napi', 'build', '--platform', '--release', '--no-const-enum', ...(target ? ['--target', target] : []), ...(zig ? ['-x'] : []), '--', ...cargoArgs]);
const exe = windowsTarget ? 'procward-supervise.exe' : 'procward-supervise';
const targetDir = process.env.CARGO_TARGET_DIR ?? 'target';
// Through a new file and a rename: a supervisor of a durable job still running keeps the
// old binary (copying over a running executable fails with ETXTBSY).
copyFileSync(join(targetDir, target ?? hostTriple(), 'release', exe), `${exe}.new`);
if (!windowsTarget) chmodSync(`${exe}.new`, 0o755);
renameSync(`${exe}.new`, exe);
