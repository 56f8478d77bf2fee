import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { defineMcpConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { createConnections } from "../src/index.js";
import { REFUSAL_BYTES, answerCap } from "../src/mcp-answer-cap.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["svc.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;
const LIMIT = 16 * 1024;

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }
});

/** How much an endless answer wrote before the client hung up. */
interface Endless {
  written: number;
  closed: boolean;
}

/**
 * An MCP server (the SDK's own, answering JSON) but for the requests `endless` takes (by method and
 * JSON-RPC body): to those it writes `head` and then `filler` for ever, as fast as the socket
 * drains, recording in `answers` how much each wrote before the client hung up. Its tool `hold`
 * answers only once the test calls `release()`, so a call can be held in flight.
 */
async function mcpServerWithEndless(endless: (req: IncomingMessage, body: { method?: string; id?: unknown } | undefined) => { status: number; type: string; head: string; filler: string } | undefined) {
  const answers: Endless[] = [];
  /** Each request's method and the event it asked to resume after (Last-Event-ID), if any. */
  const requests: Array<{ method: string; lastEventId: string | undefined }> = [];
  const held: Array<() => void> = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    requests.push({ method: req.method ?? "", lastEventId: req.headers["last-event-id"] as string | undefined });
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    const answer = endless(req, body);
    if (answer) {
      const record = { written: 0, closed: false };
      answers.push(record);
      res.writeHead(answer.status, { "content-type": answer.type });
      res.on("close", () => (record.closed = true));
      res.write(answer.head);
      const chunk = Buffer.from(answer.filler.repeat(4 * 1024));
      while (!res.destroyed) {
        record.written += chunk.length;
        if (!res.write(chunk)) await drainedOrClosed(res);
      }
      return;
    }
    const mcp = new McpServer({ name: "endless", version: "1.0.0" }, { capabilities: { tools: {} } });
    mcp.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        { name: "read_log", description: "Reads the log", inputSchema: { type: "object" } },
        { name: "hold", description: "Answers when the test says so", inputSchema: { type: "object" } },
      ],
    }));
    mcp.setRequestHandler(CallToolRequestSchema, async (request) => {
      if (request.params.name === "hold") await new Promise<void>((done) => held.push(done));
      return { content: [{ type: "text", text: "short" }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => void transport.close());
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  servers.push(server);
  const release = () => {
    for (const done of held.splice(0)) done();
  };
  return { port: (server.address() as AddressInfo).port, answers, requests, holding: () => held.length, release };
}

/** A `tools/call` answered 200 with one result that never ends: one SSE event, or one JSON body. */
function endlessAnswers(json: boolean) {
  return mcpServerWithEndless((_req, body) => {
    if (body?.method !== "tools/call") return undefined;
    const result = `{"jsonrpc":"2.0","id":${JSON.stringify(body.id)},"result":{"content":[{"type":"text","text":"`;
    return json ? { status: 200, type: "application/json", head: result, filler: "log " } : { status: 200, type: "text/event-stream", head: `event: message\ndata: ${result}`, filler: "log " };
  });
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((done) => {
    const settle = () => {
      res.off("drain", settle).off("close", settle);
      done();
    };
    res.on("drain", settle).on("close", settle);
  });
}

describe("an MCP server whose answer never ends", () => {
  for (const json of [false, true]) {
    it(`answers the call at once as too large, reading ${json ? "the JSON body" : "the SSE event"} only up to the cap, and hangs up`, async () => {
      const { port, answers } = await endlessAnswers(json);
      // The call's timeout is far off: only the cap can end the call before it.
      const provider = createConnections({ resolve, maxResponseBytes: LIMIT, requestTimeoutMs: 60_000 });
      try {
        const definition = defineMcpConnection({ url: `http://svc.test:${port}/mcp`, description: "Endless" });
        const tools = provider.tools("endless", definition, await provider.describe("endless", definition, policy), policy);
        const startedAt = Date.now();
        expect(await tools.endless__read_log!.execute({}, callCtx())).toEqual({
          code: "AL_ERR_CONNECTION_FAILED",
          error: expect.stringMatching(new RegExp(`endless tool read_log answered more than ${LIMIT} bytes .*maxResponseBytes`)),
        });
        expect(Date.now() - startedAt).toBeLessThan(20_000);
        await expect.poll(() => answers[0]?.closed).toBe(true);
        // What the server wrote before the client hung up: the cap and socket buffers, not the stream.
        expect(answers[0]!.written).toBeLessThan(answerCap(LIMIT) + 16 * 1024 * 1024);
      } finally {
        await provider.close?.();
      }
    }, 30_000);
  }

  it("never resumes a cut answer whose events carry ids, though the SDK resumes such streams", async () => {
    const { port, answers, requests } = await mcpServerWithEndless((_req, body) => {
      if (body?.method !== "tools/call") return undefined;
      return { status: 200, type: "text/event-stream", head: `id: answer-1\nevent: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(body.id)},"result":{"content":[{"type":"text","text":"`, filler: "log " };
    });
    const provider = createConnections({ resolve, maxResponseBytes: LIMIT, requestTimeoutMs: 60_000 });
    try {
      const definition = defineMcpConnection({ url: `http://svc.test:${port}/mcp`, description: "Endless" });
      const tools = provider.tools("endless", definition, await provider.describe("endless", definition, policy), policy);
      expect(await tools.endless__read_log!.execute({}, callCtx())).toMatchObject({ error: expect.stringMatching(/answered more than/) });
      await expect.poll(() => answers[0]?.closed).toBe(true);
      // The SDK waits a second before it resumes a stream: longer than that, nothing asks for the rest.
      await new Promise((done) => setTimeout(done, 2_500));
      expect(requests.filter((request) => request.lastEventId !== undefined)).toEqual([]);
      expect(answers).toHaveLength(1);
    } finally {
      await provider.close?.();
    }
  }, 30_000);

  it("never resumes a cut answer while another run's call in flight keeps the dropped client", async () => {
    const { port, answers, requests, holding, release } = await mcpServerWithEndless((_req, body) => {
      if (body?.method !== "tools/call" || (body as { params?: { name?: string } }).params?.name !== "read_log") return undefined;
      return { status: 200, type: "text/event-stream", head: `id: answer-1\nevent: message\ndata: {"jsonrpc":"2.0","id":${JSON.stringify(body.id)},"result":{"content":[{"type":"text","text":"`, filler: "log " };
    });
    const provider = createConnections({ resolve, maxResponseBytes: LIMIT, requestTimeoutMs: 60_000 });
    try {
      const definition = defineMcpConnection({ url: `http://svc.test:${port}/mcp`, description: "Endless" });
      const tools = provider.tools("endless", definition, await provider.describe("endless", definition, policy), policy);
      const inFlight = Promise.resolve(tools.endless__hold!.execute({}, callCtx()));
      await expect.poll(holding).toBe(1);
      expect(await tools.endless__read_log!.execute({}, callCtx())).toMatchObject({ error: expect.stringMatching(/answered more than/) });
      await expect.poll(() => answers[0]?.closed).toBe(true);
      // The SDK waits a second before it resumes a stream; the held call keeps the client longer.
      await new Promise((done) => setTimeout(done, 2_500));
      expect(requests.filter((request) => request.lastEventId !== undefined)).toEqual([]);
      expect(answers).toHaveLength(1);
      release();
      expect(await inFlight).toMatchObject({ content: [{ type: "text", text: "short" }] });
    } finally {
      release();
      await provider.close?.();
    }
  }, 30_000);

  it("hangs up on a session stream (GET) whose event never ends, past the cap", async () => {
    const { port, answers: streams } = await mcpServerWithEndless((req) =>
      req.method === "GET" ? { status: 200, type: "text/event-stream", head: `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`, filler: "log " } : undefined,
    );
    const provider = createConnections({ resolve, maxResponseBytes: LIMIT, requestTimeoutMs: 60_000 });
    try {
      const definition = defineMcpConnection({ url: `http://svc.test:${port}/mcp`, description: "Chatty" });
      await provider.describe("chatty", definition, policy);
      await expect.poll(() => streams[0]?.closed, { timeout: 10_000 }).toBe(true);
      expect(streams[0]!.written).toBeLessThan(answerCap(LIMIT) + 16 * 1024 * 1024);
    } finally {
      await provider.close?.();
    }
  }, 30_000);

  it("fails a call refused with an error page that never ends at once, reading only the page's start", async () => {
    const { port, answers } = await mcpServerWithEndless((_req, body) => (body?.method === "tools/call" ? { status: 500, type: "text/plain", head: "", filler: "error " } : undefined));
    const provider = createConnections({ resolve, maxResponseBytes: LIMIT, requestTimeoutMs: 60_000 });
    try {
      const definition = defineMcpConnection({ url: `http://svc.test:${port}/mcp`, description: "Endless" });
      const tools = provider.tools("endless", definition, await provider.describe("endless", definition, policy), policy);
      const startedAt = Date.now();
      const result = (await tools.endless__read_log!.execute({}, callCtx())) as { code: string; error: string };
      expect(result).toMatchObject({ code: "AL_ERR_CONNECTION_FAILED", error: expect.stringContaining("error error") });
      // The page's start, not the page: what the model reads of the refusal.
      expect(result.error.length).toBeLessThan(REFUSAL_BYTES + 1024);
      expect(Date.now() - startedAt).toBeLessThan(20_000);
      await expect.poll(() => answers[0]?.closed).toBe(true);
      expect(answers[0]!.written).toBeLessThan(answerCap(LIMIT) + 16 * 1024 * 1024);
    } finally {
      await provider.close?.();
    }
  }, 30_000);
});
