/**
 * The LLM tool's result types: one shape per action, snake_case keys (a session's `id` is
 * `session_id`), each with the pending `notifications` of the call's scope, or a
 * {@link ToolError}. Narrow with `'error' in result`, then by a key (`'pid' in result`).
 */
import type { ProcwardErrorCode } from '../../errors.js';
import type { SessionStatus } from '../../session/record.js';
import type { KillResult, PollResult, SessionSummary, SignalResult, Snake, TerminalScreen, WaitResult } from '../../types.js';
import type { ToolEvent } from './notify.js';
import type { ToolOutput } from './output.js';

/** A failed tool call: procward's error code (or `UNKNOWN_TOOL`, or `ERROR` for a foreign error), its message and details. */
export interface ToolError {
  error: { code: ProcwardErrorCode | 'UNKNOWN_TOOL' | 'ERROR'; message: string; details?: Record<string, unknown> };
}

/**
 * What every successful result may carry: the scope's pending events, and how many did not
 * fit. (Type aliases, not interfaces, here: a result stays assignable to `Record<string, unknown>`.)
 */
export type ToolEvents = {
  notifications?: ToolEvent[];
  notifications_pending?: number;
};

/** Output read beside a result's other fields (`output`), with its cursor and what was cut. */
export type OutputRead = Omit<ToolOutput, 'session_id' | 'status' | 'text'> & { output: string };

/** `process_start`: the new session; with `yield_ms`, its end (when it came) and its output. */
export type StartToolResult = {
  session_id: string;
  pid: number | null;
  status: SessionStatus;
  command: string;
  /** `sandbox`: the job runs on the far side of an environment (its PID is that side's); `host`: on this machine. */
  pid_scope: 'host' | 'sandbox';
  /** The configured environment the job runs in, by name (absent for a job of this host, or one in an unnamed environment). */
  environment?: string;
  /** Host variables withheld from the job because they look like secrets (names only). */
  withheld_env?: string[];
  exit_code?: number | null;
  signal?: string | null;
  reason?: string | null;
  aborted?: true;
  note?: string;
} & Partial<OutputRead>;

/** `list`: the newest sessions that fit the budget. */
export type ListToolResult = {
  sessions: Snake<SessionSummary>[];
  /** Older sessions left out to fit `max_chars`. */
  sessions_omitted?: number;
  note?: string;
};

/** `poll` without a cursor: the summary, the 2000-character preview, a cursor to the output's end. */
export type PollToolResult = Snake<PollResult> & { cursor?: string };

/** `poll` with a cursor: the summary and the output after the cursor. */
export type PollSinceToolResult = Snake<SessionSummary> & OutputRead;

/** What a wait adds: why it ended early, when it did. */
type WaitEnd = {
  timed_out: boolean;
  process_running: boolean;
  /** The host aborted the call. */
  aborted?: true;
  /** `still running, call again` and the like. */
  note?: string;
};

/** `wait` without a cursor. */
export type WaitToolResult = Snake<WaitResult> & { cursor?: string; aborted?: true; note?: string };

/** `wait` with a cursor: the output after it. */
export type WaitSinceToolResult = Snake<SessionSummary> & WaitEnd & OutputRead;

/** `screen`: a PTY session's screen, its rows as one text within the budget. */
export type ScreenToolResult = Snake<Omit<TerminalScreen, 'lines'>> & {
  text: string;
  truncated?: { chars: number; lines: number; from_line: number; to_line: number };
};

/** A successful result, by action. */
export type ToolSuccess = ToolEvents &
  (
    | StartToolResult
    | ListToolResult
    | PollToolResult
    | PollSinceToolResult
    | WaitToolResult
    | WaitSinceToolResult
    | ToolOutput
    | Snake<KillResult>
    | Snake<SignalResult>
    | ScreenToolResult
    | { session_id: string; bytes: number }
    | { session_id: string; closed: true }
    | { notifications: ToolEvent[] }
  );

/** A tool result, or a {@link ToolError}. Narrow with `'error' in result`. */
export type ToolResult = ToolError | ToolSuccess;
