// Redaction against real jobs: what leaves every surface of a registry (previews, pages,
// events, the checkpoint) when a job prints secrets, private keys and the characters a
// terminal does not show. The pure redact() corpus is in redaction.test.ts.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';
import { redact } from '../ts/policy/redact.js';
import { cleanupGroup, cli, tempDir, until } from './support.js';

/** The first 8 characters in a row of `secret` that `text` shows (a mask keeps at most 6 and 4). */
function leakedPiece(text: string, secret: string): string | undefined {
  for (let i = 0; i + 8 <= secret.length; i++) if (text.includes(secret.slice(i, i + 8))) return secret.slice(i, i + 8);
  return undefined;
}

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
      // Polled, not waited for: a wait would take the completion (listeners hear only those queued).
      await until(async () => (await r.poll(s.id)).status === 'exited', 20_000, 'the end');
      const w = await r.poll(s.id);
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

  // Issue 27, kind 7: each line of the key carries a log prefix, so no line alone looks like
  // key material; the watcher reads it with the lines before it, as a page does.
  for (const [label, prefix, width] of [
    ['RSA', '[api] ', 64],
    ['OPENSSH', '2024-06-01T12:00:00Z app[7]: ', 40],
  ] as const) {
    it(`watch events of a ${label} key whose lines carry a log prefix (${JSON.stringify(prefix)}) are masked whole`, async () => {
      const dir = tempDir();
      const body = Array.from({ length: 12 }, () => randomBytes(48).toString('base64').slice(0, width));
      const text = [`-----BEGIN ${label} PRIVATE KEY-----`, ...body, `-----END ${label} PRIVATE KEY-----`, 'after the key'].map((l) => `${prefix}${l}`).join('\n');
      writeFileSync(join(dir, 'log'), `${text}\n`);
      const r = await ProcessRegistry.open({ watch: { cooldownMs: 0, maxPerMinute: 1000 } });
      const events: { line: string }[] = [];
      r.on('watch', (e) => events.push(e as { line: string }));
      try {
        const s = await r.spawn(`cat ${join(dir, 'log')}`, { watchPatterns: ['.'] });
        cleanupGroup(s.pid);
        await r.wait(s.id, { timeoutMs: 20_000 });
        await until(() => events.some((e) => e.line.includes('after the key')), 10_000, 'the line after the key');
        expect(events.filter((e) => e.line === '[REDACTED PRIVATE KEY]')).toHaveLength(14);
        expect(shown(JSON.stringify(events), body)).toEqual([]);
        // Before the change each body line left whole, one per event; the same lines through a page are masked too.
        expect(shown((await r.readLog(s.id)).text, body)).toEqual([]);
      } finally {
        await r.close();
      }
    });
  }

  // Issue 27, kind 8: the in-memory cap cuts a line inside a secret, or cuts its name off;
  // what is kept of that line must never be shown as it is.
  const slack = `xoxb-5523459792831-1999056692257-${randomBytes(18).toString('hex')}`;
  const password = `Tr0ub4dor-${randomBytes(8).toString('hex')}`;
  for (const [what, line, secret, lines] of [
    // Each padded so that the 1000-byte cap cuts 30 bytes into the line.
    ['a token that starts the only line', `${slack}${'.'.repeat(1000 + 30 - slack.length - 1)}`, slack, 1],
    ['a value whose name falls off', `password = "${password}" ${'p'.repeat(1000 + 30 - 15 - password.length - 1)}`, password, 1],
    ['a token that starts a line before others', `${slack} ${'x'.repeat(1000 + 30 - slack.length - 1 - 21)}\nnext line\nlast line`, slack, 3],
  ] as const) {
    it(`the cap cutting ${what} keeps no piece of it in wait, poll and the tool's log (durable and not)`, async () => {
      const dir = tempDir();
      writeFileSync(join(dir, 'out'), `${line}\n`);
      for (const durable of [false, true]) {
        const r = await ProcessRegistry.open({ stateDir: join(dir, `state-${durable}`), durable, maxOutputChars: 1000 });
        try {
          const s = await r.spawn(`cat ${join(dir, 'out')}`);
          cleanupGroup(s.pid);
          const w = await r.wait(s.id, { timeoutMs: 20_000 });
          const p = await r.poll(s.id);
          const log: any = await handleToolCall(r, 'process', { action: 'log', session_id: s.id });
          for (const [surface, text] of [['wait', w.outputPreview], ['poll', p.outputPreview], ['tool log', JSON.stringify(log)]] as const) {
            expect(leakedPiece(text, secret), `${surface} (durable ${durable}): ${text.slice(0, 120)}`).toBeUndefined();
          }
          if (lines === 3) expect(p.outputPreview).toContain('last line');
        } finally {
          await r.close();
        }
      }
    });
  }

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

// Issue 27: the core's rule set (gitleaks) is reached from every surface, through the one
// redact(): a token only the rule set knows, in a job's output.
describe("the core's token engine on every surface (issue 27)", () => {
  it('an Infracost and a Sourcegraph token are masked in poll, readLog plain and raw, the tool log and CLI log --raw', async () => {
    const infracost = `ico-${randomBytes(16).toString('hex')}`;
    const sourcegraph = `sgp_${randomBytes(8).toString('hex')}_${randomBytes(20).toString('hex')}`;
    const dir = tempDir();
    writeFileSync(join(dir, 'out'), `using ${infracost} now\nsrc login with ${sourcegraph}\n`);
    const state = join(dir, 'state');
    const r = await ProcessRegistry.open({ stateDir: state });
    try {
      const s = await r.spawn(`cat ${join(dir, 'out')}`);
      cleanupGroup(s.pid);
      await r.wait(s.id, { timeoutMs: 20_000 });
      const tool: any = await handleToolCall(r, 'process', { action: 'log', session_id: s.id });
      const texts = {
        poll: (await r.poll(s.id)).outputPreview,
        plain: (await r.readLog(s.id)).text,
        raw: (await r.readLog(s.id, { view: 'raw' })).text,
        tool: JSON.stringify(tool),
        cli: (await cli(['log', s.id, '--raw', '--state-dir', state])).stdout,
      };
      for (const [surface, text] of Object.entries(texts)) {
        expect(text, surface).toContain('using ');
        expect(leakedPiece(text, infracost), `${surface}: ${text}`).toBeUndefined();
        expect(leakedPiece(text, sourcegraph), `${surface}: ${text}`).toBeUndefined();
      }
    } finally {
      await r.close();
    }
  });
});
