import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

export interface TestServer {
  port: number;
  /** Every request that reached this server: method, path, authorization header. */
  requests: Array<{ method: string; path: string; authorization: string | undefined }>;
  close(): Promise<void>;
}

async function listen(handle: (req: IncomingMessage, res: ServerResponse, body: unknown) => Promise<void> | void): Promise<TestServer & { server: Server }> {
  const requests: TestServer["requests"] = [];
  const server = createServer(async (req, res) => {
    requests.push({ method: req.method ?? "GET", path: req.url ?? "/", authorization: req.headers.authorization });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    await handle(req, res, text ? JSON.parse(text) : undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A real MCP server (the SDK's, Streamable HTTP, stateless) with one tool, get_forecast; `calls` counts executions. */
export async function startMcpServer(): Promise<TestServer & { calls: Array<Record<string, unknown>> }> {
  const calls: Array<Record<string, unknown>> = [];
  const base = await listen(async (req, res, body) => {
    const server = new McpServer({ name: "weather", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        {
          name: "get-forecast",
          description: "Weather forecast for a city",
          inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      calls.push({ ...(request.params.arguments ?? {}), meta: request.params._meta ?? null });
      return { content: [{ type: "text", text: `Sunny in ${String(request.params.arguments?.city)}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  return Object.assign(base, { calls });
}

/** An OpenAPI 3 service: /openapi.json and GET /api/forecast/{city}; `calls` counts forecasts served. */
export async function startOpenApiServer(): Promise<TestServer & { calls: string[] }> {
  const calls: string[] = [];
  const document = {
    openapi: "3.0.3",
    info: { title: "Forecasts", version: "1.0.0" },
    servers: [{ url: "/api" }],
    paths: {
      "/forecast/{city}": {
        get: {
          operationId: "getForecast",
          summary: "Weather forecast for a city",
          parameters: [
            { name: "city", in: "path", required: true, schema: { type: "string" } },
            { name: "days", in: "query", schema: { type: "integer" } },
          ],
          responses: { "200": { description: "ok", content: { "application/json": { schema: { $ref: "#/components/schemas/Forecast" } } } } },
        },
      },
    },
    components: { schemas: { Forecast: { type: "object", properties: { city: { type: "string" }, sky: { type: "string" } } } } },
  };
  const base = await listen((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/openapi.json") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(document));
      return;
    }
    const match = /^\/api\/forecast\/([^/]+)$/.exec(url.pathname);
    if (match && req.method === "GET") {
      calls.push(decodeURIComponent(match[1]!));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ city: decodeURIComponent(match[1]!), sky: "clear", days: url.searchParams.get("days") }));
      return;
    }
    res.writeHead(404).end();
  });
  return Object.assign(base, { calls });
}

/** Answers every request with a redirect to `location`. */
export async function startRedirector(location: string): Promise<TestServer> {
  return listen((_req, res) => {
    res.writeHead(302, { location }).end();
  });
}
