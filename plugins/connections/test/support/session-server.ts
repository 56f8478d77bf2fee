import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

export interface SessionServer {
  port: number;
  url: string;
  /** Sessions the server keeps open now, by id. */
  sessions: Map<string, StreamableHTTPServerTransport>;
  /** Every session it opened, in order. */
  opened: string[];
  /** The session ids whose end (HTTP DELETE) the server was asked for. */
  ended: string[];
  /** Calls of `wait` that have reached the server and not been answered yet. */
  waiting: number;
  /** Answer every `wait` call under way. */
  finishWaits(): void;
  stop(): Promise<void>;
}

/**
 * The SDK's MCP server over Streamable HTTP with sessions (a session id per
 * client, kept in this process's memory, as stateful servers do). Tools:
 * `echo` answers `<word> from <name>` at once; `wait` answers only once the
 * test calls finishWaits(), so a call can be held in flight.
 */
export async function startSessionServer(name: string): Promise<SessionServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const opened: string[] = [];
  const ended: string[] = [];
  let waits: Array<() => void> = [];
  const server = createServer(async (req, res) => {
    const id = req.headers["mcp-session-id"] as string | undefined;
    if (req.method === "DELETE" && id) ended.push(id);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      if (id || !isInitializeRequest(body)) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, created);
          opened.push(sessionId);
        },
      });
      created.onclose = () => void (created.sessionId && sessions.delete(created.sessionId));
      const mcp = new McpServer({ name, version: "1.0.0" }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: [
          { name: "echo", description: "Echo a word", inputSchema: { type: "object", properties: { word: { type: "string" } } } },
          { name: "wait", description: "Answer when the test says so", inputSchema: { type: "object", properties: {} } },
        ],
      }));
      mcp.setRequestHandler(CallToolRequestSchema, async (request) => {
        if (request.params.name === "wait") await new Promise<void>((resolve) => waits.push(resolve));
        return { content: [{ type: "text", text: `${String(request.params.arguments?.word ?? "waited")} from ${name}` }] };
      });
      await mcp.connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://mcp.test:${port}/mcp`,
    sessions,
    opened,
    ended,
    get waiting() {
      return waits.length;
    },
    finishWaits: () => {
      for (const resolve of waits.splice(0)) resolve();
    },
    stop: async () => {
      for (const resolve of waits.splice(0)) resolve();
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

/** Wait until `condition` holds, checking every 10 ms, for at most `ms`. */
export async function eventually(condition: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms: ${condition.toString()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
