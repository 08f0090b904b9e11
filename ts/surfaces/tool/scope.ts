/**
 * What a tool call may see and touch. A host that serves many conversations from one
 * registry gives each call its context (task id, session key); the call then sees only
 * the sessions `list` would show that context: its task's (started or owned by it) and,
 * when it has a session key, those of the same conversation started by another task
 * (`session_scoped`), which it may read (poll, log, wait) but not act on (kill, input).
 * An id outside that set is `UNKNOWN_SESSION`, worded as for an id that never existed, and
 * a prefix resolves among the visible sessions only. A call without a context sees every
 * session (the library and CLI case).
 */
import { ProcwardError } from '../../errors.js';
import type { ProcessRegistry } from '../../registry.js';
import { resolveSessionId } from '../../session/ids.js';
import type { ProcwardEvent } from '../../policy/notifications.js';
import { callOf, type ToolSurface } from './names.js';

/** The host's context of a call. */
export interface ScopeContext {
  taskId?: string;
  sessionKey?: string;
}

/** Reading (poll, log, wait) or acting (kill, signal, write, submit, close). */
export type Access = 'read' | 'act';

/** The sessions a context sees: id → whether it only shares the session key (read-only to it). */
export class ToolScope {
  private constructor(private readonly visible: Map<string, boolean> | null) {}

  /** The scope of `ctx` as of now (one `list` of its sessions; none without a context). */
  static async of(registry: ProcessRegistry, ctx: ScopeContext): Promise<ToolScope> {
    if (ctx.taskId === undefined && ctx.sessionKey === undefined) return new ToolScope(null);
    const listed = await registry.list({ ...(ctx.taskId !== undefined && { taskId: ctx.taskId }), ...(ctx.sessionKey !== undefined && { sessionKey: ctx.sessionKey }) });
    return new ToolScope(new Map(listed.map((s) => [s.id, s.sessionScoped === true])));
  }

  /**
   * The full id `query` names for this scope. Errors: `INVALID_ARGUMENT` (not an id),
   * `UNKNOWN_SESSION` (not visible), `AMBIGUOUS_SESSION_ID` (among visible ones only),
   * `SESSION_READ_ONLY` (acting on another task's session of the same conversation), whose
   * message names the reading call in `surface`'s tool names.
   */
  resolve(query: string, access: Access, surface: ToolSurface = 'library'): string {
    if (this.visible === null) return query;
    const id = resolveSessionId(this.visible.keys(), query);
    if (access === 'act' && this.visible.get(id) === true) {
      throw new ProcwardError('SESSION_READ_ONLY', `${id} belongs to another task of this conversation: this call may read it (${callOf(['poll', 'log', 'wait'], surface)}) but not act on it`);
    }
    return id;
  }

  /** Whether this scope owns an event (it is about a session it sees). */
  owns(event: ProcwardEvent): boolean {
    return this.visible === null || this.visible.has(event.sessionId);
  }
}
