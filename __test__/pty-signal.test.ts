// Issue 28, kind 6: "as Ctrl-C in a terminal" reaches the terminal's foreground job. A PTY
// job's terminal signals (SIGINT, SIGQUIT, SIGTSTP) go to the terminal's foreground process
// group (tcgetpgrp on the master) when job control made one apart from the job's own, through
// a member of the job's session (never by the group's number alone).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { descendants, handleToolCall } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

/** `/proc/<pid>/comm`, or '' once it is gone. */
function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** The live `sleep` under `pid` in a group of its own (job control's), once there is one, with its group. */
async function sleeper(pid: number): Promise<{ pid: number; pgid: number }> {
  let found: { pid: number; pgid: number } | undefined;
  await until(
    () => {
      found = descendants(pid).find((d) => d.alive && d.pgid !== pid && comm(d.pid) === 'sleep');
      return found !== undefined;
    },
    10_000,
    'the foreground command in a group of its own',
  );
  return found as { pid: number; pgid: number };
}

describe('terminal signals to a PTY job reach its foreground process group', () => {
  it('the report: SIGINT to bash -i -c "sleep 300; echo after" ends the sleep, which job control put in its own group', async () => {
    const s = await ctx.registry.spawn("bash -i -c 'sleep 300; echo after' 2>/dev/null", { pty: true });
    cleanupGroup(s.pid);
    const sleep = await sleeper(s.pid as number);
    cleanupGroup(sleep.pgid);
    const sent = await ctx.registry.signal(s.id, 'SIGINT');
    expect(sent).toMatchObject({ signal: 'SIGINT', pid: s.pid, processGroup: true, foregroundGroup: sleep.pgid });
    await until(() => !descendants(s.pid as number).some((d) => d.pid === sleep.pid && d.alive), 10_000, 'the sleep to end');
  });

  it('through the tool: SIGQUIT reaches the foreground group too, and says which group got it', async () => {
    const s = await ctx.registry.spawn("bash -i -c 'sleep 301; echo after' 2>/dev/null", { pty: true });
    cleanupGroup(s.pid);
    const sleep = await sleeper(s.pid as number);
    cleanupGroup(sleep.pgid);
    const sent = (await handleToolCall(ctx.registry, 'process', { action: 'signal', session_id: s.id, signal: 'SIGQUIT' })) as Record<string, unknown>;
    expect(sent).toMatchObject({ signal: 'SIGQUIT', process_group: true, foreground_group: sleep.pgid });
    await until(() => !descendants(s.pid as number).some((d) => d.pid === sleep.pid && d.alive), 10_000, 'the sleep to end');
  });

  it('without job control the foreground group is the job`s own: the group signal as before; a signal a terminal does not send (SIGCONT) never goes to the foreground group', async () => {
    const s = await ctx.registry.spawn("trap 'echo got-int; exit 3' INT; echo ready; while :; do sleep 0.1; done", { pty: true });
    cleanupGroup(s.pid);
    await until(async () => (await ctx.registry.poll(s.id)).outputPreview.includes('ready'), 10_000, 'the trap');
    const sent = await ctx.registry.signal(s.id, 'SIGINT');
    expect(sent).toMatchObject({ processGroup: true });
    expect(sent.foregroundGroup).toBeUndefined();
    expect(await ctx.registry.wait(s.id, { timeoutMs: 10_000 })).toMatchObject({ exitCode: 3 });
    const bash = await ctx.registry.spawn("bash -i -c 'sleep 302' 2>/dev/null", { pty: true });
    cleanupGroup(bash.pid);
    const sleep = await sleeper(bash.pid as number);
    cleanupGroup(sleep.pgid);
    const usr = await ctx.registry.signal(bash.id, 'SIGCONT');
    expect(usr.foregroundGroup).toBeUndefined();
    expect(descendants(bash.pid as number).some((d) => d.pid === sleep.pid && d.alive)).toBe(true);
  });
});
