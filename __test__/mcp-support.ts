// Shared by the MCP tests: the official SDK client connected to procward's MCP server,
// in memory (createMcpServer on this test's registry) or over stdio (`procward mcp`).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { LoggingMessageNotificationSchema, ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createMcpServer, type ProcessRegistry } from '../dist/index.mjs';
import { CLI } from './support.js';

export interface Connected {
  client: Client;
  /** Every `notifications/message` the client got, in order. */
  logs: { level: string; logger?: string; data: any }[];
  /** Every `notifications/resources/updated` URI the client got, in order. */
  updated: string[];
  /** How many `notifications/resources/list_changed` the client got. */
  listChanged: { count: number };
  /** Calls a tool; returns the parsed text content, the structured content and isError. */
  call(name: string, args: Record<string, unknown>): Promise<{ json: any; structured: any; isError: boolean }>;
  close(): Promise<void>;
}

function wire(client: Client): Omit<Connected, 'close'> {
  const logs: Connected['logs'] = [];
  const updated: string[] = [];
  const listChanged = { count: 0 };
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    listChanged.count += 1;
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params as Connected['logs'][number]);
  });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updated.push(n.params.uri);
  });
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = await client.callTool({ name, arguments: args });
    const text = (r.content as { type: string; text: string }[])[0]!.text;
    return { json: JSON.parse(text), structured: r.structuredContent, isError: r.isError === true };
  };
  return { client, logs, updated, listChanged, call };
}

/** A client talking to `createMcpServer(registry, '0.0.0-test', context)` in memory. */
export async function connectInMemory(registry: ProcessRegistry, context: { taskId?: string; sessionKey?: string } = {}): Promise<Connected> {
  const server = createMcpServer(registry, '0.0.0-test', context);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: 'procward-test', version: '1.0.0' });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  return {
    ...wire(client),
    async close() {
      await client.close();
      await server.close();
    },
  };
}

/** A client talking to a `procward mcp --state-dir <stateDir>` child over stdio. */
export async function connectStdio(stateDir: string): Promise<Connected> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--state-dir', stateDir], stderr: 'pipe' });
  const client = new Client({ name: 'procward-test', version: '1.0.0' });
  await client.connect(transport);
  return { ...wire(client), close: () => client.close() };
}
