// DESIGN section 5: the child's environment and the `A && B &` rewrite.
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { childEnvironment, shellCommand } from '../ts/policy/environment.js';
import { cleanupGroup } from './support.js';

describe('child environment', () => {
  const host = { HOME: '/home/u', PATH: '/bin', OPENAI_API_KEY: 'sk-x', MY_SERVICE_TOKEN: 't', DB_PASSWORD: 'p', MAX_TOKENS: '100', KEYBOARD: 'us' };

  it('drops secret-looking host variables, keeps the rest, and adds job defaults', () => {
    const env = childEnvironment(host);
    expect(env).toMatchObject({ HOME: '/home/u', PATH: '/bin', MAX_TOKENS: '100', KEYBOARD: 'us', PYTHONUNBUFFERED: '1', PAGER: 'cat' });
    expect(env).not.toHaveProperty('OPENAI_API_KEY');
    expect(env).not.toHaveProperty('MY_SERVICE_TOKEN');
    expect(env).not.toHaveProperty('DB_PASSWORD');
  });

  it('passes a host secret only when allowed by name, and explicit values always', () => {
    const env = childEnvironment(host, { DB_PASSWORD: 'explicit', PAGER: 'less' }, ['OPENAI_API_KEY']);
    expect(env).toMatchObject({ OPENAI_API_KEY: 'sk-x', DB_PASSWORD: 'explicit', PAGER: 'less' });
    expect(env).not.toHaveProperty('MY_SERVICE_TOKEN');
  });

  it('a real job does not see the host’s secrets', async () => {
    process.env.PROCWARD_TEST_API_KEY = 'hunter2hunter2';
    const r = await ProcessRegistry.open();
    try {
      const s = await r.spawn('echo "key=${PROCWARD_TEST_API_KEY:-unset} unbuffered=$PYTHONUNBUFFERED"');
      cleanupGroup(s.pid);
      expect((await r.wait(s.id, { timeoutMs: 5000 })).outputPreview).toBe('key=unset unbuffered=1\n');
      const t = await r.spawn('echo "key=$PROCWARD_TEST_API_KEY"', { allowEnv: ['PROCWARD_TEST_API_KEY'] });
      cleanupGroup(t.pid);
      expect((await r.readLog(t.id)).status).toBeDefined();
      await r.wait(t.id, { timeoutMs: 5000 });
      // The value reaches the job; the preview of its output is still redaction-safe text.
      expect((await r.readLog(t.id)).text).toBe('key=hunter2hunter2');
    } finally {
      delete process.env.PROCWARD_TEST_API_KEY;
      await r.close();
    }
  });
});

describe('A && B & rewrite', () => {
  it('runs A in the foreground and only B in the background', () => {
    expect(shellCommand('cd /app && npm run dev &')).toBe('cd /app && { npm run dev & }');
    expect(shellCommand('a && b && c &')).toBe('a && b && { c & }');
  });

  it('leaves everything else alone', () => {
    for (const cmd of ['a && b', 'a & b', 'a && b & c', 'echo "x && y &"', "a && echo 'b &'", 'a && b 2>&1', 'a &&', '(a && b &)', 'a; b &']) {
      expect(shellCommand(cmd)).toBe(cmd);
    }
  });

  it('a rewritten job is reported exited while B still runs, and list shows the original command', async () => {
    const r = await ProcessRegistry.open();
    const s = await r.spawn('true && sleep 30 &');
    cleanupGroup(s.pid);
    const w = await r.wait(s.id, { timeoutMs: 5000 });
    expect(w.status).toBe('exited');
    expect((await r.list())[0]?.command).toBe('true && sleep 30 &');
    await r.close();
  });
});
