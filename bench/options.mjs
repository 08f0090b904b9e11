// What checking the options object costs on the hottest call (issue 16 item 10): `poll` of
// a finished session, with no options, with `{}` and with `{ acknowledge: false }`, and
// `wait` of a finished session with a timeout. Run alone: `node bench/options.mjs`
// (after `npm run build`); prints the median microseconds per call.
import { ProcessRegistry } from '../dist/index.mjs';
import { fmt, medians, table } from './lib.mjs';

export async function optionsBench() {
  const r = await ProcessRegistry.open();
  try {
    const s = await r.spawn('echo done');
    await r.wait(s.id, { timeoutMs: 10_000 });
    const m = await medians(
      {
        'poll(id)': () => r.poll(s.id),
        'poll(id, {})': () => r.poll(s.id, {}),
        'poll(id, { acknowledge: false })': () => r.poll(s.id, { acknowledge: false }),
        'wait(id, { timeoutMs: 1000 })': () => r.wait(s.id, { timeoutMs: 1000 }),
      },
      { time: 1500, iterations: 2000 },
    );
    return table(
      'Options check on hot calls (finished session)',
      ['call', 'median µs'],
      Object.entries(m).map(([name, ms]) => [name, fmt(ms * 1000)]),
    );
  } finally {
    await r.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await optionsBench());
