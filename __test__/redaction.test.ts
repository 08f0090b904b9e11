// Redaction against a corpus of realistic fake secrets and benign look-alikes
// (fixtures/redaction-corpus.ts), plus the streaming cases: tokens split across chunks or
// broken by ANSI sequences, and the shape of the masks.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessRegistry } from '../dist/index.mjs';
import { plainText } from '../ts/output/views.js';
import { redact, redactCommand } from '../ts/policy/redact.js';
import { BENIGN, SECRETS, type Sample } from './fixtures/redaction-corpus.js';
import { cleanupGroup, tempDir, until } from './support.js';

/** A short one-line label for a sample, for test names and the failure list. */
function label(s: Sample, i: number): string {
  const oneLine = s.text.replace(/\r/g, '\\r').replace(/\n/g, '\\n');
  const preview = oneLine.length > 70 ? `${oneLine.slice(0, 70)}…` : oneLine;
  return `${s.kind} #${i}${s.command ? ' (command)' : ''}: ${preview}`;
}

function run(s: Sample): string {
  return s.command ? redactCommand(s.text) : redact(s.text, { startsInKeyBlock: s.startsInKeyBlock === true });
}

/**
 * The first piece of the secret (the whole secret, or any 12 consecutive characters of it)
 * that survives redaction. A mask keeps at most 6 leading and 4 trailing characters, so a
 * 12-character fragment only survives when a rule caught part of the token and left the rest.
 */
function leaked(out: string, secret: string): string | undefined {
  if (out.includes(secret)) return secret;
  for (let i = 0; i + 12 <= secret.length; i++) {
    const fragment = secret.slice(i, i + 12);
    if (out.includes(fragment)) return fragment;
  }
  return undefined;
}

function masked(s: Sample): boolean {
  return leaked(run(s), s.secret ?? '') === undefined;
}

function unchanged(s: Sample): boolean {
  return run(s) === s.text;
}

describe('redaction corpus', () => {
  it('is big enough and every secret really occurs in its text', () => {
    expect(SECRETS.length).toBeGreaterThanOrEqual(70);
    expect(BENIGN.length).toBeGreaterThanOrEqual(70);
    SECRETS.forEach((s, i) => {
      expect(s.secret, label(s, i)).toBeTruthy();
      expect(s.text, label(s, i)).toContain(s.secret);
    });
  });

  describe('secrets are masked', () => {
    it.each(SECRETS.map((s, i) => [label(s, i), s] as const))('%s', (_name, s) => {
      const out = run(s);
      expect(out).not.toContain(s.secret);
      expect(leaked(out, s.secret ?? ''), `part of the secret survives in: ${out}`).toBeUndefined();
    });
  });

  describe('benign look-alikes come back unchanged', () => {
    it.each(BENIGN.map((s, i) => [label(s, i), s] as const))('%s', (_name, s) => {
      expect(run(s)).toBe(s.text);
    });
  });

  it('reports recall and false positives per kind', () => {
    // A sample on which redact throws counts against it: not masked, or changed.
    const table = (samples: Sample[], hit: (s: Sample) => boolean, onThrow: boolean, heading: string): string => {
      const byKind = new Map<string, { total: number; hits: number }>();
      for (const s of samples) {
        const row = byKind.get(s.kind) ?? { total: 0, hits: 0 };
        row.total++;
        let ok = onThrow;
        try {
          ok = hit(s);
        } catch {
          // counted as onThrow
        }
        if (ok) row.hits++;
        byKind.set(s.kind, row);
      }
      const width = Math.max(...[...byKind.keys()].map((k) => k.length), 5);
      const pct = (n: number, d: number) => `${((100 * n) / d).toFixed(1)}%`.padStart(7);
      const lines = [`${heading}:`];
      let hits = 0;
      for (const [kind, row] of [...byKind].sort(([a], [b]) => a.localeCompare(b))) {
        hits += row.hits;
        lines.push(`  ${kind.padEnd(width)}  ${String(row.hits).padStart(3)}/${String(row.total).padEnd(3)} ${pct(row.hits, row.total)}`);
      }
      lines.push(`  ${'TOTAL'.padEnd(width)}  ${String(hits).padStart(3)}/${String(samples.length).padEnd(3)} ${pct(hits, samples.length)}`);
      return lines.join('\n');
    };
    const recall = table(SECRETS, masked, false, 'recall (masked/total; masked = no 12-char piece of the secret survives)');
    const fp = table(BENIGN, (s) => !unchanged(s), true, 'false positives (changed/total)');
    console.log(`${recall}\n\n${fp}`);
  });
});

describe('redaction on streamed output', () => {
  // A fake 40-character classic GitHub token (ghp_ + 36).
  const ghp = 'ghp_' + 'Qm7Xc2LpV9sKd4TzR8nWb1Yh6Gf3Ja5Eu0Ni';

  it('masks a token split across two chunks once the chunks are joined', () => {
    const chunkA = `$ git push https://${ghp.slice(0, 17)}`;
    const chunkB = `${ghp.slice(17)}@github.com/acme/api.git\nEverything up-to-date\n`;
    const out = redact(chunkA + chunkB);
    expect(out).not.toContain(ghp);
    expect(out).not.toContain(ghp.slice(17, 36));
    expect(out).toContain('Everything up-to-date');
  });

  it('masks a token broken by ANSI colour codes after plainText', () => {
    const tail = ghp.slice('ghp_abc'.length);
    for (const esc of ['\u001b[0m', '\u001b[1;32m', '\u001b[38;5;208m', '\u001b]8;;\u0007']) {
      const raw = `token: \u001b[33m${ghp.slice(0, 7)}${esc}${tail}\u001b[0m\n`;
      const out = redact(plainText(raw));
      expect(out).not.toContain(ghp);
      expect(out).not.toContain(tail.slice(0, 20));
      expect(out).not.toContain(tail);
    }
  });

  it('masks keep a short recognisable prefix and the header scheme', () => {
    const out = redact(`GITHUB_TOKEN=${ghp}`);
    expect(out).not.toContain(ghp);
    expect(out).toMatch(/^GITHUB_TOKEN=ghp_/);

    const bearer = 'Y2kZ8pQ4vR7mT1xW9sL3nB6cF0hJ5dG2aE8uK4oI';
    const curl = redact(`curl -H 'Authorization: Bearer ${bearer}' https://api.example.com/v1/me`);
    expect(curl).not.toContain(bearer);
    expect(curl).toContain("-H 'Authorization: Bearer ");
    expect(curl).toContain('https://api.example.com/v1/me');

    const basic = Buffer.from('deploy:Vq8sW3nL6pX1').toString('base64');
    const dump = redact(`GET / HTTP/1.1\nHost: example.com\nAuthorization: Basic ${basic}\n`);
    expect(dump).not.toContain(basic);
    expect(dump).toContain('Authorization: Basic ');
    expect(dump).toContain('Host: example.com');
  });
});

describe('previews are redacted before they are cut', () => {
  it('a token straddling the start of the preview window does not leak its rest', async () => {
    const { preview } = await import('../ts/output/views.js');
    const token = 'ghp_' + 'LpV9sKd4TzR8nWb1Yh6Gf3Ja5Eu0NiQw2Xc7';
    const text = `${'x'.repeat(5000)} ${token}${'y'.repeat(1990)}`;
    const out = preview(text, 2000, (t) => redact(t));
    expect(out.length).toBeLessThanOrEqual(2000);
    expect(out).not.toContain(token.slice(10, 30));
  });

  it('more vendor formats and credential flags are masked', () => {
    for (const secret of [
      'ya29.a0AfB_byC9xK2mQ7pLr4sT8vW1zY3nH6jD0eF5gI',
      'gsk_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4',
      'SG.' + 'aBcDeFgHiJkLmNoPqRsT12.uVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01',
      'dckr_pat_' + 'Ab3De6Gh9Jk2Mn5Pq8St1Vw4',
      'hvs.' + 'CAESIJ8kq9xW2mN5pL7rT4vY1zB3cF6gH0jK',
      'whsec_' + 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    ]) {
      expect(redact(`token: ${secret}`)).not.toContain(secret.slice(8));
    }
    expect(redact('curl -u deploy:s3cr3tPassw0rd https://example.com')).not.toContain('s3cr3tPassw0rd');
    expect(redact('//registry.npmjs.org/:_authToken=4f6e0c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b')).not.toContain('4f6e0c1a-2b3d');
    expect(redact('aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYa')).not.toContain('wJalrXUtnFEMI/K7MDENG');
  });
});

// Issue 12, findings 6 and 7, against real jobs: what leaves through every surface.
describe('secrets through the registry (issue 12)', () => {
  /** A fake private key of `lines` lines of 64 random base64 characters (never a real key). */
  function fakeKey(lines: number, label = 'RSA'): { pem: string; body: string[] } {
    const body = Array.from({ length: lines }, () => randomBytes(48).toString('base64'));
    return { pem: `-----BEGIN ${label} PRIVATE KEY-----\n${body.join('\n')}\n-----END ${label} PRIVATE KEY-----\n`, body };
  }
  const shown = (text: string, body: string[]) => body.filter((l) => text.includes(l.slice(8, 40)));

  it('an 8192-bit-sized key whose BEGIN fell off the in-memory tail stays masked in previews, pages, the completion event and checkpoint.json', async () => {
    const dir = tempDir();
    const { pem, body } = fakeKey(98);
    writeFileSync(join(dir, 'id_rsa'), pem);
    const r = await ProcessRegistry.open({ stateDir: join(dir, 'state'), durable: false, maxOutputChars: 3000 });
    const events: unknown[] = [];
    r.on('completion', (e) => events.push(e));
    try {
      const s = await r.spawn(`cat ${join(dir, 'id_rsa')}; echo done`, { notifyOnComplete: true });
      cleanupGroup(s.pid);
      const w = await r.wait(s.id, { timeoutMs: 20_000 });
      expect(w.exitCode).toBe(0);
      expect(w.outputPreview).toContain('done');
      expect(w.outputPreview).toContain('[REDACTED PRIVATE KEY]');
      expect(shown(w.outputPreview, body)).toEqual([]);
      expect(shown((await r.poll(s.id)).outputPreview, body)).toEqual([]);
      const whole = await r.readLog(s.id, { limit: 1000 });
      expect(whole.droppedChars).toBeGreaterThan(0);
      for (let offset = 0; offset < whole.totalLines; offset += 7) {
        for (const view of ['plain', 'raw'] as const) {
          expect(shown((await r.readLog(s.id, { offset, limit: 5, view })).text, body)).toEqual([]);
        }
      }
      await until(() => events.length > 0, 10_000, 'the completion event');
      expect(JSON.stringify(events)).toContain('done');
      expect(shown(JSON.stringify(events), body)).toEqual([]);
    } finally {
      await r.close();
    }
    // The completion tail is kept in the checkpoint until the event is delivered.
    expect(shown(readFileSync(join(dir, 'state', 'checkpoint.json'), 'utf8'), body)).toEqual([]);
  });

  it('a running job in the middle of a key larger than the tail (no BEGIN, no END held) shows none of it', async () => {
    const dir = tempDir();
    const { pem, body } = fakeKey(98);
    writeFileSync(join(dir, 'id_rsa'), pem);
    const r = await ProcessRegistry.open({ maxOutputChars: 3000 });
    try {
      // BEGIN and 79 lines, then the job waits: the tail holds only key material.
      const s = await r.spawn(`head -n 80 ${join(dir, 'id_rsa')}; exec sleep 30`);
      cleanupGroup(s.pid);
      await until(async () => (await r.poll(s.id)).outputPreview.includes('[REDACTED PRIVATE KEY]'), 10_000, 'the key in the preview');
      await until(async () => (await r.readLog(s.id)).droppedChars > 0, 10_000, 'the BEGIN line dropped');
      expect(shown((await r.poll(s.id)).outputPreview, body)).toEqual([]);
      const page = await r.readLog(s.id, { limit: 1000 });
      expect(page.text).not.toContain('BEGIN');
      expect(page.lines.length).toBeGreaterThan(20);
      expect(shown(page.text, body)).toEqual([]);
      expect(shown((await r.readLog(s.id, { offset: 10, limit: 5, view: 'raw' })).text, body)).toEqual([]);
      await r.kill(s.id, { graceMs: 100 });
    } finally {
      await r.close();
    }
  });

  it('watch-pattern events never carry a line of key material', async () => {
    const dir = tempDir();
    const { pem, body } = fakeKey(30);
    writeFileSync(join(dir, 'id_rsa'), pem);
    const r = await ProcessRegistry.open({ watch: { cooldownMs: 0 } });
    const events: unknown[] = [];
    r.on('watch', (e) => events.push(e));
    try {
      const s = await r.spawn(`cat ${join(dir, 'id_rsa')}`, { watchPatterns: ['[A-Za-z0-9+/]{40}'] });
      cleanupGroup(s.pid);
      await r.wait(s.id, { timeoutMs: 20_000 });
      await until(() => events.length > 0, 10_000, 'a watch event');
      expect(JSON.stringify(events)).toContain('[REDACTED PRIVATE KEY]');
      expect(shown(JSON.stringify(events), body)).toEqual([]);
    } finally {
      await r.close();
    }
  });

  it('a page of a large durable log at any offset inside a key block masks it', async () => {
    const dir = tempDir();
    const { pem, body } = fakeKey(120, 'OPENSSH');
    writeFileSync(join(dir, 'key'), pem);
    const r = await ProcessRegistry.open({ stateDir: join(dir, 'state') });
    try {
      // More than LARGE_LOG_BYTES (16 MiB) before the key, so the log is paged by streaming.
      const s = await r.spawn(`head -c 17000000 /dev/zero | tr '\\0' a | fold -w 100; cat ${join(dir, 'key')}; seq 1 300`);
      cleanupGroup(s.pid);
      expect((await r.wait(s.id, { timeoutMs: 60_000 })).exitCode).toBe(0);
      const last = await r.readLog(s.id, { limit: 500 });
      expect(last.totalLines).toBeGreaterThan(170_000);
      const keyStart = last.totalLines - 300 - 122;
      for (const offset of [keyStart - 3, keyStart + 1, keyStart + 40, keyStart + 100, keyStart + 119]) {
        const page = await r.readLog(s.id, { offset, limit: 20 });
        expect(shown(page.text, body), `offset ${offset}`).toEqual([]);
        expect(page.lines.length).toBe(20);
      }
      expect(shown(last.text, body)).toEqual([]);
      expect(last.lines.at(-1)).toBe('300');
      expect(shown((await r.poll(s.id)).outputPreview, body)).toEqual([]);
    } finally {
      await r.close();
    }
  }, 120_000);

  it('credential-named values in env dumps and JSON are masked whatever printed them', async () => {
    const r = await ProcessRegistry.open({});
    const secret = 'Xq7vTn3pLw9sKd2m';
    try {
      for (const command of ['/usr/bin/env', 'env -0', 'echo "X_PASSWORD=$X_PASSWORD"', 'printf \'{"password": "%s"}\\n\' "$X_PASSWORD"', 'node -e "console.log(JSON.stringify({apiKey: process.env.X_PASSWORD}))"']) {
        const s = await r.spawn(command, { env: { X_PASSWORD: secret } });
        cleanupGroup(s.pid);
        const w = await r.wait(s.id, { timeoutMs: 20_000 });
        expect(w.exitCode, command).toBe(0);
        expect(w.outputPreview, command).not.toContain(secret);
        expect((await r.readLog(s.id)).text, command).not.toContain(secret);
      }
    } finally {
      await r.close();
    }
  });

  it('password flags and credential prefixes never reach checkpoint.json, session.json or list', async () => {
    const dir = tempDir();
    const r = await ProcessRegistry.open({ stateDir: dir, durable: false });
    const commands = [
      'true --password=Pw1SecretValue',
      'mysql -u root -pPw2SecretValue db; mariadb --password=Pw3SecretValue || true',
      'curl --user=u:Pw4SecretValue http://127.0.0.1:9 || true',
      'curl -uu:Pw5SecretValue http://127.0.0.1:9 || true',
      'sshpass -p Pw6SecretValue true || true',
      'docker login -p Pw7SecretValue registry.example || true',
      'openssl enc -k Pw8SecretValue -in /dev/null || true',
      'PGPASSWORD=123 true',
      'PGPASSWORD=/tmp/Pw9 true',
      'echo postgres://app:Pw10/Secret@db.internal/x',
      'echo admin:Pw11SecretValue@db.internal',
      // Issue 12 follow-up (attack a22): a secret on stdin, after a login verb, in a user,password pair.
      ...['lftp -u user,Pw12Secret h', 'vault login Pw13Secret', 'gh auth login --with-token <<< Pw14Secret', 'sqlcmd -S h -U sa -P Pw15Secret', 'gpg --passphrase Pw16Secret -d f', 'ssh-keygen -N Pw17Secret -f k', 'echo Pw18Secret | docker login -u me --password-stdin', './run --auth Pw19Secret'].map((c) => `true || ${c}`),
    ];
    try {
      for (const c of commands) {
        const s = await r.spawn(c);
        cleanupGroup(s.pid);
        await r.wait(s.id, { timeoutMs: 20_000 });
      }
      let stored = readFileSync(join(dir, 'checkpoint.json'), 'utf8') + JSON.stringify(await r.list());
      const sessions = join(dir, 'sessions');
      for (const d of readdirSync(sessions)) {
        const f = join(sessions, d, 'session.json');
        if (existsSync(f)) stored += readFileSync(f, 'utf8');
      }
      for (const secret of ['Pw1Secret', 'Pw2Secret', 'Pw3Secret', 'Pw4Secret', 'Pw5Secret', 'Pw6Secret', 'Pw7Secret', 'Pw8Secret', 'PGPASSWORD=123', '/tmp/Pw9', 'Pw10/Secret', 'Pw11Secret', ...Array.from({ length: 8 }, (_, k) => `Pw${12 + k}Secret`)]) {
        expect(stored).not.toContain(secret);
      }
      expect(stored).toContain('docker login -p ');
    } finally {
      await r.close();
    }
  });
});

// Issue 12 follow-up: the kinds an attacker found leaking (attacks a04, a05, a17, a22).
describe('redaction by kind, as a reader sees the text (issue 12 follow-up)', () => {
  const S = 'Zq8xP2mWv7Lr4Kt9';

  /** Runs `command` to its end; everything wait, poll and readLog (plain and raw) show of it. */
  async function shownEverywhere(r: Awaited<ReturnType<typeof ProcessRegistry.open>>, command: string): Promise<string> {
    const s = await r.spawn(command);
    cleanupGroup(s.pid);
    const w = await r.wait(s.id, { timeoutMs: 20_000 });
    expect(w.exitCode, command).toBe(0);
    return JSON.stringify([w, await r.poll(s.id), await r.readLog(s.id, { view: 'plain' }), await r.readLog(s.id, { view: 'raw' })]);
  }

  it('a line whose secret only a reader sees is masked as read; lines without one keep their escapes', () => {
    const coloured = '\u001b[32mPASS\u001b[0m tests/a.test.ts';
    for (const hidden of [`DB_PASS\u001b[0mWORD=${S}`, `DB_PASSWORX\bD=${S}`, `DB_PASS\u200bWORD=${S}`, `DB_PASSWORD\uff1d${S}`, `\u001b]0;title\u0007API_TOKEN=${S}`]) {
      const out = redact(`${coloured}\n${hidden}\nok`);
      expect(out, JSON.stringify(hidden)).not.toContain(S);
      expect(out.split('\n')).toHaveLength(3);
      expect(out.split('\n')[0]).toBe(coloured);
      expect(out.split('\n')[2]).toBe('ok');
    }
    expect(redact(`${coloured}\nno secret\b here`)).toBe(`${coloured}\nno secret\b here`);
  });

  it('secrets in other syntaxes and hidden by escapes never leave through wait, poll or readLog', async () => {
    const dir = tempDir();
    const shapes = {
      ansiName: `DB_PASS\u001b[0mWORD=${S}`,
      osc: `\u001b]0;x\u0007DB_PASSWORD=${S}`,
      backspace: `DB_PASSWORX\bD=${S}`,
      crHide: `harmless line\rDB_PASSWORD=${S}`,
      fish: `set -gx DB_PASSWORD ${S}`,
      toml: `password = "${S}"`,
      xml: `<password>${S}</password>`,
      netrc: `machine h login me password ${S}`,
      k8s: `{"name":"DB_PASSWORD","value":"${S}"}`,
      k8sYaml: `env:\n  - name: DB_PASSWORD\n    value: ${S}`,
      ssh2: `---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nP2/56wAAA${S}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----`,
      keyCRLF: `-----BEGIN RSA PRIVATE KEY-----\r\nMIIEowIBAAKCAQEA${S}\r\n-----END RSA PRIVATE KEY-----`,
    };
    const r = await ProcessRegistry.open({ stateDir: join(dir, 'state') });
    try {
      for (const [name, text] of Object.entries(shapes)) {
        const file = join(dir, `${name}.txt`);
        writeFileSync(file, `${text}\nafter\n`);
        const shown = await shownEverywhere(r, `cat ${file}`);
        expect(shown, name).toContain('after');
        expect(shown, name).not.toContain(S);
      }
    } finally {
      await r.close();
    }
  });

  it('fragments of a real RSA key without their BEGIN line never leave: body only, cat -A, re-wrapped at 76 columns', async () => {
    const dir = tempDir();
    const key = join(dir, 'id_rsa');
    execFileSync('openssl', ['genrsa', '-out', key, '2048'], { stdio: 'ignore' });
    const body = readFileSync(key, 'utf8').trim().split('\n').slice(1, -1);
    const pieces = body.map((l) => l.slice(8, 40));
    const r = await ProcessRegistry.open({ stateDir: join(dir, 'state') });
    try {
      for (const command of [`sed -n 2,20p ${key}`, `cat -A ${key}`, `sed 1d ${key} | sed '$d' | tr -d '\\n' | fold -w 76`, `openssl pkey -in ${key} | sed 1d | sed '$d'`]) {
        const shown = await shownEverywhere(r, `${command}; echo done`);
        expect(shown, command).toContain('done');
        expect(pieces.filter((p) => shown.includes(p)), command).toEqual([]);
      }
    } finally {
      await r.close();
    }
  });
});

describe('characters a terminal does not show cannot unmask a private key (attack on issue 14)', () => {
  const body = Array.from({ length: 12 }, (_, i) => `MIIEow${i}${randomBytes(45).toString('base64')}`.slice(0, 64));
  // Where the invisible character goes: after every line (the reported case), inside the
  // markers, and in front of every line; each of the kind's characters.
  const placements = {
    lineEnds: (c: string) => `-----BEGIN RSA PRIVATE KEY-----${c}\n${body.map((l) => l + c).join('\n')}\n-----END RSA PRIVATE KEY-----${c}\n`,
    insideMarkers: (c: string) => `-----BEGIN RSA PRI${c}VATE KEY-----\n${body.join('\n')}\n-----END RSA PRIVATE${c} KEY-----\n`,
    lineStarts: (c: string) => `${c}-----BEGIN OPENSSH PRIVATE KEY-----\n${body.map((l) => c + l).join('\n')}\n${c}-----END OPENSSH PRIVATE KEY-----\n`,
  };
  const chars = { nul: '\u0000', del: '\u007f', vt: '\u000b', zeroWidthSpace: '\u200b', bom: '\ufeff', wordJoiner: '\u2060' };
  const shown = (text: string) => body.filter((l) => text.includes(l.slice(8, 40)));

  it('redact() masks every body line whatever the character and wherever it sits', () => {
    for (const [where, make] of Object.entries(placements)) {
      for (const [name, c] of Object.entries(chars)) {
        const out = redact(`before\n${make(c)}after\n`);
        expect(shown(out), `${where}/${name}`).toEqual([]);
        expect(out, `${where}/${name}`).toContain('after');
        expect(out.split('\n').length, `${where}/${name}: lines kept`).toBe(body.length + 5);
      }
    }
  });

  it('through wait, poll and pages of five lines at every offset, durable and in memory', async () => {
    const dir = tempDir();
    const file = join(dir, 'key.txt');
    writeFileSync(file, `building\n${placements.lineEnds('\u0000')}done\n`);
    for (const durable of [true, false]) {
      const r = await ProcessRegistry.open({ stateDir: join(dir, `state-${durable}`), durable });
      try {
        const s = await r.spawn(`cat ${file}`);
        cleanupGroup(s.pid);
        const w = await r.wait(s.id, { timeoutMs: 20_000 });
        expect(w.exitCode).toBe(0);
        expect(shown(JSON.stringify([w, await r.poll(s.id)])), `durable ${durable}`).toEqual([]);
        for (let offset = 0; offset < body.length + 4; offset++) {
          const page = await r.readLog(s.id, { offset, limit: 5 });
          expect(shown(page.text), `durable ${durable}, offset ${offset}`).toEqual([]);
        }
      } finally {
        await r.close();
      }
    }
  });
});

describe('URL credentials found from each ://, not tried at every word (issue 14 speed-up)', () => {
  it('masks the password wherever the scheme starts and whatever the password holds', () => {
    const hex = 'a3f9'.repeat(16);
    const cases: [string, string][] = [
      [`x.https://user:hunter2secret@db.example.com/x`, 'hunter2secret'],
      [`see redis://default:${hex}@cache:6379 and postgres://a:Zq8xP2mWv7Lr@db/x`, hex],
      [`see redis://default:${hex}@cache:6379 and postgres://a:Zq8xP2mWv7Lr@db/x`, 'Zq8xP2mWv7Lr'],
      [`amqp://u:p4ss://word99@broker:5672`, 'p4ss://word99'],
      [`"mongodb+srv://admin:S3cretValue1@cluster0.example.net"`, 'S3cretValue1'],
    ];
    for (const [text, secret] of cases) expect(redact(text), text).not.toContain(secret);
    // A port is not a password, and a 40-letter word before :// is no scheme.
    expect(redact('http://localhost:8080/path')).toBe('http://localhost:8080/path');
    const long = `${'a'.repeat(40)}://u:pw@host`;
    expect(redact(long)).toBe(long);
  });
});
