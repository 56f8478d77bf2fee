import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve as resolvePath } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { defineMcpConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { createConnections } from "../src/index.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["mcp.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }
});

/**
 * The SDK's MCP server over Streamable HTTP with sessions (a session id per
 * client, kept in this process's memory, as stateful servers do); `generation`
 * names the process, so a restart on the same port is visible in answers.
 */
async function statefulMcpServer(generation: string, port = 0, nextCursor?: string, options: { answerDelete?: boolean } = {}): Promise<{ port: number; sessions: Map<string, StreamableHTTPServerTransport>; deletes: number; stop(): Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let deletes = 0;
  const server = createServer(async (req, res) => {
    if (req.method === "DELETE") {
      deletes += 1;
      if (options.answerDelete === false) return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    const id = req.headers["mcp-session-id"] as string | undefined;
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      if (id || !isInitializeRequest(body)) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
        return;
      }
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (sessionId) => void sessions.set(sessionId, created) });
      created.onclose = () => void (created.sessionId && sessions.delete(created.sessionId));
      const mcp = new McpServer({ name: "echo", version: "1.0.0" }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "echo", description: "Echo a word", inputSchema: { type: "object", properties: { word: { type: "string" } } } }], ...(nextCursor ? { nextCursor } : {}) }));
      mcp.setRequestHandler(CallToolRequestSchema, async (request) => ({ content: [{ type: "text", text: `${String(request.params.arguments?.word)} from ${generation}` }] }));
      await mcp.connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((done) => server.listen(port, "127.0.0.1", done));
  servers.push(server);
  return {
    port: (server.address() as AddressInfo).port,
    sessions,
    get deletes() {
      return deletes;
    },
    stop: async () => {
      servers.splice(servers.indexOf(server), 1);
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

describe("an MCP server that restarts", () => {
  it("opens a new session when a restarted Streamable HTTP server no longer knows the old one", async () => {
    const first = await statefulMcpServer("first");
    const provider = createConnections({ resolve });
    const definition = defineMcpConnection({ url: `http://mcp.test:${first.port}/mcp`, description: "Echo" });
    try {
      const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
      expect(await tools.echo__echo!.execute({ word: "one" }, callCtx())).toMatchObject({ content: [{ type: "text", text: "one from first" }] });
      await first.stop();
      await new Promise((done) => setTimeout(done, 100));
      await statefulMcpServer("second", first.port);
      expect(await tools.echo__echo!.execute({ word: "two" }, callCtx())).toMatchObject({ content: [{ type: "text", text: "two from second" }] });
    } finally {
      await provider.close?.();
    }
  }, 20_000);

  it("starts a stdio server again after its process exited", async () => {
    const provider = createConnections();
    const definition = defineMcpConnection({ command: process.execPath, args: [resolvePath(import.meta.dirname, "fixtures/exiting-stdio-server.mjs")], description: "Echo" });
    try {
      const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
      const first = (await tools.echo__echo!.execute({ word: "one", exit: true }, callCtx())) as { content: Array<{ text: string }> };
      expect(first.content[0]!.text).toMatch(/^one from \d+$/);
      await new Promise((done) => setTimeout(done, 300));
      const second = (await tools.echo__echo!.execute({ word: "two" }, callCtx())) as { content: Array<{ text: string }> };
      expect(second.content?.[0]?.text).toMatch(/^two from \d+$/);
      expect(second.content[0]!.text.split(" from ")[1]).not.toBe(first.content[0]!.text.split(" from ")[1]);
    } finally {
      await provider.close?.();
    }
  }, 20_000);
});

describe("MCP clients", () => {
  it("reaches the new server when a connection is added again under its name with another url", async () => {
    const [a, b] = [await statefulMcpServer("a"), await statefulMcpServer("b")];
    const provider = createConnections({ resolve });
    try {
      for (const [server, generation] of [[a, "a"], [b, "b"]] as const) {
        const definition = defineMcpConnection({ url: `http://mcp.test:${server.port}/mcp`, description: "Echo" });
        const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
        expect(await tools.echo__echo!.execute({ word: "hi" }, callCtx())).toMatchObject({ content: [{ type: "text", text: `hi from ${generation}` }] });
      }
    } finally {
      await provider.close?.();
    }
  }, 20_000);

  it("stops listing tools of a server that hands back the same cursor for ever", async () => {
    const looping = await statefulMcpServer("loop", 0, "page-2");
    const provider = createConnections({ resolve });
    try {
      const described = provider.describe("echo", defineMcpConnection({ url: `http://mcp.test:${looping.port}/mcp`, description: "Echo" }), policy);
      await expect(described).rejects.toMatchObject({ code: "AL_ERR_CONNECTION_FAILED", message: expect.stringMatching(/connection "echo" failed listing its tools: the server repeated the cursor "page-2"/) });
    } finally {
      await provider.close?.();
    }
  }, 20_000);
});

describe("a stdio MCP server that fails to start", () => {
  it("fails with what the server printed, its env values hidden", async () => {
    const provider = createConnections();
    const script = `console.error("calc: cannot read /etc/calc.toml (token " + process.env.CALC_TOKEN + ")"); process.exit(3);`;
    const definition = defineMcpConnection({ command: process.execPath, args: ["-e", script], env: { CALC_TOKEN: "calc-token-91ac44e0" }, description: "Calc" });
    try {
      const error = (await provider.describe("calc", definition, policy).catch((caught: unknown) => caught)) as Error & { code: string };
      expect(error).toMatchObject({ code: "AL_ERR_CONNECTION_FAILED", message: expect.stringMatching(/connection "calc" failed connecting: .*the server printed: calc: cannot read \/etc\/calc.toml \(token \[env CALC_TOKEN\]\)/) });
      expect(error.message).not.toContain("calc-token-91ac44e0");
    } finally {
      await provider.close?.();
    }
  }, 20_000);
});

describe("closing the connections", () => {
  it("ends each MCP session on its server, so a stateful server does not keep it until it expires", async () => {
    const server = await statefulMcpServer("one");
    const provider = createConnections({ resolve });
    const definition = defineMcpConnection({ url: `http://mcp.test:${server.port}/mcp`, description: "Echo" });
    const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
    await tools.echo__echo!.execute({ word: "hi" }, callCtx());
    expect(server.sessions.size).toBe(1);
    await provider.close?.();
    expect(server.deletes).toBe(1);
    expect(server.sessions.size).toBe(0);
  }, 20_000);

  it("refuses a call or a describe made after they were closed (a run the shutdown did not wait for), opening no session nothing would end", async () => {
    const server = await statefulMcpServer("late");
    const provider = createConnections({ resolve });
    const definition = defineMcpConnection({ url: `http://mcp.test:${server.port}/mcp`, description: "Echo" });
    const tools = provider.tools("echo", definition, await provider.describe("echo", definition, policy), policy);
    await provider.close?.();
    // Thrown, not a result: the runtime leaves such a call open for the next start.
    await expect(tools.echo__echo!.execute({ word: "late" }, callCtx())).rejects.toMatchObject({
      code: "AL_ERR_HOST_DRAINING",
      message: expect.stringContaining('connection "echo" was not used for calling echo: the connections were closed (the host is shutting down)'),
    });
    await expect(provider.describe("echo", definition, policy)).rejects.toMatchObject({ code: "AL_ERR_HOST_DRAINING", message: expect.stringContaining("the connections were closed") });
    await new Promise((done) => setTimeout(done, 200));
    expect(server.sessions.size).toBe(0);
  }, 20_000);

  it("does not wait longer than requestTimeoutMs for a server that never answers the end of its session", async () => {
    const server = await statefulMcpServer("mute", 0, undefined, { answerDelete: false });
    const provider = createConnections({ resolve, requestTimeoutMs: 300 });
    const definition = defineMcpConnection({ url: `http://mcp.test:${server.port}/mcp`, description: "Echo" });
    await provider.describe("echo", definition, policy);
    const startedAt = Date.now();
    await provider.close?.();
    expect(server.deletes).toBe(1);
    expect(Date.now() - startedAt).toBeLessThan(2_000);
  }, 20_000);
});
