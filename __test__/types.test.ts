// Issue 16 item 11: the published types carry what the runtime guarantees, so a typo fails to
// compile. The `// @ts-expect-error` lines are checked by `tsc --noEmit` (npm run lint): each
// must be an error, or the build fails. The runtime cases check that the types tell the truth.
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type BulkKillOutcome,
  type CompletionEvent,
  type CompletionReason,
  type ExitedSession,
  handleToolCall,
  ProcessRegistry,
  ProcwardError,
  type ProcwardErrorCode,
  type RunningSession,
  type SessionSummary,
  type SpawnOptions,
  type ToolResult,
  localShell,
} from '../dist/index.mjs';
import type { JobEvent } from '../index.js';
import { fromNative } from '../ts/errors.js';
import { cleanupGroup, perTestRegistry, until } from './support.js';

const ctx = perTestRegistry();

describe('ProcwardError.code is a union of the codes that exist', () => {
  it('a misspelt code does not compile', () => {
    expectTypeOf<ProcwardError['code']>().toEqualTypeOf<ProcwardErrorCode>();
    expectTypeOf<'REGISTRY_CLOSED'>().toExtend<ProcwardErrorCode>();
    expectTypeOf<'ENOENT'>().toExtend<ProcwardErrorCode>();
    expectTypeOf<'REGISTRY_CLOSD'>().not.toExtend<ProcwardErrorCode>();
    const check = (err: ProcwardError) => {
      // @ts-expect-error: no such code, so the comparison can never be true.
      if (err.code === 'REGISTRY_CLOSD') return true;
      return err.code === 'REGISTRY_CLOSED';
    };
    // @ts-expect-error: the constructor takes known codes only.
    expect(check(new ProcwardError('INVALID_ARGUMNT', 'x'))).toBe(false);
  });

  it('so are the codes of bulk kill outcomes, and completion reasons', () => {
    expectTypeOf<Extract<BulkKillOutcome, { error: unknown }>['error']['code']>().toEqualTypeOf<ProcwardErrorCode | 'ERROR'>();
    expectTypeOf<CompletionEvent['reason']>().toEqualTypeOf<CompletionReason | null>();
  });

  it('a native error with a name outside the union becomes EIO, keeping the name', () => {
    expect(fromNative(new Error('ENOENT: no such file'))).toMatchObject({ code: 'ENOENT', message: 'no such file' });
    expect(fromNative(new Error('EWEIRD: odd'))).toMatchObject({ code: 'EIO', message: 'odd', details: { errno: 'EWEIRD' } });
  });
});

describe('SessionSummary is discriminated on status', () => {
  it('an exited session has reason and exitedAt; a running one has none', async () => {
    const end = (s: SessionSummary) => {
      if (s.status === 'exited') {
        expectTypeOf(s).toEqualTypeOf<ExitedSession>();
        expectTypeOf(s.exitedAt).toEqualTypeOf<number>();
        expectTypeOf(s.reason).toEqualTypeOf<CompletionReason>();
        return `${s.reason} at ${s.exitedAt}`;
      }
      expectTypeOf(s).toEqualTypeOf<RunningSession>();
      expectTypeOf(s.exitCode).toEqualTypeOf<null>();
      // @ts-expect-error: 'exitted' is not a status.
      if (s.status === 'exitted') return 'never';
      return 'running';
    };
    const s = await ctx.start('sleep 30');
    expect(end(await ctx.registry.poll(s.id))).toBe('running');
    const done = await ctx.start('exit 3');
    const w = await ctx.registry.wait(done.id, { timeoutMs: 10_000 });
    expect(end(w)).toMatch(/^exited at \d+$/);
    if (w.status !== 'exited') throw new Error('not ended');
    expect(w.exitCode).toBe(3);
  });
});

describe('ToolResult is a real type', () => {
  it('errors and results are told apart, with snake_case keys', async () => {
    expectTypeOf<ToolResult>().not.toEqualTypeOf<Record<string, unknown>>();
    const res = await handleToolCall(ctx.registry, 'process_start', { command: 'sleep 30' });
    if ('error' in res) throw new Error(res.error.message);
    // @ts-expect-error: results use snake_case (session_id), not camelCase.
    expect(res.sessionId).toBeUndefined();
    if (!('pid' in res)) throw new Error('no pid');
    cleanupGroup(res.pid);
    expect(res.session_id).toMatch(/^proc_[0-9a-f]{12}$/);
    const polled = await handleToolCall(ctx.registry, 'process', { action: 'poll', session_id: res.session_id });
    if ('error' in polled || !('output_preview' in polled)) throw new Error('poll failed');
    expectTypeOf(polled.output_preview).toEqualTypeOf<string>();
    expect(polled.status).toBe('running');
    await ctx.registry.kill(res.session_id, { graceMs: 0 });
    const bad = await handleToolCall(ctx.registry, 'nope', {});
    if (!('error' in bad)) throw new Error('no error');
    expectTypeOf(bad.error.code).toExtend<string>();
    expect(bad.error.code).toBe('UNKNOWN_TOOL');
  });
});

describe('JobEvent.kind and SpawnOptions.pty', () => {
  it('kind is output or exit; pty takes true', () => {
    expectTypeOf<JobEvent['kind']>().toEqualTypeOf<'output' | 'exit'>();
    const pty: SpawnOptions = { pty: true };
    expect(pty.pty).toBe(true);
    // @ts-expect-error: a terminal's size is cols and rows.
    const wrong: SpawnOptions = { pty: { columns: 80 } };
    expect(wrong).toBeDefined();
  });

  it('a misspelt option key does not compile', () => {
    const calls = (r: ProcessRegistry) => [
      // @ts-expect-error: the option is timeoutMs.
      r.wait('proc_000000000000', { timeout: 100 }),
      // @ts-expect-error: the option is cwd.
      r.spawn('true', { workdir: '/tmp' }),
    ];
    expect(calls).toBeTypeOf('function');
  });
});

describe('list() on a closed registry', () => {
  it('throws REGISTRY_CLOSED like every other call, and no sandbox poller comes back', async () => {
    let execs = 0;
    const shell = localShell();
    const counting = {
      description: shell.description,
      tmpDir: shell.tmpDir,
      close: () => shell.close(),
      exec: (script: string, opts?: { timeoutMs?: number }) => {
        execs++;
        return shell.exec(script, opts);
      },
    };
    const r = await ProcessRegistry.open({ environments: { box: counting }, sandbox: { pollIntervalMs: 20 } });
    const s = await r.spawn('sleep 30', { environment: 'box' });
    await until(async () => (await r.poll(s.id)).pid !== null, 10_000, 'the sandbox job started');
    // The far side is this machine: the job's process group is cleaned after the test.
    cleanupGroup((await r.poll(s.id)).pid);
    const listing = r.list();
    await r.close();
    await listing.catch(() => undefined);
    await expect(r.list()).rejects.toMatchObject({ code: 'REGISTRY_CLOSED' });
    await expect(r.list({ taskId: 't' })).rejects.toMatchObject({ code: 'REGISTRY_CLOSED' });
    const after = execs;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(execs).toBe(after);
  });
});
