import { AssemblyLineError, isAssemblyLineError, type ConnectionAuth, type ConnectionPolicy, type JsonValue } from "@assemblyline-agents/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { connectionFetch, type OutboundOptions } from "./outbound.js";
import { plainSchema, uniqueNames } from "./tool-names.js";

/** Where an MCP server is: Streamable HTTP, or a local process over stdio. */
export type McpTarget = { url: string; auth?: ConnectionAuth } | { command: string; args?: string[]; env?: Record<string, string> };

/** An MCP tool as described once and persisted: the server's name and the model's. */
export interface McpToolRecord {
  tool: string;
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/**
 * MCP clients through @modelcontextprotocol/sdk, one per connection, opened
 * on first use and reused; every HTTP request goes through the connection's
 * guarded fetch. The SDK loads lazily, so hosts without MCP connections never
 * import it.
 */
export class McpClients {
  private readonly clients = new Map<string, Promise<Client>>();

  constructor(
    private readonly outbound: OutboundOptions,
    /** Every MCP request (handshake, listing, call) fails after this long: the SDK's RequestOptions.timeout. */
    private readonly timeoutMs: number,
  ) {}

  async describe(connection: string, target: McpTarget, policy: ConnectionPolicy): Promise<McpToolRecord[]> {
    const client = await this.client(connection, target, policy);
    const tools: Array<{ name: string; description?: string; inputSchema: unknown }> = [];
    try {
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {}, { timeout: this.timeoutMs });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
    } catch (error) {
      throw failure(connection, "listing its tools", error);
    }
    const names = uniqueNames(tools.map((tool) => tool.name));
    return tools.map((tool, index) => ({ tool: tool.name, name: names[index]!, description: tool.description ?? tool.name, inputSchema: plainSchema(tool.inputSchema) }));
  }

  /** Call one tool; a tool error is a result the model sees, a refusal or a dead server throws. */
  async call(connection: string, target: McpTarget, policy: ConnectionPolicy, tool: string, input: unknown, options: { signal: AbortSignal; idempotencyKey: string }): Promise<JsonValue> {
    const client = await this.client(connection, target, policy);
    const result = await client.callTool(
      { name: tool, arguments: (input ?? {}) as Record<string, unknown>, _meta: { "assembly-line/idempotency-key": options.idempotencyKey } },
      undefined,
      { signal: options.signal, timeout: this.timeoutMs },
    );
    const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
    const text = content.filter((part) => part.type === "text" && typeof part.text === "string").map((part) => part.text).join("\n");
    if (result.isError) return { error: text || `${connection} tool ${tool} failed` };
    return JSON.parse(JSON.stringify({ content, ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}) })) as JsonValue;
  }

  async close(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.allSettled(clients.map(async (client) => (await client).close()));
  }

  private client(connection: string, target: McpTarget, policy: ConnectionPolicy): Promise<Client> {
    let client = this.clients.get(connection);
    if (!client) {
      client = this.open(connection, target, policy);
      this.clients.set(connection, client);
      // A failed handshake is not cached: the next use tries again.
      client.catch(() => this.clients.delete(connection));
    }
    return client;
  }

  private async open(connection: string, target: McpTarget, policy: ConnectionPolicy): Promise<Client> {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const client = new Client({ name: "assembly-line", version: "0.1.0" });
    try {
      if ("url" in target) {
        const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
        // Redirects are left to the guarded fetch, which re-checks every hop.
        await client.connect(new StreamableHTTPClientTransport(new URL(target.url), { fetch: connectionFetch(connection, policy, target.auth, this.outbound), redirectPolicy: "follow" }), { timeout: this.timeoutMs });
      } else {
        const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
        await client.connect(new StdioClientTransport({ command: target.command, args: target.args ?? [], env: { ...getDefaultEnvironment(), ...(target.env ?? {}) }, stderr: "ignore" }), { timeout: this.timeoutMs });
      }
    } catch (error) {
      await client.close().catch(() => undefined);
      throw failure(connection, "connecting", error);
    }
    return client;
  }
}

/** Refusals of the guard keep their code; anything else is the connection failing. */
export function failure(connection: string, doing: string, error: unknown): Error {
  const refusal = findRefusal(error);
  if (refusal) return refusal;
  return new AssemblyLineError("AL_ERR_CONNECTION_FAILED", `connection "${connection}" failed ${doing}: ${reason(error)}`, {
    fix: "Check the service is up and speaks the protocol of its kind.",
    cause: error,
  });
}

function findRefusal(error: unknown, depth = 0): Error | undefined {
  if (depth > 5 || typeof error !== "object" || error === null) return undefined;
  if (isAssemblyLineError(error)) return error;
  return findRefusal((error as { cause?: unknown }).cause, depth + 1);
}

/** What went wrong, with the cause fetch hides behind "fetch failed" (connect ECONNREFUSED 127.0.0.1:8080, ENOTFOUND, ...). */
function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const inner = cause instanceof Error ? cause.message || (cause as { code?: string }).code : undefined;
  return inner && !error.message.includes(inner) ? `${error.message} (${inner})` : error.message;
}
