// Issue 28, kind 3: what the in-memory cap dropped is counted in the job's own bytes as
// written (a character the cap cuts is dropped whole and counted whole), and the cap that
// dropped it is named.
import { describe, expect, it } from 'vitest';
import { handleToolCall, ProcessRegistry } from '../dist/index.mjs';

describe('the in-memory cap counts what it dropped in the job`s bytes', () => {
  it("printf 'a\\xf0\\x9f\\x8e\\x89bc' under maxOutputChars 3 drops 5 bytes; other multi-byte cuts likewise", async () => {
    const r = await ProcessRegistry.open({ maxOutputChars: 3 });
    try {
      for (const [printf, bytes, dropped] of [
        ['a\\xf0\\x9f\\x8e\\x89bc', 7, 5],
        ['\\xc3\\xa9\\xc3\\xa9\\xc3\\xa9xy', 8, 6],
        ['\\xe6\\x97\\xa5\\xe6\\x9c\\xacx', 7, 6],
        ['abcdef', 6, 3],
      ] as const) {
        const s = await r.spawn(`printf '${printf}'`);
        await r.wait(s.id, { timeoutMs: 10_000 });
        const log = await r.readLog(s.id);
        expect(log.droppedChars, printf).toBe(dropped);
        expect(log.showing).toContain(`dropped by the in-memory cap (maxOutputChars): ${dropped} bytes`);
        const tool = (await handleToolCall(r, 'process', { action: 'log', session_id: s.id })) as { note: string };
        expect(tool.note).toContain(`maxOutputChars): ${dropped} bytes`);
        expect(bytes - dropped).toBeLessThanOrEqual(3);
      }
    } finally {
      await r.close();
    }
  });
});
