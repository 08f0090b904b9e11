// DESIGN section 5 and issue 16 item 7: `A && B &` runs A in the foreground and only B in the
// background, decided by a shell parser and edited only at its offsets, checked against bash.
import { spawnSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { MAX_PARSED_CHARS, shellLanguage } from '../ts/policy/background.js';
import { shellCommand } from '../ts/policy/environment.js';
import { cleanupGroup, perTestRegistry, tempDir } from './support.js';

/** Runs `script` with `shell -c` and returns its exit status and output. */
function run(script: string, shell = '/bin/bash'): { status: number | null; out: string } {
  const r = spawnSync(shell, ['-c', script], { encoding: 'utf8', timeout: 10_000 });
  return { status: r.status, out: r.stdout + r.stderr };
}

describe('the rewrite, edited only at the parser’s offsets', () => {
  const cases: [string, string][] = [
    ['cd /app && npm run dev &', 'cd /app && { npm run dev & }'],
    ['a && b && c &', 'a && b && { c & }'],
    // Every redirection form on the backgrounded pipeline (issue 16 item 7).
    ['cd /missing && sleep 1 &>/dev/null &', 'cd /missing && { sleep 1 &>/dev/null & }'],
    ['cd /missing && sleep 1 >/dev/null 2>&1 &', 'cd /missing && { sleep 1 >/dev/null 2>&1 & }'],
    ['cd /missing && sleep 1 &>>/tmp/log &', 'cd /missing && { sleep 1 &>>/tmp/log & }'],
    ['cd /missing && sleep 1 >&/dev/null &', 'cd /missing && { sleep 1 >&/dev/null & }'],
    ['cd /missing && sleep 1 >|/tmp/out 2>&1 &', 'cd /missing && { sleep 1 >|/tmp/out 2>&1 & }'],
    ['make 2>&1 && ./serve <in >out 2>&1 &', 'make 2>&1 && { ./serve <in >out 2>&1 & }'],
    // Other lists of the same kind: || chains, pipelines, subshells and groups as B.
    ['pgrep srv || ./srv &', 'pgrep srv || { ./srv & }'],
    ['a || b || c &', 'a || b || { c & }'],
    ['a && b | c &', 'a && { b | c & }'],
    ['a && b |& tee log &', 'a && { b |& tee log & }'],
    ['a && (b; c) &', 'a && { (b; c) & }'],
    ['a && { b; c; } &', 'a && { { b; c; } & }'],
    ['a && ! b &', 'a && { ! b & }'],
    ['a | b && c &', 'a | b && { c & }'],
    // Earlier statements, comments, line breaks, quotes and non-ASCII bytes stay as given.
    ['x=1; cd /tmp && sleep 1 &', 'x=1; cd /tmp && { sleep 1 & }'],
    ['a && b & # start it', 'a && { b & } # start it'],
    ['a && b &#c', 'a && { b & } #c'],
    ['a &&\n  b &\n', 'a &&\n  { b & }\n'],
    ['a && # why\n b &', 'a && # why\n { b & }'],
    ['echo "x && y &" && sleep 1 &', 'echo "x && y &" && { sleep 1 & }'],
    ["echo 'é && ü' && sleep 1 &", "echo 'é && ü' && { sleep 1 & }"],
    // Here-documents: the body follows the line the braces close on.
    ['a && cat <<EOF &\nx && y &\nEOF\n', 'a && { cat <<EOF & }\nx && y &\nEOF\n'],
    ['cat <<EOF >/tmp/f && sh /tmp/f &\nbody &\nEOF', 'cat <<EOF >/tmp/f && { sh /tmp/f & }\nbody &\nEOF'],
  ];

  it.each(cases)('%j becomes %j', (given, expected) => {
    expect(shellCommand(given)).toBe(expected);
  });

  const unchanged = [
    'a && b',
    'a & b',
    'a && b & c',
    'echo "x && y &"',
    "a && echo 'b &'",
    'a && b 2>&1',
    '(a && b &)',
    'a; b &',
    'a | b &',
    // Mixed lists: which part is the background job is a guess.
    'a && b || c &',
    'a || b && c &',
    // Not the last statement: A in the foreground would change what follows.
    'cd /app && npm start &\nls',
    // Does not parse: left for the shell to report.
    'a && (b &',
    'a && b & )',
    'a &&',
  ];
  it.each(unchanged)('%j is left as given', (given) => {
    expect(shellCommand(given)).toBe(given);
  });

  it('every rewritten case is still valid bash (bash -n)', () => {
    for (const [, rewritten] of cases) expect(spawnSync('/bin/bash', ['-n', '-c', rewritten]).status, rewritten).toBe(0);
  });
});

describe('the rewrite follows the configured shell', () => {
  it('applies to bash and POSIX shells, never to other shells or on Windows', () => {
    expect(shellLanguage('/bin/bash')).toBe('bash');
    expect(shellLanguage('/bin/sh')).toBe('posix');
    expect(shellLanguage('dash')).toBe('posix');
    expect(shellLanguage('/usr/bin/zsh')).toBeNull();
    expect(shellLanguage('/usr/bin/fish')).toBeNull();
    expect(shellLanguage(undefined, 'win32')).toBeNull();
    expect(shellLanguage('C:\\Program Files\\Git\\bin\\bash.exe', 'win32')).toBeNull();
    expect(shellCommand('a && b &', '/usr/bin/fish')).toBe('a && b &');
    expect(shellCommand('a && b &', '/bin/dash')).toBe('a && { b & }');
  });

  it('a POSIX sh reads `&>` as `&` then `>`, so nothing is backgrounded at the end and nothing changes', () => {
    const given = 'cd /missing && sleep 1 &>/dev/null &';
    expect(shellCommand(given, '/bin/sh')).toBe(given);
    expect(shellCommand('cd /missing && sleep 1 >/dev/null 2>&1 &', '/bin/sh')).toBe('cd /missing && { sleep 1 >/dev/null 2>&1 & }');
  });
});

describe('the rewrite against the real shell', () => {
  it('a failing A is the exit status for every redirection form; the original hid it', () => {
    for (const given of ['cd /missing && sleep 1 &', 'cd /missing && sleep 1 &>/dev/null &', 'cd /missing && sleep 1 >/dev/null 2>&1 &', 'cd /missing && true | sleep 1 &']) {
      const rewritten = shellCommand(given);
      expect(rewritten, given).not.toBe(given);
      // The shell itself runs the whole list in the background: status 0.
      expect(run(given).status, given).toBe(0);
      expect(run(rewritten).status, rewritten).not.toBe(0);
    }
  });

  it('a succeeding A keeps its meaning: B runs after A, in A’s directory, and the job exits 0', () => {
    const r = run(shellCommand('cd /tmp && pwd &') + '\nwait');
    expect(r).toEqual({ status: 0, out: '/tmp\n' });
    const h = run(shellCommand('cd /tmp && cat <<EOF &\nin $PWD\nEOF\n') + 'wait');
    expect(h).toEqual({ status: 0, out: 'in /tmp\n' });
  });

  const ctx = perTestRegistry();

  it('through the registry: cd /missing fails the job, with any redirection of B', async () => {
    for (const command of ['cd /missing && sleep 1 &>/dev/null &', 'cd /missing && sleep 1 >/dev/null 2>&1 &', 'cd /missing && sleep 1 | cat &']) {
      const s = await ctx.start(command);
      const w = await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
      expect({ command, exitCode: w.exitCode }).toEqual({ command, exitCode: 1 });
      expect(w.outputPreview).toContain('/missing');
      // What is listed is the command as given.
      expect(w.command).toBe(command);
    }
    const ok = await ctx.start('cd /tmp && pwd &');
    await ctx.registry.wait(ok.id, { timeoutMs: 10_000 });
    await expect.poll(async () => (await ctx.registry.readLog(ok.id)).text).toBe('/tmp');
    expect((await ctx.registry.poll(ok.id)).exitCode).toBe(0);
  });

  it('a command that does not parse reaches the shell as given (bash reports the error)', async () => {
    const s = await ctx.start('echo start && (echo unclosed &');
    const w = await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
    expect(w.exitCode).toBe(2);
    expect(w.outputPreview).toMatch(/syntax error|unexpected end of file/);
  });

  it('a shell that is not bash or sh gets the command unchanged', async () => {
    // bash under another name: procward must not assume its grammar, so the list stays
    // backgrounded as written and the job exits 0 despite the failing cd.
    const shell = join(tempDir(), 'othershell');
    symlinkSync('/bin/bash', shell);
    const r = await ProcessRegistry.open({ shell });
    try {
      const s = await r.spawn('cd /missing && sleep 1 >/dev/null 2>&1 &');
      cleanupGroup(s.pid);
      expect((await r.wait(s.id, { timeoutMs: 10_000 })).exitCode).toBe(0);
    } finally {
      await r.close();
    }
  });
});

describe('the rewrite’s cost stays bounded', () => {
  it('a command over the parse limit goes as given, one at the limit is still rewritten', () => {
    const tail = 'cd /missing && sleep 1 &';
    const filler = (n: number) => `: ${'x'.repeat(n - 3)}\n`;
    const atLimit = filler(MAX_PARSED_CHARS - tail.length) + tail;
    expect(atLimit.length).toBe(MAX_PARSED_CHARS);
    expect(shellCommand(atLimit).endsWith('cd /missing && { sleep 1 & }')).toBe(true);
    const over = `:${atLimit}`;
    expect(shellCommand(over)).toBe(over);
  });
});
