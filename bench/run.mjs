// `npm run bench`: every benchmark, side by side in one run; prints markdown tables and
// writes them to bench/RESULTS.md.
import { writeFileSync } from 'node:fs';
import { cpus, release } from 'node:os';
import { join } from 'node:path';
import { bulkKillBench } from './bulkkill.mjs';
import { killBench, probeBench, treeBench } from './identity.mjs';
import { latencyBench, spawnBench, throughputBench } from './output.mjs';
import { liveJobsBench } from './livejobs.mjs';
import { recoveryBench } from './recovery.mjs';
import { sshPollBench } from './environments.mjs';
import { mcpBench } from './mcp.mjs';
import { longLineBench, memoryBench, pagingBench, scaleBench, streamBench } from './growth.mjs';

const only = process.argv.slice(2);
const suites = {
  probe: probeBench,
  tree: treeBench,
  kill: killBench,
  // killAll of 500 pipe-mode and 500 durable jobs against one tree kill plus the grace (issue 14).
  bulkkill: bulkKillBench,
  // Spawn before throughput: the 1 GB runs grow this process's heap, and a bigger heap
  // makes every fork (Node's child_process.spawn) slower, which would flatter procward.
  spawn: spawnBench,
  latency: latencyBench,
  throughput: throughputBench,
  // Each count in a fresh child process (its own threads, descriptors and RSS).
  livejobs: liveJobsBench,
  recovery: recoveryBench,
  // Cost against the number of sessions in a state directory, and memory per finished session (issue 14).
  scale: scaleBench,
  memory: memoryBench,
  ssh: sshPollBench,
  mcp: mcpBench,
  // readLog pages (issue 14): against the page's size, one long line, a 1 GB log streamed whole.
  paging: pagingBench,
  longline: longLineBench,
  stream: streamBench,
};
const header = `Run ${new Date().toISOString()} on ${cpus().length}× ${cpus()[0]?.model ?? 'cpu'}, Linux ${release()}, Node ${process.version}.\n`;
const parts = [header];
for (const [name, fn] of Object.entries(suites)) {
  if (only.length && !only.includes(name)) continue;
  process.stderr.write(`bench: ${name}...\n`);
  parts.push(await fn());
}
const text = parts.join('\n');
process.stdout.write(text);
if (!only.length) writeFileSync(join(import.meta.dirname, 'RESULTS.md'), text);
process.exit(0);
