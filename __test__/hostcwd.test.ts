// Issue 28, kind 10: a host whose own working directory was deleted. A spawn without a cwd
// said `ENOENT: no such file or directory, uv_cwd`; it now says what is gone and what to pass,
// on every surface. Each host is a child Node process started in a directory then removed.
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT, tempDir } from './support.js';

/** Runs `script` (an ES module) in Node from a directory removed before the script's body runs. */
function fromRemovedCwd(script: string, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = join(tempDir(), 'gone');
  mkdirSync(dir);
  const prelude = `process.chdir(${JSON.stringify(dir)}); (await import('node:fs')).rmSync(${JSON.stringify(dir)}, { recursive: true });`;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', `${prelude}\n${script}`, ...args], { cwd: ROOT, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe("a host whose working directory was removed (issue 28, kind 10)", () => {
  it('the library, the tool and the CLI say the directory is gone and to pass cwd; with a cwd the job runs', async () => {
    const state = tempDir();
    const lib = join(ROOT, 'dist', 'index.mjs');
    const r = await fromRemovedCwd(`
      const { ProcessRegistry, handleToolCall } = await import(${JSON.stringify(lib)});
      const r = await ProcessRegistry.open({ stateDir: ${JSON.stringify(state)}, durable: false });
      const out = {};
      try { await r.spawn('echo x'); } catch (e) { out.lib = { code: e.code, message: e.message }; }
      try { await r.spawn('echo x', { cwd: 'relative' }); } catch (e) { out.relative = { code: e.code, message: e.message }; }
      out.tool = await handleToolCall(r, 'process_start', { command: 'echo x' });
      const s = await r.spawn('echo ran', { cwd: ${JSON.stringify(state)} });
      out.withCwd = (await r.wait(s.id, { timeoutMs: 20000 })).outputPreview;
      await r.close();
      console.log(JSON.stringify(out));
    `);
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout);
    for (const e of [out.lib, out.relative]) {
      expect(e.code).toBe('ENOENT');
      expect(e.message).toContain("the host's own working directory no longer exists");
      expect(e.message).not.toContain('uv_cwd');
    }
    expect(out.tool.error.code).toBe('ENOENT');
    expect(out.tool.error.message).toContain('workdir');
    expect(out.withCwd).toBe('ran\n');
    // The CLI, run from the removed directory.
    const cli = await fromRemovedCwd(`process.argv.splice(1, 0, ${JSON.stringify(CLI)}); await import(${JSON.stringify(CLI)});`, ['start', '--state-dir', state, '--', 'echo x']);
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toContain("the host's own working directory no longer exists");
    expect(cli.stderr).toContain('--cwd');
    rmSync(state, { recursive: true, force: true });
  }, 60_000);
});
