// Output views (DESIGN sections 4-5) and redaction (section 8): pure functions.
import { describe, expect, it } from 'vitest';
import { OutputTail } from '../ts/output/tail.js';
import { pageLines, plainText } from '../ts/output/views.js';
import { redact } from '../ts/policy/redact.js';
import { resolveSessionId } from '../ts/session/ids.js';

describe('output views', () => {
  it('the rolling tail keeps the last maxChars and counts what it dropped', () => {
    const t = new OutputTail(10);
    for (let i = 0; i < 100; i++) t.append('abc');
    expect(t.text()).toBe('cabcabcabc');
    expect(t.droppedChars).toBe(290);
    expect(t.totalChars).toBe(300);
  });

  // Issue 28, kind 3: a character the cap cuts is dropped whole and counted in full.
  it('the rolling tail counts a character cut by the cap in all its bytes, whole chunks or not', () => {
    for (const [parts, cap, kept, dropped] of [
      [['a🎉bc'], 3, 'bc', 5],
      [['a', '🎉', 'b', 'c'], 3, 'bc', 5],
      [['ééé', 'xy'], 3, 'xy', 6],
      [['日本語'], 4, '語', 6],
      [['x🎉'], 2, '', 5],
    ] as const) {
      const t = new OutputTail(cap);
      for (const p of parts) t.append(p);
      expect(t.droppedChars, parts.join('')).toBe(dropped);
      expect(t.text()).toBe(kept);
      expect(t.droppedChars).toBe(dropped);
      expect(t.heldChars + t.droppedChars).toBe(t.totalChars);
    }
  });

  it('plain text drops ANSI colours and OSC titles and keeps the latest progress frame', () => {
    expect(plainText('\u001b[31mred\u001b[0m\r\n\u001b]0;title\u0007ok\n')).toBe('red\nok\n');
    expect(plainText('progress 10%\rprogress 40%')).toBe('progress 40%');
  });

  it('pageLines counts lines without a phantom last line', () => {
    expect(pageLines('a\nb\n')).toMatchObject({ lines: ['a', 'b'], totalLines: 2 });
    expect(pageLines('')).toMatchObject({ lines: [], totalLines: 0, showing: 'no lines (of 0)' });
    expect(() => pageLines('a', { offset: -1 })).toThrow(RangeError);
  });
});

describe('redaction', () => {
  it('masks vendor tokens, bearer headers and URL passwords', () => {
    const gh = 'ghp_' + 'x'.repeat(36);
    const out = redact(`token ${gh} and Authorization: Bearer abc.def-123456789012 and postgres://u:hunter2pass@db/x`);
    expect(out).not.toContain(gh);
    expect(out).not.toContain('abc.def-123456789012');
    expect(out).not.toContain('hunter2pass');
    expect(out).toContain('Authorization: Bearer ');
    expect(out).toContain('postgres://u:');
  });

  it('masks sk- keys and leaves look-alikes alone', () => {
    expect(redact('OPENAI=sk-proj-abcdefghijklmnopqrstuvwx123')).not.toContain('abcdefghijklmnopqrstuvwx');
    for (const benign of ['MAX_TOKENS=100', 'tokenizer', 'KEYBOARD=us', 'sk-learn', 'git 3f2c1e9a8b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e']) {
      expect(redact(benign)).toBe(benign);
    }
  });
});

describe('session id prefixes', () => {
  const ids = ['proc_aaaa11112222', 'proc_aaab33334444'];
  it('resolves a unique prefix and rejects ambiguous or short ones', () => {
    expect(resolveSessionId(ids, 'aaaa')).toBe('proc_aaaa11112222');
    expect(() => resolveSessionId(ids, 'aaa')).toThrow(/4 to 12 hex characters/);
    expect(() => resolveSessionId([...ids, 'proc_aaaa99998888'], 'proc_aaaa')).toThrow(/matches 2 sessions/);
  });
});

describe('output budget and views', () => {
  it('shrinkTo trims at once and counts what it dropped', () => {
    const t = new OutputTail(100);
    t.append('a'.repeat(80));
    t.shrinkTo(30);
    expect(t.text()).toBe('a'.repeat(30));
    expect(t.droppedChars).toBe(50);
  });

  it('the raw view keeps escapes and carriage returns; the plain view does not', () => {
    const text = '\u001b[31mred\u001b[0m\nstep 1\rstep 2\n';
    expect(pageLines(text, { view: 'raw' }).lines).toEqual(['\u001b[31mred\u001b[0m', 'step 1\rstep 2']);
    expect(pageLines(text).lines).toEqual(['red', 'step 2']);
  });
});
