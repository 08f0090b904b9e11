/**
 * `procward mcp`: the LLM tools (`process_start`, `process`) served over stdio with the
 * official MCP TypeScript SDK, for any MCP client. Each call goes through the same handler
 * as the library's tool surface, so results are the same snake_case JSON objects (as text
 * content); failures set `isError`.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ProcessRegistry } from '../registry.js';
import { handleToolCall, toolDefinitions, type ToolContext } from './tool.js';

/** Builds an MCP server exposing the registry's tools (not yet connected). */
export function createMcpServer(registry: ProcessRegistry, version: string, context: ToolContext = {}): Server {
  const server = new Server({ name: 'procward', version }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: toolDefinitions().map((t) => ({ name: t.name, description: t.description, inputSchema: t.input_schema as { type: 'object' } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const result = await handleToolCall(registry, request.params.name, request.params.arguments ?? {}, context);
    return { content: [{ type: 'text', text: JSON.stringify(result) }], isError: 'error' in result };
  });
  return server;
}

/** Serves the tools on stdin/stdout until the client disconnects. */
export async function serveMcpStdio(registry: ProcessRegistry, version: string): Promise<void> {
  const server = createMcpServer(registry, version);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  await server.connect(new StdioServerTransport());
  process.stdin.once('end', () => void server.close());
  await closed;
}
