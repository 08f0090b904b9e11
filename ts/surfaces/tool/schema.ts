/**
 * The LLM tools' input schemas (`process_start`, `process`), written once with zod and
 * exported as JSON Schema (`z.toJSONSchema`). The handler that runs them is `tool.ts`.
 */
import { z } from 'zod';
import { MAX_PAGE_BYTES, MIN_PAGE_BYTES } from '../../output/paging.js';
import { DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS } from './budget.js';
import { UNREPORTED_WAIT_MS } from './wait.js';

const maxChars = z
  .number()
  .int()
  .min(MIN_MAX_CHARS)
  .max(MAX_MAX_CHARS)
  .describe(
    `Character budget of the result's output and notifications (default ${DEFAULT_MAX_CHARS}, ${MIN_MAX_CHARS} to ${MAX_MAX_CHARS}); longer output keeps its head and tail and says what was cut and how to read it.`,
  );

const sessionId = z
  .union([z.string(), z.number()])
  .describe('Session id (proc_ + 12 hex) or a unique prefix of at least 4 hex characters.');

export const processInput = z
  .object({
    action: z
      .enum(['list', 'poll', 'log', 'wait', 'kill', 'signal', 'write', 'submit', 'close', 'screen', 'notifications'])
      .describe(
        'What to do. kill: end the whole process tree (SIGTERM, then SIGKILL after grace_ms); signal: send one signal to the job (no escalation); screen: what a pty session shows now; notifications: the pending completion and watch events (every result also carries them).',
      ),
    session_id: sessionId.optional().describe('The session (every action but list).'),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(86_400_000)
      .optional()
      .describe(
        `wait: give up after this many milliseconds (default 30000, at most a day; at most ${UNREPORTED_WAIT_MS} when the host takes no progress notifications: the result then says the job is still running, call again).`,
      ),
    cursor: z
      .string()
      .max(200)
      .optional()
      .describe('poll/log/wait: the cursor of an earlier result of this session; the result then holds only the output after it (as `output` for poll and wait, `text` for log).'),
    filter: z
      .string()
      .min(1)
      .max(512)
      .optional()
      .describe('log (and poll/wait with a cursor): only output lines matching this regular expression (Rust regex syntax, linear time: no look-around or backreferences; each line is matched on its first 64 KiB), each led by its line number.'),
    max_chars: maxChars.optional(),
    offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe('log: first line, 0-based: 0 is the first line (default: the last `limit` lines).'),
    limit: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional().describe('log: number of lines (default 200).'),
    max_bytes: z
      .number()
      .int()
      .min(MIN_PAGE_BYTES)
      .max(MAX_PAGE_BYTES)
      .optional()
      .describe('log: byte cap of the page (default 1048576, at most 4 MiB); lines that do not fit are left out (see showing), a longer line is cut with a marker.'),
    grace_ms: z
      .number()
      .int()
      .min(0)
      .max(3_600_000)
      .optional()
      .describe('kill: milliseconds between SIGTERM and SIGKILL (default 2000, at most an hour; 0: SIGKILL right after SIGTERM).'),
    signal: z
      .string()
      .max(16)
      .optional()
      .describe('signal: the signal to send: SIGINT (Ctrl-C), SIGTERM, SIGHUP, SIGQUIT, SIGKILL, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT, SIGSTOP, SIGTSTP or SIGWINCH.'),
    data: z.string().optional().describe('write: raw text to send to stdin.'),
    text: z.string().optional().describe('submit: a line to send to stdin, followed by Enter; without it, Enter alone.'),
    acknowledge: z.boolean().optional().describe('poll: also consume the completion notification.'),
    task_id: z.string().optional().describe('list: only this task.'),
    session_key: z.string().optional().describe('list: sessions of this conversation.'),
  })
  .strict();

export const startInput = z
  .object({
    command: z.string().min(1).describe('Shell command, run as `bash -c <command>` in the background.'),
    workdir: z.string().optional().describe('Working directory.'),
    env: z.record(z.string(), z.string()).optional().describe('Extra environment variables.'),
    pty: z
      .union([z.boolean(), z.object({ cols: z.number().int().min(1), rows: z.number().int().min(1) }).strict()])
      .optional()
      .describe('Run under a pseudo-terminal (for interactive programs).'),
    stdin: z.boolean().optional().describe('Keep a stdin pipe open for write/submit/close.'),
    notify_on_complete: z.boolean().optional().describe('Queue a notification when the command ends.'),
    watch_patterns: z.array(z.string().min(1)).optional().describe('Regular expressions; a matching output line raises a notification.'),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(2_147_483_647)
      .optional()
      .describe('Kill the whole process tree this many milliseconds after the start (its result then says deadline_exceeded: true). Default: no deadline.'),
    environment: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe(
        'Run the command in an environment the host configured (a container, another machine, a pod), by its name only; an unknown name is refused with the configured names. Default: this machine.',
      ),
    yield_ms: z
      .number()
      .int()
      .min(0)
      .max(UNREPORTED_WAIT_MS)
      .optional()
      .describe(
        `Wait up to this many milliseconds (at most ${UNREPORTED_WAIT_MS}) for the command to end: if it does, the result holds its exit code and output at once; else the session_id and the output so far. Default 0: return at once.`,
      ),
    max_chars: maxChars.optional(),
    task_id: z.string().optional(),
    session_key: z.string().optional(),
  })
  .strict();

/** A tool definition in the plain `{ name, description, input_schema }` shape (Anthropic-style). */
export interface ToolDefinition {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema) as Record<string, unknown>;
  return rest;
}

/** The two tool definitions. */
export function toolDefinitions(): ToolDefinition[] {
  return [
    {
      name: 'process_start',
      description:
        'Start a shell command in the background (dev servers, builds, test runs). Returns its session_id at once (or, with yield_ms, its result when it ends that soon); use the `process` tool to read its output, wait for it, or stop it.',
      input_schema: jsonSchema(startInput),
    },
    {
      name: 'process',
      description:
        'Manage background processes: list sessions; poll status and recent output; log (output lines, paged, optionally filtered by a regex); wait for the end (with a timeout); kill the whole process tree; write/submit/close stdin; notifications. Results carry a cursor: pass it back to get only the output after it. Output is cut to max_chars (head and tail, with a note on how to read what was cut). Every result carries the pending notifications (completions, watch hits) of your sessions.',
      input_schema: jsonSchema(processInput),
    },
  ];
}

/** The same tools in OpenAI's `{ type: 'function', function: { name, description, parameters } }` shape. */
export function openAiTools(): { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }[] {
  return toolDefinitions().map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.input_schema } }));
}

