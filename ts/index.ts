/**
 * procward: a background process registry for Node.js agent runtimes.
 *
 * - {@link ProcessRegistry}: sessions for background jobs (spawn, poll, wait, readLog, kill,
 *   list), with crash recovery from a checkpoint when opened with a `stateDir`.
 * - Native helpers: {@link identity}, {@link verdict}, {@link probe}, {@link descendants},
 *   {@link killTree}: PID-reuse-safe process inspection and tree kill.
 * - {@link redact}: the redaction applied to everything procward persists or shows.
 */
export { ProcessRegistry } from './registry.js';
export type { RegistryEvents } from './registry.js';
export type { BulkKillOutcome } from './policy/scoping.js';
export type { CompletionEvent, WatchEvent, ProcwardEvent, WatchLimits } from './policy/notifications.js';
export type {
  RegistryOptions,
  SpawnOptions,
  SessionSummary,
  PollResult,
  WaitResult,
  LogResult,
  LogDiskUsage,
  KillResult,
} from './registry.js';
export type { SessionRecord, SessionStatus, CompletionReason } from './session/record.js';
export type {
  RunningSession,
  ExitedSession,
  SessionFields,
  TerminalSize,
  TerminalScreen,
  PollOptions,
  WaitOptions,
  ReadLogOptions,
  KillOptions,
  KillAllOptions,
  ListFilter,
  DrainOptions,
  ActiveForSessionOptions,
  Snake,
} from './types.js';
export { identity, verdict, probe, descendants, killTree, signalJob, JOB_SIGNALS } from './processes.js';
export type { Identity, Verdict, ProbeResult, ProcessEntry, KillReport, KillRefusal, KillRefusalReason, KillTreeOptions, JobSignal } from './processes.js';
export { WINDOWS_JOB_SIGNALS, type WindowsJobSignal } from './session/signal.js';
export type { SignalResult, SpawnResult } from './types.js';
export { DEFAULT_DENIED_ENV } from './policy/spawnpolicy.js';
export type { SpawnPolicy, SpawnRequest, SpawnDecision } from './policy/spawnpolicy.js';
export { ProcwardError } from './errors.js';
export type { ProcwardErrorCode, ErrnoCode } from './errors.js';
export { redact, isEnvDumpCommand } from './policy/redact.js';
export { redactAsync } from './policy/redactasync.js';
export type { RedactOptions } from './policy/redact.js';
export { defaultStateDir } from './persist/statedir.js';
export { handleToolCall, toolDefinitions, openAiTools } from './surfaces/tool/handler.js';
export type { ToolDefinition, ToolResult, ToolError, ToolSuccess, ToolContext, ToolCallOptions } from './surfaces/tool/handler.js';
export { toolDefinitionsFor, type ToolProvider, type ProviderToolDefinitions } from './surfaces/providers.js';
export { createMcpServer } from './surfaces/mcp.js';
export { localShell, SshEnvironment, dockerExec, kubectlExec, environmentFrom, CommandEnvironment } from './remote/environments.js';
export type { ExecutionEnvironment, EnvironmentDescription, ExecResult, ContainerEngineOptions } from './remote/environments.js';
export { environmentsConfigPath, loadEnvironments, readEnvironmentsConfig } from './remote/configfile.js';
