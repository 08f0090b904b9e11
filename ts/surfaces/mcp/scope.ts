/**
 * Which sessions an MCP server may show: those its tool context may see (DESIGN section
 * 11). With a task id or session key, the sessions `list` gives for them (the task's own,
 * and those sharing the session key, flagged `session_scoped`); with neither, all. Resources
 * and log messages use this, so a server made for one conversation never names another's
 * sessions.
 */
import type { ProcessRegistry } from '../../registry.js';
import type { SessionSummary } from '../../types.js';
import type { ToolContext } from '../tool/handler.js';

/** The sessions `context` may see, oldest first. */
export function visibleSessions(registry: ProcessRegistry, context: ToolContext): Promise<SessionSummary[]> {
  return registry.list({
    ...(context.taskId !== undefined && { taskId: context.taskId }),
    ...(context.sessionKey !== undefined && { sessionKey: context.sessionKey }),
  });
}

/** The visible session with exactly this id, or undefined (a prefix is not enough here). */
export async function visibleSession(registry: ProcessRegistry, context: ToolContext, id: string): Promise<SessionSummary | undefined> {
  return (await visibleSessions(registry, context)).find((s) => s.id === id);
}
