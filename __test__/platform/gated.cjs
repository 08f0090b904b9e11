// A job of the behaviour suite, the same on every platform: prints `first`, waits until a
// file named `gate` exists in its working directory, prints `second` and exits with the
// code given as its argument. (A cmd.exe loop cannot do this under Wine: its cmd skips an
// `if ... (...)` block inside `for /l`.) The exit code is set, not forced, so the output is
// flushed before Node exits.
const { existsSync } = require('node:fs');

console.log('first');
const poll = setInterval(() => {
  if (!existsSync('gate')) return;
  clearInterval(poll);
  console.log('second');
  process.exitCode = Number(process.argv[2]);
}, 50);
