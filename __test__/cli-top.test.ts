// Issue 18: `procward top` in a real terminal. tmux (on its own socket, so no other tmux
// server is touched) runs the built CLI in a 120x30 pane; keys go in with send-keys and
// the screen comes back with capture-pane.
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, cleanupGroup, cli, isAlive, tempDir, until } from './support.js';

const socket = `procward-top-${process.pid}`;
const sessions: string[] = [];

function tmux(...args: string[]): string {
  return execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function alive(name: string): boolean {
  try {
    tmux('has-session', '-t', name);
    return true;
  } catch {
    return false;
  }
}

afterEach(() => {
  for (const name of sessions.splice(0)) if (alive(name)) tmux('kill-session', '-t', name);
});

async function started(state: string, command: string): Promise<{ id: string; pid: number }> {
  const s = JSON.parse((await cli(['start', '--state-dir', state, '--json', '--', command])).stdout);
  cleanupGroup(s.pid);
  return s;
}

describe('procward top', () => {
  it('renders the sessions under tmux, re-sorts on keys (m, o), and q quits leaving the jobs running', async () => {
    const state = tempDir();
    const chatty = await started(state, 'while :; do echo tick; sleep 0.01; done');
    const quiet = await started(state, 'sleep 120');
    const name = `top-${Date.now()}`;
    sessions.push(name);
    tmux('new-session', '-d', '-s', name, '-x', '120', '-y', '30', `${process.execPath} ${CLI} top --state-dir ${state} --interval 200ms`);
    const screen = () => (alive(name) ? tmux('capture-pane', '-p', '-t', name) : '');
    await until(() => /procward top: 2 session\(s\), 2 running; sorted by cpu/.test(screen()), 30_000, 'first frame');
    expect(screen()).toMatch(/SESSION +PID +STATUS +CPU% +RSS +LINES\/S +RAN +COMMAND/);
    expect(screen()).toContain(chatty.id);
    expect(screen()).toContain(quiet.id);
    // Every line fits the 120 columns of the pane.
    expect(Math.max(...screen().split('\n').map((l) => l.length))).toBeLessThanOrEqual(120);

    tmux('send-keys', '-t', name, 'm');
    await until(() => screen().includes('sorted by mem'), 30_000, 'sorted by mem');
    tmux('send-keys', '-t', name, 'o');
    // Sorted by output rate, the job that prints 100 lines a second comes first, with a rate above 0.
    await until(
      () => {
        const rows = screen().split('\n').filter((l) => l.startsWith('proc_'));
        return screen().includes('sorted by output') && rows[0]?.startsWith(chatty.id) === true && /running +[\d.-]+ +\S+ \S+ +[1-9][\d.]* /.test(rows[0]);
      },
      30_000,
      'chatty job first by output rate',
    );
    tmux('send-keys', '-t', name, 'q');
    await until(() => !alive(name), 30_000, 'top to quit');
    expect(isAlive(chatty.pid)).toBe(true);
    expect(isAlive(quiet.pid)).toBe(true);
  }, 120_000);

  it('with stdout not a terminal, top prints one frame (two samples an interval apart) and exits 0', async () => {
    const state = tempDir();
    const s = await started(state, 'sleep 60');
    const r = await cli(['top', '--state-dir', state, '--interval', '100ms']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^procward top: 1 session\(s\), 1 running; sorted by cpu/);
    expect(r.stdout).toMatch(new RegExp(`${s.id} +${s.pid} +running +\\d+\\.\\d +\\d`));
    const bad = await cli(['top', '--sort', 'colour', '--state-dir', state]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--sort must be one of cpu, mem, output, started, status/);
  }, 60_000);
});
