// DESIGN section 5 (the child's environment) and issue 18 item 5: secret-looking host
// variables are withheld from jobs, the spawn says which (names only), `allowEnv` passes
// one through, and an explicit `env` value always reaches the job.
import { afterEach, describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { cleanupGroup, perTestRegistry, tempDir } from './support.js';

// Output is read unredacted: the test looks for the values themselves.
const ctx = perTestRegistry({ redact: false });

const SECRETS: Record<string, string> = {
  DATABASE_URL: 'postgres://u:pw-db-1@db/x',
  PASSWORD: 'pw-plain-2',
  GITHUB_TOKEN: 'ghp_value3',
  MY_API_KEY: 'key-value-4',
  AWS_SECRET_ACCESS_KEY: 'aws-value-5',
  SERVICE_CLIENT_SECRET: 'client-secret-6',
};
const set: string[] = [];

function hostEnv(vars: Record<string, string>): void {
  for (const [k, v] of Object.entries(vars)) {
    process.env[k] = v;
    set.push(k);
  }
}

afterEach(() => {
  for (const k of set.splice(0)) delete process.env[k];
});

/** Runs `env` in a job and returns its output and the spawn's result. */
async function envOf(opts: Record<string, unknown> = {}) {
  const s = await ctx.registry.spawn('env', opts);
  cleanupGroup(s.pid);
  await ctx.registry.wait(s.id, { timeoutMs: 10_000 });
  const out = (await ctx.registry.readLog(s.id, { view: 'raw', limit: 100_000 })).lines.join('\n');
  return { s, out };
}

describe('withheld variables are named, never valued', () => {
  it('the four variables of the field report are withheld and listed in withheldEnv (sorted)', async () => {
    hostEnv(SECRETS);
    const { s, out } = await envOf();
    for (const name of Object.keys(SECRETS)) {
      expect(out).not.toMatch(new RegExp(`^${name}=`, 'm'));
      expect(s.withheldEnv).toContain(name);
    }
    expect(s.withheldEnv).toEqual([...s.withheldEnv].sort());
    const json = JSON.stringify(s);
    for (const value of Object.values(SECRETS)) expect(json).not.toContain(value);
  });

  it('ordinary variables reach the job and are not listed', async () => {
    hostEnv({ PROCWARD_TEST_PLAIN_VAR: 'x', MY_PLAIN_SETTING: 'plain-7' });
    const { s, out } = await envOf();
    expect(out).toMatch(/^MY_PLAIN_SETTING=plain-7$/m);
    expect(s.withheldEnv).not.toContain('MY_PLAIN_SETTING');
    // procward's own variables are kept from jobs but are not the user's secrets: not listed.
    expect(out).not.toMatch(/^PROCWARD_TEST_PLAIN_VAR=/m);
    expect(s.withheldEnv).not.toContain('PROCWARD_TEST_PLAIN_VAR');
  });

  it('allowEnv passes a withheld variable through, and it leaves withheldEnv', async () => {
    hostEnv(SECRETS);
    const { s, out } = await envOf({ allowEnv: ['DATABASE_URL', 'MY_API_KEY'] });
    expect(out).toMatch(/^DATABASE_URL=postgres:\/\/u:pw-db-1@db\/x$/m);
    expect(out).toMatch(/^MY_API_KEY=key-value-4$/m);
    expect(s.withheldEnv).not.toContain('DATABASE_URL');
    expect(s.withheldEnv).not.toContain('MY_API_KEY');
    expect(s.withheldEnv).toContain('GITHUB_TOKEN');
  });

  it('an explicit env value always reaches the job, secret-looking name or not, and is not listed', async () => {
    hostEnv(SECRETS);
    const { s, out } = await envOf({ env: { PASSWORD: 'explicit-8', GITHUB_TOKEN: 'explicit-9' } });
    expect(out).toMatch(/^PASSWORD=explicit-8$/m);
    expect(out).toMatch(/^GITHUB_TOKEN=explicit-9$/m);
    expect(s.withheldEnv).not.toContain('PASSWORD');
    expect(s.withheldEnv).not.toContain('GITHUB_TOKEN');
    expect(s.withheldEnv).toContain('DATABASE_URL');
  });

  it('a durable job gets the same environment and the same list', async () => {
    hostEnv({ STRIPE_API_KEY: 'sk_value_10' });
    const r = await ProcessRegistry.open({ stateDir: tempDir(), redact: false });
    try {
      const s = await r.spawn('env', { durable: true });
      await r.wait(s.id, { timeoutMs: 10_000 });
      const out = (await r.readLog(s.id, { view: 'raw', limit: 100_000 })).lines.join('\n');
      expect(out).not.toContain('sk_value_10');
      expect(s.withheldEnv).toContain('STRIPE_API_KEY');
    } finally {
      await r.close();
    }
  });
});
