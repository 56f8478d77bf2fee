import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

/**
 * A careless service: /echo returns the request's headers, /fail quotes them in
 * a 500, and /mcp is the SDK's MCP server whose tool description and answers
 * quote the authorization header (and which fails outright on /mcp-fail).
 */
async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
