/**
 * The MCP tools' `outputSchema`s: the JSON object each call returns as `structuredContent`
 * (the library tool's snake_case result, or `{ error: { code, message } }` with `isError`).
 *
 * Clients validate every result against these (the official SDK's `callTool` throws on a
 * mismatch), so they type only the keys whose shape is part of the contract and leave
 * every object open (`additionalProperties` allowed): a key the tool adds later never
 * turns a good result into a client-side failure. Every key is optional because one
 * schema covers all actions of a tool.
 */

const nullableInt = { type: ['integer', 'null'] };
const nullableString = { type: ['string', 'null'] };

const error = {
  type: 'object',
  description: 'Present when the call failed (isError is set): procward\'s error code (UNKNOWN_SESSION, INVALID_ARGUMENT, SESSION_EXITED, ...) and a message saying what to do.',
  properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
  required: ['code', 'message'],
};

/** Keys of one session as poll, wait and list give them. */
const session = {
  session_id: { type: 'string', description: 'proc_ + 12 hex.' },
  status: { enum: ['running', 'exited'] },
  pid: { ...nullableInt, description: 'The job\'s PID (its process group and session id too); null when unknown.' },
  command: { type: 'string', description: 'The command, redacted.' },
  exit_code: { ...nullableInt, description: 'Once exited: the exit code, null when a signal ended the job or the end was not seen.' },
  signal: { ...nullableString, description: 'Once exited: the terminating signal\'s name (SIGKILL), or null.' },
  reason: { ...nullableString, description: 'Once exited: exited, killed, lost or failed_start.' },
  pid_scope: { enum: ['host', 'sandbox'], description: 'sandbox: the job runs in a configured environment and its PID is that side\'s; host: on this machine (process_start always says; list and poll only for sandbox sessions).' },
  environment: { type: 'string', description: 'The configured environment the job runs in, by name; absent for a job of this host.' },
};

function objectSchema(description: string, properties: Record<string, object>): { type: 'object'; [key: string]: unknown } {
  return { type: 'object', description, properties: { ...properties, error }, additionalProperties: true };
}

/** One output schema per MCP tool. */
export const outputSchemas = {
  process_start: objectSchema('The started session (or, with yield_ms, its result when it ended in time).', session),
  process_read: objectSchema('list: sessions; poll and wait: one session with output_preview; wait also timed_out and process_running; log: a page of output lines as text; notifications: pending events.', {
    ...session,
    sessions: { type: 'array', items: { type: 'object', properties: session, additionalProperties: true } },
    output_preview: { type: 'string', description: 'The last output, ANSI-stripped and redacted.' },
    timed_out: { type: 'boolean', description: 'wait: the timeout passed (or the call was cancelled) before the job ended.' },
    process_running: { type: 'boolean' },
    text: { type: 'string', description: 'log: the page\'s lines joined with newlines, redacted.' },
    total_lines: { type: 'integer' },
    showing: { type: 'string', description: 'log: which lines the page holds and what was left out.' },
  }),
  process_control: objectSchema('kill: the tree kill\'s report; write/submit: bytes sent; close: stdin closed.', {
    ...session,
    outcome: { type: 'string', description: 'kill: killed, or already_exited when the job had ended before.' },
    foreground_group: { type: 'integer', description: 'signal: the PTY terminal\'s foreground process group that got a terminal signal (SIGINT, SIGQUIT, SIGTSTP), when job control made it apart from the job\'s own.' },
    kill_signal: { ...nullableString, description: 'kill: the last signal it sent (SIGTERM, or SIGKILL after escalation), null when it signalled nothing; signal is how the job ended (null when it exited by itself, say from a TERM trap).' },
    survivors: { type: 'array', description: 'kill: processes still alive after SIGKILL (an error when not empty).' },
    bytes: { type: 'integer', description: 'write/submit: bytes written to stdin.' },
    closed: { type: 'boolean' },
  }),
} as const;
