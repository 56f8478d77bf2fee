import { createServer, type IncomingMessage, type ServerResponse, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { defineHttpConnection, defineMcpConnection, defineOpenApiConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { createConnections } from "../src/index.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["svc.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;
const LIMIT = 64 * 1024;

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }
});

async function serve(handle: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): Promise<number> {
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

/**
 * /endless streams JSON-looking bytes for ever (no Content-Length), waiting for
 * the socket to drain between chunks, and records how much it wrote before the
 * client went away; /declared announces 50 MB and sends one chunk; /exact
 * answers exactly LIMIT bytes.
 */
async function bulkyService() {
  const endless = { written: 0, closed: false };
  const port = await serve(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/exact") return void res.writeHead(200, { "content-type": "text/plain" }).end("x".repeat(LIMIT));
    if (url.pathname === "/declared") {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(50_000_000) });
      res.write(`[${"1,".repeat(1000)}`);
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.on("close", () => (endless.closed = true));
    const chunk = Buffer.from(`${"7,".repeat(8 * 1024)}`);
    res.write("[");
    while (!res.destroyed) {
      endless.written += chunk.length;
      if (!res.write(chunk)) await new Promise((done) => res.once("drain", done).once("close", done));
    }
  });
  return { port, endless };
}

describe("an answer larger than maxResponseBytes", () => {
  it("stops reading an HTTP body past the limit and answers the model an error saying how to get less, without waiting for the end", async () => {
    const { port, endless } = await bulkyService();
    const provider = createConnections({ resolve, maxResponseBytes: LIMIT, requestTimeoutMs: 20_000 });
    const definition = defineHttpConnection({
      baseUrl: `http://svc.test:${port}`,
      description: "Bulky",
      endpoints: { dump: { method: "GET", path: "/endless", description: "Everything" }, exact: { method: "GET", path: "/exact", description: "Just fits" } },
    });
    const tools = provider.tools("bulky", definition, await provider.describe("bulky", definition, policy), policy);
    const result = await tools.bulky__dump!.execute({}, callCtx());
    expect(result).toEqual({
      status: 200,
      code: "AL_ERR_CONNECTION_FAILED",
      error: expect.stringMatching(new RegExp(`GET http://svc.test:${port}/endless answered more than ${LIMIT} bytes .*ask for less.*createConnections\\(\\{ maxResponseBytes \\}\\)`)),
    });
    await expect.poll(() => endless.closed).toBe(true);
    // What the service managed to write before the client hung up: socket buffers, not the whole stream.
    expect(endless.written).toBeLessThan(32 * 1024 * 1024);
    expect(await tools.bulky__exact!.execute({}, callCtx())).toEqual({ status: 200, body: "x".repeat(LIMIT) });
  }, 30_000);

  it("does not read an OpenAPI response whose Content-Length is already past the limit", async () => {
    const { port } = await bulkyService();
    const provider = createConnections({ resolve, maxResponseBytes: LIMIT, requestTimeoutMs: 20_000 });
    const document = {
      openapi: "3.0.3",
      info: { title: "Bulky", version: "1.0.0" },
      servers: [{ url: `http://svc.test:${port}` }],
      paths: { "/declared": { get: { operationId: "export", responses: { "200": { description: "ok" } } } } },
    };
    const definition = defineOpenApiConnection({ spec: document, description: "Bulky" });
    const tools = provider.tools("bulky", definition, await provider.describe("bulky", definition, policy), policy);
    // The service never sends the 50 MB it announced: only a refusal to read it answers before the timeout.
    const startedAt = Date.now();
    expect(await tools.bulky__export!.execute({}, callCtx())).toMatchObject({ status: 200, code: "AL_ERR_CONNECTION_FAILED", error: expect.stringContaining(`answered more than ${LIMIT} bytes`) });
    expect(Date.now() - startedAt).toBeLessThan(10_000);
  }, 30_000);

  it("answers an MCP tool result whose content is past the limit with an error, and passes a smaller one whole", async () => {
    const port = await serve(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const mcp = new McpServer({ name: "bulky", version: "1.0.0" }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: [{ name: "read_log", description: "Reads the log", inputSchema: { type: "object", properties: { lines: { type: "number" } } } }],
      }));
      mcp.setRequestHandler(CallToolRequestSchema, async (request) => ({
        content: Array.from({ length: Number(request.params.arguments?.lines) }, (_, line) => ({ type: "text", text: `${line}: ${"log ".repeat(100)}` })),
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on("close", () => void transport.close());
      await mcp.connect(transport);
      await transport.handleRequest(req, res, chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined);
    });
    const provider = createConnections({ resolve, maxResponseBytes: LIMIT });
    try {
      const definition = defineMcpConnection({ url: `http://svc.test:${port}/mcp`, description: "Bulky" });
      const tools = provider.tools("bulky", definition, await provider.describe("bulky", definition, policy), policy);
      expect(await tools.bulky__read_log!.execute({ lines: 1000 }, callCtx())).toEqual({
        code: "AL_ERR_CONNECTION_FAILED",
        error: expect.stringMatching(new RegExp(`bulky tool read_log answered more than ${LIMIT} bytes .*maxResponseBytes`)),
      });
      const small = (await tools.bulky__read_log!.execute({ lines: 10 }, callCtx())) as { content: unknown[] };
      expect(small.content).toHaveLength(10);
    } finally {
      await provider.close?.();
    }
  }, 30_000);

  it("refuses a maxResponseBytes that is not a positive whole number", () => {
    expect(() => createConnections({ maxResponseBytes: 0 })).toThrow(/options.maxResponseBytes must be >= 1/);
    expect(() => createConnections({ maxResponseBytes: "1MB" as never })).toThrow(/options.maxResponseBytes must be integer/);
  });
});
