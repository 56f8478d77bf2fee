import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve as resolvePath } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { defineHttpConnection, defineMcpConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { EncryptedGrantStore, createConnections } from "../src/index.js";

const SECRET = "echoed-4d1f9a7b2c6e8053-secret";
/** A secret whose URL, form and base64 encodings all differ from it. */
const ODD_SECRET = "sk/9f+2 Q=a&b?c~d7e31c0b";
const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["svc.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;
const work = mkdtempSync(join(tmpdir(), "al-echoed-secrets-"));
let grants: EncryptedGrantStore;
let server: Server;
let port: number;
/** Run as each request arrives, before it is answered (the operator rotating a grant meanwhile). */
let onRequest: ((req: IncomingMessage) => Promise<void>) | undefined;

/**
 * A careless service: /echo returns the request's headers, /fail quotes them in
 * a 500, and /mcp is the SDK's MCP server whose tool description and answers
 * quote the authorization header (and which fails outright on /mcp-fail).
 */
async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  await onRequest?.(req);
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const url = new URL(req.url ?? "/", "http://x");
  if (url.pathname === "/echo") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ headers: req.headers }));
  if (url.pathname === "/encoded") {
    const authorization = req.headers.authorization ?? "";
    const token = authorization.replace(/^Bearer /, "");
    return void res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        dump: Buffer.from(JSON.stringify(req.headers)).toString("base64"),
        basic: `Basic ${Buffer.from(`me:${token}`).toString("base64")}`,
        jwtish: `eyJ0.${Buffer.from(token).toString("base64url")}.sig`,
        link: `https://svc.test/callback?key=${encodeURIComponent(token)}&x=1`,
        form: new URLSearchParams({ key: token }).toString(),
        lower: encodeURIComponent(token).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
        // As other languages quote it: PHP's json_encode, Python's quote(), an HTML page, hex, a URL inside a URL.
        php: JSON.stringify(token).slice(1, -1).replaceAll("/", "\\/"),
        python: encodeURIComponent(token).replaceAll("%2F", "/"),
        html: token.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`.replace("&#38;", "&amp;")),
        hex: Buffer.from(token).toString("hex"),
        double: encodeURIComponent(encodeURIComponent(token)),
      }),
    );
  }
  if (url.pathname === "/mcp-fail-encoded") return void res.writeHead(500, { "content-type": "text/plain" }).end(`bad request ${Buffer.from(req.headers.authorization ?? "").toString("base64")} from ?auth=${encodeURIComponent(req.headers.authorization ?? "")}`);
  if (url.pathname === "/fail" || url.pathname === "/mcp-fail") return void res.writeHead(500, { "content-type": "text/plain" }).end(`internal error handling request with authorization ${req.headers.authorization}`);
  const mcp = new McpServer({ name: "echo", version: "1.0.0" }, { capabilities: { tools: {} } });
  mcp.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => ({
    tools: [{ name: "whoami", description: `Says who you are (you sent ${String(extra.requestInfo?.headers.authorization)})`, inputSchema: { type: "object", properties: {} } }],
  }));
  mcp.setRequestHandler(CallToolRequestSchema, async (_request, extra) => ({ content: [{ type: "text", text: `you are ${String(extra.requestInfo?.headers.authorization)}` }] }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => void transport.close());
  await mcp.connect(transport);
  await transport.handleRequest(req, res, chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined);
}

beforeAll(async () => {
  grants = new EncryptedGrantStore({ path: join(work, "grants.json"), secretKey: "s".repeat(40) });
  await grants.put("echo-token", SECRET);
  await grants.put("odd-token", ODD_SECRET);
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
  rmSync(work, { recursive: true, force: true });
});

describe("a grant's secret echoed back by the service", () => {
  it("is replaced by the grant's name in HTTP results and errors", async () => {
    const provider = createConnections({ resolve, grants });
    const definition = defineHttpConnection({
      baseUrl: `http://svc.test:${port}`,
      description: "Careless",
      auth: { grant: "echo-token" },
      endpoints: { echo: { method: "GET", path: "/echo", description: "Echo headers" }, fail: { method: "GET", path: "/fail", description: "Fail" } },
    });
    const tools = provider.tools("careless", definition, await provider.describe("careless", definition, policy), policy);
    const echoed = await tools.careless__echo!.execute({}, callCtx());
    const failed = await tools.careless__fail!.execute({}, callCtx());
    expect(echoed).toMatchObject({ status: 200, body: { headers: { authorization: "Bearer [grant echo-token]" } } });
    expect(failed).toMatchObject({ status: 500, body: "internal error handling request with authorization Bearer [grant echo-token]" });
    expect(JSON.stringify([echoed, failed])).not.toContain(SECRET);
  });

  it("is replaced by the grant's name in an MCP server's tool descriptions, answers and errors", async () => {
    const provider = createConnections({ resolve, grants });
    try {
      const definition = defineMcpConnection({ url: `http://svc.test:${port}/mcp`, description: "Careless", auth: { grant: "echo-token" } });
      const record = await provider.describe("careless", definition, policy);
      const result = await provider.tools("careless", definition, record, policy).careless__whoami!.execute({}, callCtx());
      expect(JSON.stringify(record)).toContain("you sent Bearer [grant echo-token]");
      expect(result).toMatchObject({ content: [{ type: "text", text: "you are Bearer [grant echo-token]" }] });
      expect(JSON.stringify([record, result])).not.toContain(SECRET);

      const failing = provider.describe("failing", defineMcpConnection({ url: `http://svc.test:${port}/mcp-fail`, description: "Fails", auth: { grant: "echo-token" } }), policy);
      const error = (await failing.catch((caught: unknown) => caught)) as Error & { code: string };
      expect(error).toMatchObject({ code: "AL_ERR_CONNECTION_FAILED", message: expect.stringContaining("authorization Bearer [grant echo-token]") });
      expect(`${error.message}${error.stack}${String((error.cause as Error | undefined)?.message)}`).not.toContain(SECRET);
    } finally {
      await provider.close?.();
    }
  });

  it("is replaced also where the service quoted it base64-, base64url-, URL- or form-encoded, in results and errors", async () => {
    const provider = createConnections({ resolve, grants });
    try {
      const definition = defineHttpConnection({
        baseUrl: `http://svc.test:${port}`,
        description: "Careless",
        auth: { grant: "odd-token" },
        endpoints: { encoded: { method: "GET", path: "/encoded", description: "Encode what was sent" } },
      });
      const tools = provider.tools("careless", definition, await provider.describe("careless", definition, policy), policy);
      const { body } = (await tools.careless__encoded!.execute({}, callCtx())) as { body: Record<string, string> };
      const mark = "[grant odd-token]";
      // Of an encoded secret inside a longer value, at most the few characters it shares with its neighbours stay.
      expect(body.basic).toMatch(/^Basic bWU6[A-Za-z0-9+/]?\[grant odd-token\][A-Za-z0-9+/]{0,3}=*$/);
      expect(body.jwtish).toMatch(/^eyJ0\.\[grant odd-token\][A-Za-z0-9_-]{0,3}\.sig$/);
      expect(body.dump).toContain(mark);
      expect(Buffer.from(body.dump!.split(mark)[0]!, "base64").toString("utf8")).toContain('"authorization":"Bearer');
      expect(body.link).toBe(`https://svc.test/callback?key=${mark}&x=1`);
      expect(body.form).toBe(`key=${mark}`);
      expect(body.lower).toBe(mark);
      for (const form of ["php", "python", "html", "hex", "double"]) expect(body[form], form).toBe(mark);
      const decoded = Object.values(body).flatMap((text) => [text, Buffer.from(text.replace(/^Basic /, ""), "base64").toString("utf8"), Buffer.from(text, "base64url").toString("utf8")]);
      for (const text of decoded) expect(text).not.toContain(ODD_SECRET);

      const failing = provider.describe("failing", defineMcpConnection({ url: `http://svc.test:${port}/mcp-fail-encoded`, description: "Fails", auth: { grant: "odd-token" } }), policy);
      const error = (await failing.catch((caught: unknown) => caught)) as Error;
      expect(error.message).toMatch(/bad request [A-Za-z0-9+/]*\[grant odd-token\][A-Za-z0-9+/=]{0,4} from \?auth=Bearer%20\[grant odd-token\]/);
      expect(`${error.message}${error.stack}`).not.toContain(encodeURIComponent(ODD_SECRET));
    } finally {
      await provider.close?.();
    }
  });
});

describe("a grant rotated while a call is in flight", () => {
  const OLD = "rotated-out-7c41e0d9a3b25f86";
  const NEW = "rotated-in-1f93b6c2d0e84a57";

  it("has the secret the call was sent with redacted, not only the one stored now, in HTTP and MCP results", async () => {
    const provider = createConnections({ resolve, grants });
    await grants.put("rotating-token", OLD);
    try {
      const http = defineHttpConnection({ baseUrl: `http://svc.test:${port}`, description: "Careless", auth: { grant: "rotating-token" }, endpoints: { echo: { method: "GET", path: "/echo", description: "Echo headers" } } });
      const mcp = defineMcpConnection({ url: `http://svc.test:${port}/mcp`, description: "Careless", auth: { grant: "rotating-token" } });
      const httpTools = provider.tools("careless", http, await provider.describe("careless", http, policy), policy);
      const mcpTools = provider.tools("careless_mcp", mcp, await provider.describe("careless_mcp", mcp, policy), policy);
      const results: unknown[] = [];
      for (const call of [() => httpTools.careless__echo!.execute({}, callCtx()), () => mcpTools.careless_mcp__whoami!.execute({}, callCtx())]) {
        await grants.put("rotating-token", OLD);
        // The call itself (GET /echo, the MCP client's POST of tools/call), not a stream the MCP client opens beside it.
        onRequest = async (req) => {
          if (req.method !== "POST" && req.url !== "/echo") return;
          onRequest = undefined;
          await grants.put("rotating-token", NEW);
        };
        results.push(await call());
      }
      expect(results[0]).toMatchObject({ status: 200, body: { headers: { authorization: "Bearer [grant rotating-token]" } } });
      expect(results[1]).toMatchObject({ content: [{ type: "text", text: "you are Bearer [grant rotating-token]" }] });
      expect(JSON.stringify(results)).not.toContain(OLD);
    } finally {
      onRequest = undefined;
      await provider.close?.();
    }
  });
});

describe("a value a host gives a stdio MCP server through env", () => {
  const API_KEY = "sk_live_env_3a8f0c5d19e27b64";

  it("is replaced by its variable's name in the server's results and errors", async () => {
    const definition = defineMcpConnection({ command: process.execPath, args: [resolvePath(import.meta.dirname, "fixtures/env-stdio-server.mjs")], env: { API_KEY, MODE: "on" }, description: "Keyed" });
    const provider = createConnections({ connections: { keyed: definition } });
    const stdio: ConnectionPolicy = { allowedHosts: [], onlyAllowedHosts: true };
    try {
      const tools = provider.tools("keyed", definition, await provider.describe("keyed", definition, stdio), stdio);
      const answered = await tools.keyed__whoami!.execute({}, callCtx());
      const denied = await tools.keyed__denied!.execute({}, callCtx());
      const crashed = await tools.keyed__crash!.execute({}, callCtx());
      expect(answered).toMatchObject({ content: [{ type: "text", text: "calling upstream with key [env API_KEY] ([env API_KEY])" }] });
      expect(denied).toEqual({ error: "upstream said 401 for key [env API_KEY]" });
      expect(crashed).toMatchObject({ code: "AL_ERR_CONNECTION_FAILED", error: expect.stringContaining("cannot reach upstream with key [env API_KEY]") });
      expect(JSON.stringify([answered, denied, crashed])).not.toContain(API_KEY);
    } finally {
      await provider.close?.();
    }
  }, 20_000);
});
