// Redaction against a corpus of realistic fake secrets and benign look-alikes
// (fixtures/redaction-corpus.ts), plus the streaming cases: tokens split across chunks or
// broken by ANSI sequences, and the shape of the masks. What leaves a real registry's
// surfaces is in redaction-registry.test.ts.
import { describe, expect, it } from 'vitest';
import { plainText } from '../ts/output/views.js';
import { redact, redactCommand } from '../ts/policy/redact.js';
import { BENIGN, SECRETS, type Sample } from './fixtures/redaction-corpus.js';

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

// Issue 27: the event loop stays free. redactAsync gives what redact gives, in slices.
describe('redactAsync', () => {
  it('equals redact() on 600 KiB with a key block and tokens across its 64 KiB slices, and yields between slices', async () => {
    const { redactAsync } = await import('../ts/policy/redactasync.js');
    const ghp = 'ghp_' + 'Qm7Xc2LpV9sKd4TzR8nWb1Yh6Gf3Ja5Eu0Ni';
    const keyLines = Array.from({ length: 3000 }, (_, i) => `${'AbCdEfGh'.repeat(8)}`.slice(0, 63) + String(i % 10));
    const filler = (n: number) => Array.from({ length: n }, (_, i) => `2024-06-01T12:00:00Z INFO line ${i} of the build with some text`).join('\n');
    const text = [filler(3000), `token ${ghp}`, '-----BEGIN RSA PRIVATE KEY-----', ...keyLines, '-----END RSA PRIVATE KEY-----', filler(5000), `DB_PASSWORD=s3cr3t-${'x'.repeat(20)}`, filler(10)].join('\n');
    expect(text.length).toBeGreaterThan(600 * 1024);
    let ticks = 0;
    const tick = () => {
      ticks++;
      if (ticks < 1000) setImmediate(tick);
    };
    setImmediate(tick);
    const out = await redactAsync(text);
    expect(ticks).toBeGreaterThan(3);
    expect(out).toBe(redact(text));
    expect(out).not.toContain(ghp);
    expect(out).not.toContain(keyLines[1500]);
    expect(out).not.toContain('s3cr3t-xxxx');
  });
});
