// Mass kill under load (issue 12, finding 11): N jobs that ignore SIGTERM, each in its own
// session, killed all at once with graceMs 200 (so every kill escalates to SIGKILL), beside
// two CPU hogs. Counts the kills that report survivors:
//
// - `fixed`: killTree with the settle window fixed at 500 ms (settleMaxMs 0, the old rule);
// - `adaptive`: killTree with the default window, which stretches up to 5 s while the
//   survivors are still dying (SIGKILL pending or exit under way);
// - `registry`: ProcessRegistry.kill of N sessions at once (KILL_SURVIVORS rejections).
//
// Usage: node bench/masskill.mjs [N, default 500]
import { spawn } from 'node:child_process';
import { identity, killTree, probe, ProcessRegistry } from '../dist/index.mjs';

const N = Number(process.argv[2] ?? 500);
const JOB = "trap '' TERM; while :; do sleep 1; done";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function lowLevel(settleMaxMs) {
  const jobs = Array.from({ length: N }, () => spawn('sh', ['-c', JOB], { detached: true, stdio: 'ignore' }));
  await sleep(1500);
  const ids = jobs.map((j) => identity(j.pid)).filter(Boolean);
  const t0 = Date.now();
  const reports = await Promise.all(ids.map((id) => killTree(id, { graceMs: 200, ...(settleMaxMs !== undefined && { settleMaxMs }) })));
  const totalMs = Date.now() - t0;
  await sleep(3000);
  const aliveAfter3s = ids.filter((id) => probe([id.pid])[0]?.alive).length;
  for (const j of jobs) {
    try {
      process.kill(-j.pid, 'SIGKILL');
    } catch {}
  }
  await sleep(1000);
  return { kills: ids.length, withSurvivors: reports.filter((r) => r.survivors.length > 0).length, aliveAfter3s, totalMs };
}

async function registry() {
  const r = await ProcessRegistry.open({ maxSessions: 10_000 });
  const sessions = [];
  try {
    for (let i = 0; i < N; i++) sessions.push(await r.spawn(JOB));
    await sleep(1500);
    const t0 = Date.now();
    const results = await Promise.allSettled(sessions.map((s) => r.kill(s.id, { graceMs: 200 })));
    const outcomes = {};
    for (const x of results) {
      const k = x.status === 'fulfilled' ? x.value.outcome : x.reason.code;
      outcomes[k] = (outcomes[k] ?? 0) + 1;
    }
    return { kills: N, outcomes, totalMs: Date.now() - t0 };
  } finally {
    for (const s of sessions) {
      try {
        process.kill(-s.pid, 'SIGKILL');
      } catch {}
    }
    await r.close();
  }
}

const hogs = [0, 1].map(() => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
try {
  console.log(JSON.stringify({ policy: 'fixed', ...(await lowLevel(0)) }));
  console.log(JSON.stringify({ policy: 'adaptive', ...(await lowLevel(undefined)) }));
  console.log(JSON.stringify({ policy: 'registry', ...(await registry()) }));
} finally {
  for (const h of hogs) h.kill('SIGKILL');
}
