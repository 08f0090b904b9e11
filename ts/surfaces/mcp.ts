/**
 * `procward mcp`: the LLM tools served with the official MCP TypeScript SDK, for any MCP
 * client. What a client gets (see the modules under `mcp/`):
 *
 * - `instructions`: how an agent uses the tools (start, read with a cursor, wait, kill).
 * - Tools (`mcp/tools.ts`): `process_start`, `process_read` (read-only actions) and
 *   `process_control` (kill and stdin), with titles, annotations, input and output
 *   schemas. Each call runs through the library's `handleToolCall` (same checks, scope,
 *   redaction and budgets); its JSON result is the call's `structuredContent` and, as
 *   text, its content; failures set `isError`.
 * - Progress (`mcp/progress.ts`) while a call runs, when the request has a progress token;
 *   cancellation (`notifications/cancelled`) aborts the call on the server.
 * - Resources (`mcp/resources.ts`): job logs, `procward://sessions/<id>/log`, with
 *   subscriptions.
 * - Logging (`mcp/logging.ts`): completion and watch events as `notifications/message`.
 *
 * The low-level `Server` is used rather than `McpServer`: the tools' schemas are JSON
 * Schema from the library (not zod shapes the SDK would check first), and the library's
 * handler must see every argument as sent, to answer bad input with its own hints.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ProcessRegistry } from '../registry.js';
import { serveLogging } from './mcp/logging.js';
import { callProgress } from './mcp/progress.js';
import { serveLogResources } from './mcp/resources.js';
import { mcpTools, routeCall } from './mcp/tools.js';
import { handleToolCall, type ToolContext, type ToolResult } from './tool.js';

/** What the server tells the agent at initialization (MCP `instructions`). */
export const MCP_INSTRUCTIONS = [
  'procward runs shell commands in the background and tracks them as sessions (session_id: proc_ + 12 hex).',
  '1. process_start runs a command and returns its session_id at once (long-running servers, builds, tests).',
  '2. process_read: poll for status and recent output; log for output lines (pass back the cursor of the last result, when it has one, to get only new output); wait until the job ends (a result with process_running true means: call wait again); list your sessions; notifications for completion and watch-pattern events (tool results also carry pending events).',
  '3. process_control: kill ends the whole process tree (SIGTERM, then SIGKILL after grace_ms); write/submit/close talk to stdin, for jobs started with stdin or pty.',
  'Output is redacted (secrets masked) and cut to a budget; job logs are also resources (procward://sessions/<id>/log).',
].join('\n');

function toolResult(result: ToolResult): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result as Record<string, unknown>, isError: 'error' in result };
}

/**
 * Builds an MCP server exposing the registry (not yet connected). `context` scopes it as
 * it scopes the library's tool: with a task id or session key, the tools, resources and
 * log messages see only that task's or conversation's sessions. Closing the server stops
 * its timers and event listeners; the registry stays open.
 */
export function createMcpServer(registry: ProcessRegistry, version: string, context: ToolContext = {}): Server {
  const server = new Server(
    { name: 'procward', title: 'procward background processes', version },
    { capabilities: { tools: {}, resources: { subscribe: true, listChanged: true }, logging: {} }, instructions: MCP_INSTRUCTIONS },
  );
  const log = serveLogging(server, registry, context);
  const resources = serveLogResources(server, registry, context);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: mcpTools() }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    const route = routeCall(name, args);
    if ('error' in route) return toolResult({ error: { code: name.startsWith('process') ? 'INVALID_ARGUMENT' : 'UNKNOWN_TOOL', message: route.error } });
    const progress = callProgress(extra, route.action ? `${name} ${route.action}` : name);
    try {
      const result = await handleToolCall(registry, route.tool, args, context, {
        signal: extra.signal,
        ...(progress.onProgress && { onProgress: progress.onProgress }),
      });
      if (route.tool === 'process_start' && !('error' in result)) server.sendResourceListChanged().catch(() => {});
      return toolResult(result);
    } finally {
      progress.stop();
      log.send('debug', { type: 'call_end', tool: name, ...(route.action && { action: route.action }), cancelled: extra.signal.aborted });
    }
  });
  const previous = server.onclose;
  server.onclose = () => {
    log.close();
    resources.close();
    previous?.();
  };
  return server;
}

/** Serves the tools on stdin/stdout until the client disconnects. `context` as for {@link createMcpServer}. */
export async function serveMcpStdio(registry: ProcessRegistry, version: string, context: ToolContext = {}): Promise<void> {
  const server = createMcpServer(registry, version, context);
  const closed = new Promise<void>((resolve) => {
    const cleanup = server.onclose;
    server.onclose = () => {
      cleanup?.();
      resolve();
    };
  });
  await server.connect(new StdioServerTransport());
  process.stdin.once('end', () => void server.close());
  await closed;
}
