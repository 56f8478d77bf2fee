import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { defineHttpConnection, defineMcpConnection, defineOpenApiConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { createConnections } from "../src/index.js";

const resolve: OutboundResolver = async (hostname) => {
  if (hostname.endsWith(".test")) return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
};
const policy: ConnectionPolicy = { allowedHosts: ["svc.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;

const started: Array<{ server: Server }> = [];
afterEach(async () => {
  for (const { server } of started.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }
});

/** A server that accepts every request and never answers it. */
async function silentServer(): Promise<number> {
  const server = createServer(() => undefined);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  started.push({ server });
  return (server.address() as AddressInfo).port;
}

/** The SDK's MCP server (Streamable HTTP, stateless) whose one tool, "stall", never returns. */
async function stallingMcpServer(): Promise<number> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const mcp = new McpServer({ name: "stall", version: "1.0.0" }, { capabilities: { tools: {} } });
    mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "stall", description: "Never answers", inputSchema: { type: "object", properties: {} } }] }));
    mcp.setRequestHandler(CallToolRequestSchema, () => new Promise(() => undefined));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => void transport.close());
    await mcp.connect(transport);
    await transport.handleRequest(req, res, chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  started.push({ server });
  return (server.address() as AddressInfo).port;
}

describe("a service that is down or does not answer", () => {
  it("answers an HTTP call the service never answers with AL_ERR_CONNECTION_FAILED after requestTimeoutMs, instead of waiting for ever", async () => {
    const port = await silentServer();
    const provider = createConnections({ resolve, requestTimeoutMs: 300 });
    const definition = defineHttpConnection({ baseUrl: `http://svc.test:${port}`, description: "Slow", endpoints: { lookup: { method: "GET", path: "/lookup", description: "Look up" } } });
    const tools = provider.tools("slow", definition, await provider.describe("slow", definition, policy), policy);
    const startedAt = Date.now();
    const result = await tools.slow__lookup!.execute({}, callCtx());
    expect(result).toEqual({ code: "AL_ERR_CONNECTION_FAILED", error: expect.stringMatching(/connection "slow" did not answer calling lookup within 300 ms/) });
    expect(Date.now() - startedAt).toBeLessThan(5_000);
  }, 10_000);

  it("fails describing an OpenAPI connection whose document never arrives, naming the document", async () => {
    const port = await silentServer();
    const provider = createConnections({ resolve, requestTimeoutMs: 300 });
    const described = provider.describe("docs", defineOpenApiConnection({ spec: `http://svc.test:${port}/openapi.json`, description: "Docs" }), policy);
    await expect(described).rejects.toMatchObject({ code: "AL_ERR_CONNECTION_FAILED", message: expect.stringMatching(new RegExp(`did not answer fetching its OpenAPI document http://svc.test:${port}/openapi.json within 300 ms`)) });
  }, 10_000);

  it("answers an MCP call that never returns with AL_ERR_CONNECTION_FAILED after requestTimeoutMs", async () => {
    const port = await stallingMcpServer();
    const provider = createConnections({ resolve, requestTimeoutMs: 500 });
    const definition = defineMcpConnection({ url: `http://svc.test:${port}/mcp`, description: "Stalls" });
    try {
      const tools = provider.tools("staller", definition, await provider.describe("staller", definition, policy), policy);
      const result = await tools.staller__stall!.execute({}, callCtx());
      expect(result).toEqual({ code: "AL_ERR_CONNECTION_FAILED", error: expect.stringMatching(/connection "staller" failed calling stall: .*Request timed out/) });
    } finally {
      await provider.close?.();
    }
  }, 10_000);

  it("says what refused the connection when nothing listens on the port", async () => {
    const port = await silentServer();
    await new Promise<void>((done) => started.pop()!.server.close(() => done()));
    const provider = createConnections({ resolve });
    const definition = defineHttpConnection({ baseUrl: `http://svc.test:${port}`, description: "Down", endpoints: { lookup: { method: "GET", path: "/lookup", description: "Look up" } } });
    const result = await provider.tools("down", definition, await provider.describe("down", definition, policy), policy).down__lookup!.execute({}, callCtx());
    expect(result).toEqual({ code: "AL_ERR_CONNECTION_FAILED", error: expect.stringMatching(new RegExp(`connection "down" failed calling lookup: fetch failed \\(connect ECONNREFUSED 127.0.0.1:${port}\\)`)) });
  });

  it("stops, when the connections are closed, a stdio server that never answers its handshake, without waiting for requestTimeoutMs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "al-silent-stdio-"));
    const pidFile = join(dir, "pid");
    // Reads its stdin and never writes a line; outlives the end of its stdin.
    const script = `require("node:fs").writeFileSync(process.argv[1], String(process.pid)); process.stdin.resume(); setInterval(() => {}, 1000);`;
    const provider = createConnections({ requestTimeoutMs: 60_000 });
    try {
      const described = provider.describe("silent", defineMcpConnection({ command: process.execPath, args: ["-e", script, pidFile], description: "Silent" }), { allowedHosts: [], onlyAllowedHosts: true }).catch((error: unknown) => error);
      for (let waited = 0; !existsSync(pidFile) && waited < 10_000; waited += 20) await new Promise((done) => setTimeout(done, 20));
      const pid = Number(readFileSync(pidFile, "utf8"));
      const startedAt = Date.now();
      await provider.close?.();
      expect(Date.now() - startedAt).toBeLessThan(10_000);
      // Cut by the close: the host is stopping, and a run's describe is made again by the next start.
      expect(await described).toMatchObject({ code: "AL_ERR_HOST_DRAINING", message: expect.stringContaining('connection "silent" was not used for ') });
      expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: "ESRCH" }));
    } finally {
      await provider.close?.();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);

  it("refuses a requestTimeoutMs that is not a positive whole number", () => {
    expect(() => createConnections({ requestTimeoutMs: 0 })).toThrow(/options.requestTimeoutMs must be >= 1/);
    expect(() => createConnections({ requestTimeoutMs: "30s" as never })).toThrow(/options.requestTimeoutMs must be integer/);
  });
});
