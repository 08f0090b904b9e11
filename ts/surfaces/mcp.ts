/**
 * `procward mcp`: the LLM tools served with the official MCP TypeScript SDK, for any MCP
 * client. What a client gets (see the modules under `mcp/`):
 *
 * - `instructions` (`mcp/instructions.ts`): how an agent uses the tools (start, read with a
 *   cursor, wait, kill).
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
import { mcpInstructions } from './mcp/instructions.js';
import { serveLogging } from './mcp/logging.js';
import { callProgress } from './mcp/progress.js';
import { serveLogResources } from './mcp/resources.js';
import { mcpTools, routeCall } from './mcp/tools.js';
import { handleToolCall, type ToolContext, type ToolResult } from './tool/handler.js';

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
    { capabilities: { tools: {}, resources: { subscribe: true, listChanged: true }, logging: {} }, instructions: mcpInstructions() },
  );
  const log = serveLogging(server, registry, context);
  const resources = serveLogResources(server, registry, context);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: mcpTools() }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    const route = routeCall(name, args);
    if ('error' in route) return toolResult({ error: { code: route.code, message: route.error } });
    const progress = callProgress(extra, route.action ? `${name} ${route.action}` : name);
    try {
      const result = await handleToolCall(registry, route.tool, args, context, {
        signal: extra.signal,
        // Hints in results name MCP's tools (process_read, process_control), not the library's `process`.
        surface: 'mcp',
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
