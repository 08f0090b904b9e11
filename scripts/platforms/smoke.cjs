// Smoke run of the native binding on a platform under emulation (Wine, qemu), in plain
// CommonJS so it needs nothing but the binding and the Node that runs it.
//
//   node smoke.cjs <path to the .node file> [--spawn=works|supported|unsupported]
//
// Checks, one line each ("ok NAME detail" or "FAIL NAME detail"):
//   probe, identity, verdict  of this process (must answer: alive, start time, "current");
//   descendants               of this process (must answer with an array);
//   spawn                     --spawn=works (default): `echo` runs, its output arrives and
//                             it exits 0; then a 3-level tree (sh -> sh -> sleep) is tree
//                             killed and the report names no survivors.
//                             --spawn=supported (Windows, cmd.exe): `echo` runs and its
//                             `exit /b 7` arrives as exitCode 7, with exitStatus() and
//                             tailText() agreeing; a line written to a stdin pipe and
//                             closeStdin() reach `set /p`; a cwd that does not exist is
//                             ENOENT. Tree kill is checked with --kill.
//   tree-kill (--kill, with --spawn=supported): a 3-level tree (cmd -> cmd -> ping) is tree
//                             killed (grace 500 ms; the graceful step goes through
//                             --console-helper=<procward-supervise.exe> when given): the
//                             report names no survivors and every member is gone.
//                             --spawn=unsupported: spawn and killTree must throw, and their
//                             errors are printed as they read (the platform is not written).
// Exits 1 when any check fails, so the calling script can count it.
'use strict';

const [bindingPath, ...flags] = process.argv.slice(2);
const spawnMode = (flags.find((f) => f.startsWith('--spawn=')) || '--spawn=works').slice(8);
const killCheck = flags.includes('--kill');
const consoleHelper = (flags.find((f) => f.startsWith('--console-helper=')) || '').slice(17) || undefined;
const native = require(require('node:path').resolve(bindingPath));
let failed = 0;

function report(name, ok, detail) {
  if (!ok) failed++;
  console.log(`${ok ? 'ok' : 'FAIL'} ${name} ${detail}`);
}

function check(name, fn) {
  try {
    const [ok, detail] = fn();
    report(name, ok, detail);
  } catch (e) {
    report(name, false, `threw ${e?.message}`);
  }
}

// Spawns a job and resolves with its exit event, its output and the job; `started`, when
// given, gets the job right after the spawn (to write to its stdin).
function runJob(options, timeoutMs, started) {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`no exit within ${timeoutMs} ms`)), timeoutMs);
    const job = native.spawn(options, (event) => {
      if (event.kind === 'output' && event.data) output += event.data.toString('utf8');
      if (event.kind === 'exit') {
        clearTimeout(timer);
        resolve({ event, output, job });
      }
    });
    started?.(job);
  });
}

function killTree(identity, graceMs) {
  return new Promise((resolve, reject) => {
    native.killTree(identity, { graceMs, consoleHelper }, (err, rep) => (err ? reject(err) : resolve(rep)));
  });
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

async function spawnWorks() {
  const echo = await runJob({ command: 'echo procward-smoke' }, 30000);
  report(
    'spawn',
    echo.output.includes('procward-smoke') && echo.event.exitCode === 0,
    `output ${JSON.stringify(echo.output.trim())} exitCode ${echo.event.exitCode}`,
  );
  let leaderPid = 0;
  const tree = native.spawn({ command: 'sh -c "sleep 300 & sleep 300" & sleep 300' }, () => {});
  leaderPid = tree.pid;
  let members = [];
  for (let i = 0; i < 100 && members.length < 4; i++) {
    await sleep(100);
    members = native.descendants(leaderPid);
  }
  report('descendants-of-job', members.length >= 4, `${members.length} descendants of ${leaderPid}`);
  const rep = await killTree(native.identity(leaderPid), 2000);
  const survivors = rep.survivors || [];
  const alive = native.probe([leaderPid, ...members.map((m) => m.pid)]).filter((p) => p.alive);
  report('tree-kill', survivors.length === 0 && alive.length === 0, `report ${JSON.stringify(rep)}, alive after ${alive.length}`);
}

async function spawnSupported() {
  const echo = await runJob({ command: 'echo procward-smoke & exit /b 7' }, 30000);
  report(
    'spawn',
    echo.output.includes('procward-smoke') && echo.event.exitCode === 7,
    `output ${JSON.stringify(echo.output.trim())} exitCode ${echo.event.exitCode}`,
  );
  // Delayed expansion (/v:on): !X! is read after set /p ran.
  const stdin = await runJob({ command: 'set /p X= & echo got [!X!]', shellArgs: ['/d', '/v:on', '/s', '/c'], stdin: true }, 30000, (job) => {
    job.write('typed-line\r\n');
    job.closeStdin();
  });
  const job = stdin.job;
  const status = job.exitStatus();
  report(
    'stdin',
    stdin.output.includes('got [typed-line]') && stdin.event.exitCode === 0,
    `output ${JSON.stringify(stdin.output.trim())} exitCode ${stdin.event.exitCode}`,
  );
  report(
    'exit-status',
    status?.exitCode === 0 && job.tailText().includes('got [typed-line]'),
    `exitStatus ${JSON.stringify(status)} tail ${JSON.stringify(job.tailText().trim())}`,
  );
  try {
    native.spawn({ command: 'echo never', cwd: 'C:\\procward-no-such-dir' }, () => {});
    report('missing-cwd', false, 'did not throw');
  } catch (e) {
    report('missing-cwd', /^ENOENT/.test(String(e.message)), `throws: ${e.message}`);
  }
}

async function treeKillWindows() {
  const tree = native.spawn({ command: 'cmd.exe /d /s /c "ping -n 120 127.0.0.1 >NUL"' }, () => {});
  let members = [];
  for (let i = 0; i < 100 && members.length < 2; i++) {
    await sleep(100);
    members = native.descendants(tree.pid);
  }
  report('descendants-of-job', members.length >= 2, `${members.length} descendants of ${tree.pid}`);
  const started = Date.now();
  const rep = await killTree(tree.identity, 500);
  const took = Date.now() - started;
  const alive = native.probe([tree.pid, ...members.map((m) => m.pid)]).filter((p) => p.alive);
  report('tree-kill', rep.survivors.length === 0 && alive.length === 0, `in ${took} ms, report ${JSON.stringify(rep)}, alive after ${alive.length}`);
}

async function spawnUnsupported() {
  for (const [name, call] of [
    ['spawn', () => native.spawn({ command: 'echo procward-smoke' }, () => {})],
    ['tree-kill', () => native.killTree(native.identity(process.pid), { graceMs: 0 }, () => {})],
  ]) {
    try {
      call();
      report(name, false, 'did not throw, expected unsupported');
    } catch (e) {
      report(name, /unsupported|not written/i.test(String(e.message)), `throws: ${e.message}`);
    }
  }
}

async function main() {
  console.log(`platform ${process.platform} ${process.arch}, node ${process.version}`);
  check('probe', () => {
    const [p] = native.probe([process.pid]);
    return [p?.alive === true, JSON.stringify(p)];
  });
  check('identity', () => {
    const id = native.identity(process.pid);
    return [id?.pid === process.pid && Number(id.startTime) > 0, JSON.stringify(id)];
  });
  check('verdict', () => {
    const v = native.verdict(native.identity(process.pid));
    return [v === 'current', v];
  });
  check('descendants', () => {
    const d = native.descendants(process.pid);
    return [Array.isArray(d), `${d.length} descendants`];
  });
  if (spawnMode === 'unsupported') await spawnUnsupported();
  else if (spawnMode === 'supported') {
    await spawnSupported();
    if (killCheck) await treeKillWindows();
  }
  else await spawnWorks();
  console.log(`smoke: ${failed === 0 ? 'all checks passed' : `${failed} checks failed`}`);
  process.exitCode = failed === 0 ? 0 : 1;
}

main().catch((e) => {
  console.log(`FAIL smoke threw ${e?.stack}`);
  process.exitCode = 1;
});
