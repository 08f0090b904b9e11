// PTY sessions run through a terminal emulator (DESIGN section 4, PTY mode; issue 16): the
// program's terminal queries are answered into its input, and `screen` shows what a person
// would see on the terminal. Real shells, python3 and node under real PTYs.
import { describe, expect, it } from 'vitest';
import { perTestRegistry, until } from './support';

const ctx = perTestRegistry();
const start = (command: string, opts = {}) => ctx.start(command, { pty: { cols: 80, rows: 24 }, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'xterm' }, ...opts });

/** Waits (20 s at most) until the session's screen passes `ready`, and returns it. */
async function screenWhen(id: string, ready: (lines: string[]) => boolean, what: string) {
  await until(async () => ready((await ctx.registry.screen(id)).lines), 20_000, what);
  return ctx.registry.screen(id);
}

/** Output of a session once it ended, ANSI stripped, without CRs. */
async function outputAtExit(id: string): Promise<{ exitCode: number | null; text: string }> {
  const w = await ctx.registry.wait(id, { timeoutMs: 20_000 });
  expect(w.status).toBe('exited');
  return { exitCode: w.exitCode, text: w.outputPreview.replace(/\r/g, '') };
}

describe('terminal queries get answers', () => {
  it('a cursor position query (ESC[6n) is answered with where the cursor is', async () => {
    const s = await start(`printf '\\033[3;7H\\033[6n'; IFS= read -rs -d R reply; printf '\\ngot:%q\\n' "$reply"`);
    const out = await outputAtExit(s.id);
    expect(out.exitCode).toBe(0);
    expect(out.text).toContain(`got:$'\\E[3;7'`);
  });

  it.each([
    ['DEC cursor position (ESC[?6n)', '\\033[?6n', 'R', `$'\\E[?1;1;1'`],
    ['status (ESC[5n)', '\\033[5n', 'n', `$'\\E[0'`],
    ['primary device attributes (ESC[c)', '\\033[c', 'c', `$'\\E[?62;22'`],
    ['primary device attributes (ESC[0c)', '\\033[0c', 'c', `$'\\E[?62;22'`],
    ['secondary device attributes (ESC[>c)', '\\033[>c', 'c', `$'\\E[>1;0;0'`],
    ['a DEC private mode (DECRQM ESC[?2004$p)', '\\033[?2004h\\033[?2004$p', 'y', `$'\\E[?2004;1$'`],
  ])('%s is answered', async (_what, query, end, answer) => {
    const s = await start(`printf '${query}'; IFS= read -rs -d ${end} reply; printf '\\ngot:%q\\n' "$reply"`);
    const out = await outputAtExit(s.id);
    expect(out.exitCode).toBe(0);
    expect(out.text).toContain(`got:${answer}`);
  });

  it('a query split across two writes (ESC, then [6n) is answered', async () => {
    const s = await start(`printf 'ab\\033'; sleep 0.1; printf '[6n'; IFS= read -rs -d R reply; printf '\\ngot:%q\\n' "$reply"`);
    const out = await outputAtExit(s.id);
    expect(out.text).toContain(`got:$'\\E[1;3'`);
  });

  it('answers reach the job, never the recorded output', async () => {
    const s = await start(`stty -echo; printf 'q\\033[6n'; IFS= read -r -d R reply; printf 'len=%d\\n' "\${#reply}"`);
    const out = await outputAtExit(s.id);
    expect(out.text).toContain('len=5');
    const raw = await ctx.registry.readLog(s.id, { view: 'raw' });
    expect(raw.text).toContain('q');
    expect(raw.text).not.toContain('1;2R');
  });

  it('a python3 program that probes the cursor before its prompt completes', async () => {
    const program = [
      'import os, sys, termios, tty',
      'fd = sys.stdin.fileno(); old = termios.tcgetattr(fd); tty.setraw(fd)',
      'os.write(1, b"\\x1b[6n"); buf = b""',
      'while not buf.endswith(b"R"): buf += os.read(fd, 1)',
      'termios.tcsetattr(fd, termios.TCSADRAIN, old)',
      'print("cursor at", buf[2:-1].decode()); print("hello", input("name? "))',
    ].join('\n');
    const s = await start(`python3 -c '${program}'`);
    await screenWhen(s.id, (lines) => lines.some((l) => l.startsWith('name? ')), 'the prompt');
    await ctx.registry.submit(s.id, 'bob');
    const out = await outputAtExit(s.id);
    expect(out.exitCode).toBe(0);
    expect(out.text).toContain('cursor at 1;1');
    expect(out.text).toContain('hello bob');
  });

  it('a node program in raw mode that asks for the device attributes before its prompt completes', async () => {
    const program = `process.stdin.setRawMode(true); process.stdout.write("\\x1b[c"); process.stdin.once("data", (d) => { process.stdin.setRawMode(false); process.stdin.pause(); console.log("da=" + JSON.stringify(String(d).slice(1))); });`;
    const s = await start(`node -e '${program}'`);
    const out = await outputAtExit(s.id);
    expect(out.exitCode).toBe(0);
    expect(out.text).toContain('da="[?62;22c"');
  });
});

describe('screen', () => {
  it('shows the text a person would see, where the program drew it, and the cursor', async () => {
    const s = await start(`printf '\\033[2J\\033[5;10Hhello'; tput cup 9 2; printf world; read x`);
    const screen = await screenWhen(s.id, (lines) => lines[9] === '  world', 'the drawing');
    expect(screen.lines).toHaveLength(24);
    expect(screen.lines[4]).toBe('         hello');
    expect(screen.lines.filter((l) => l !== '')).toEqual(['         hello', '  world']);
    expect(screen).toMatchObject({ id: s.id, status: 'running', cursor: { row: 9, col: 7, visible: true }, cols: 80, rows: 24, alternateScreen: false });
  });

  it('follows the full-screen mode of a TUI and keeps the last screen after the session ended', async () => {
    const s = await start(`tput smcup; tput civis; printf 'menu\\n> item'; read x; printf '\\033[2;3Hchosen'`);
    const tui = await screenWhen(s.id, (lines) => lines[1] === '> item', 'the menu');
    expect(tui.alternateScreen).toBe(true);
    expect(tui.cursor.visible).toBe(false);
    await ctx.registry.submit(s.id, '');
    await outputAtExit(s.id);
    const last = await ctx.registry.screen(s.id);
    expect(last.status).toBe('exited');
    expect(last.lines[1]).toBe('> chosen');
  });

  it('follows a resize of the PTY', async () => {
    const s = await start(`read x; printf '\\033[2J\\033[H'; stty size; read y`);
    expect(await ctx.registry.screen(s.id)).toMatchObject({ cols: 80, rows: 24 });
    await ctx.registry.resize(s.id, { cols: 100, rows: 30 });
    const resized = await ctx.registry.screen(s.id);
    expect(resized).toMatchObject({ cols: 100, rows: 30 });
    expect(resized.lines).toHaveLength(30);
    await ctx.registry.submit(s.id, '');
    await screenWhen(s.id, (lines) => lines[0] === '30 100', 'the new size as the job sees it');
    await ctx.registry.submit(s.id, '');
  });

  it('is redacted as all output is', async () => {
    const token = `ghp_${'a1B2'.repeat(9)}`;
    const s = await start(`printf 'key: ${token}\\n'; read x`);
    const screen = await screenWhen(s.id, (lines) => lines[0]?.startsWith('key: ') === true, 'the token line');
    expect(screen.lines[0]).toContain('key: ghp_');
    expect(screen.lines[0]).not.toContain(token);
    expect(screen.lines).toHaveLength(24);
  });

  it('is refused with INVALID_ARGUMENT for a session without a PTY', async () => {
    const s = await ctx.start(`printf '\\033[6n'`);
    await expect(ctx.registry.screen(s.id)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('only PTY sessions started by this host have a screen') });
    await expect(ctx.registry.screen('proc_ffffffffffff')).rejects.toMatchObject({ code: 'UNKNOWN_SESSION' });
  });
});
