import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { defineHttpConnection, defineMcpConnection, defineOpenApiConnection, type ConnectionPolicy, type DynamicConnectionSpec, type OutboundResolver } from "@assemblyline-agents/core";
import { createConnections, type GrantStore } from "../src/index.js";

const SECRET = "qk-only-for-query-test-7c31e0a9";
const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
/** A secret with characters a URL encodes (`+`, `/`, `=`). */
const ENCODED_SECRET = "qk+only/for=query-test-41d2";
const grants: GrantStore = { get: async (id) => (id === "api" ? SECRET : id === "encoded" ? ENCODED_SECRET : undefined), put: async () => undefined, delete: async () => undefined };
const policy: ConnectionPolicy = { allowedHosts: ["api.test", "other.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;

/** One server under two names; what reached it, by the Host it was asked for. */
let server: Server;
let port: number;
const seen: Array<{ host: string; method: string; url: string; authorization: string | undefined }> = [];

/**
 * A service that takes its key only as `?api_key=` (401 without it) and is
 * careless with it: /echo and the MCP tool quote the request URL back,
 * /moved and /mcp-moved redirect to other.test keeping the query string (as
 * `return 301 https://new$request_uri` does), /renamed moves the key to
 * another parameter, /sso sends the whole request URL along as `return_to`
 * (a login bounce), /raw-copy copies the key's raw text, /path-copy puts it in
 * the path, /relative redirects on the same origin without it.
 */
async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const host = (req.headers.host ?? "").split(":")[0]!;
  seen.push({ host, method: req.method ?? "GET", url: req.url ?? "/", authorization: req.headers.authorization });
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const url = new URL(req.url ?? "/", `http://${host}`);
  const query = url.searchParams.toString();
  if (url.pathname === "/moved") return void res.writeHead(302, { location: `http://other.test:${port}/echo?${query}` }).end();
  if (url.pathname === "/mcp-moved") return void res.writeHead(307, { location: `http://other.test:${port}/mcp?${query}` }).end();
  if (url.pathname === "/renamed") return void res.writeHead(302, { location: `http://other.test:${port}/echo?k=${encodeURIComponent(url.searchParams.get("api_key") ?? "")}` }).end();
  if (url.pathname === "/sso") return void res.writeHead(302, { location: `http://other.test:${port}/echo?return_to=${encodeURIComponent(`http://${host}:${port}${req.url}`)}&lang=en` }).end();
  if (url.pathname === "/raw-copy") return void res.writeHead(302, { location: `http://other.test:${port}/echo?k=${/[?&]api_key=([^&]*)/.exec(req.url ?? "")?.[1] ?? ""}` }).end();
  if (url.pathname === "/path-copy") return void res.writeHead(302, { location: `http://other.test:${port}/keys/${encodeURIComponent(url.searchParams.get("api_key") ?? "")}` }).end();
  if (url.pathname === "/relative") return void res.writeHead(302, { location: "/echo" }).end();
  if (url.searchParams.get("api_key") !== SECRET) return void res.writeHead(401, { "content-type": "text/plain" }).end("api_key missing");
  if (url.pathname === "/echo") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ url: req.url }));
  const mcp = new McpServer({ name: "keyed", version: "1.0.0" }, { capabilities: { tools: {} } });
  mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: "whoami", description: "Says what you called", inputSchema: { type: "object", properties: {} } }] }));
  mcp.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text", text: `you called ${req.url}` }] }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => void transport.close());
  await mcp.connect(transport);
  await transport.handleRequest(req, res, chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined);
}

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
});

const keyOf = (request: { url: string }) => new URL(request.url, "http://x").searchParams.get("api_key");
const http = (path: string, baseUrl = `http://api.test:${port}`, grant = "api") =>
  defineHttpConnection({ baseUrl, description: "Keyed", auth: { grant, query: "api_key" }, endpoints: { call: { method: "GET", path, description: "Call" } } });
/** What a request's URL holds once decoded as often as it was encoded. */
const decoded = (url: string) => decodeURIComponent(decodeURIComponent(url));

describe("auth.query: a grant sent as a query parameter", () => {
  it("lists and calls an MCP server's tools with the secret in each request's query, and redacts a result that quotes it", async () => {
    const provider = createConnections({ grants, resolve });
    try {
      const definition = defineMcpConnection({ url: `http://api.test:${port}/mcp?region=eu`, description: "Keyed MCP", auth: { grant: "api", query: "api_key" } });
      const before = seen.length;
      const record = await provider.describe("keyed", definition, policy);
      const result = await provider.tools("keyed", definition, record, policy).keyed__whoami!.execute({}, callCtx());
      const requests = seen.slice(before);
      expect(requests.length).toBeGreaterThan(0);
      // Every request carried the key in its query, next to the URL's own parameters, and no header of it.
      for (const request of requests) {
        expect(keyOf(request)).toBe(SECRET);
        expect(new URL(request.url, "http://x").searchParams.get("region")).toBe("eu");
        expect(request.authorization).toBeUndefined();
      }
      expect(JSON.stringify(result)).toContain("you called /mcp?region=eu&api_key=[grant api]");
      expect(JSON.stringify(result)).not.toContain(SECRET);
    } finally {
      await provider.close?.();
    }
  });

  it("calls an HTTP endpoint with the secret in its query and redacts the echoed URL", async () => {
    const provider = createConnections({ grants, resolve });
    const definition = http("/echo");
    const before = seen.length;
    const result = await provider.tools("keyed", definition, await provider.describe("keyed", definition, policy), policy).keyed__call!.execute({}, callCtx());
    expect(seen.slice(before).map(keyOf)).toEqual([SECRET]);
    expect(seen.at(-1)!.authorization).toBeUndefined();
    expect(JSON.stringify(result)).toContain("api_key=[grant api]");
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it("does not let the secret follow a redirect to another origin, under its name or another", async () => {
    const provider = createConnections({ grants, resolve });
    for (const path of ["/moved", "/renamed"]) {
      const definition = http(path);
      const before = seen.length;
      const result = await provider.tools("keyed", definition, await provider.describe("keyed", definition, policy), policy).keyed__call!.execute({}, callCtx());
      const [first, second, ...rest] = seen.slice(before);
      expect(first).toMatchObject({ host: "api.test" });
      expect(keyOf(first!)).toBe(SECRET);
      // The redirect was followed, to a URL without the key: the service there answers 401.
      expect(second).toMatchObject({ host: "other.test", url: expect.stringMatching(/^\/echo/) });
      expect(second!.url).not.toContain(SECRET);
      expect(second!.url).not.toContain(encodeURIComponent(SECRET));
      expect(rest).toEqual([]);
      expect(result).toMatchObject({ status: 401 });
    }
  });

  it("does not let the secret follow a redirect to another origin inside another parameter's value (a login bounce's return_to), verbatim or encoded", async () => {
    const provider = createConnections({ grants, resolve });
    for (const [path, grant, secret] of [["/sso", "api", SECRET], ["/raw-copy", "encoded", ENCODED_SECRET], ["/sso", "encoded", ENCODED_SECRET]] as const) {
      const definition = http(path, undefined, grant);
      const before = seen.length;
      await provider.tools("keyed", definition, await provider.describe("keyed", definition, policy), policy).keyed__call!.execute({}, callCtx());
      const elsewhere = seen.slice(before).filter((request) => request.host === "other.test");
      expect(elsewhere.length, path).toBe(1);
      expect(decoded(elsewhere[0]!.url), `${path} with grant ${grant}`).not.toContain(secret);
      expect(decoded(elsewhere[0]!.url.replaceAll("+", " ")), `${path} with grant ${grant}`).not.toContain(secret);
      if (path === "/sso") expect(elsewhere[0]!.url).toBe("/echo?lang=en");
    }
  });

  it("does not follow a redirect to another origin that carries the secret in its path, and says so without the secret", async () => {
    const provider = createConnections({ grants, resolve });
    const definition = http("/path-copy");
    const before = seen.length;
    const result = await provider.tools("keyed", definition, await provider.describe("keyed", definition, policy), policy).keyed__call!.execute({}, callCtx());
    expect(seen.slice(before).map((request) => request.host)).toEqual(["api.test"]);
    expect(result).toMatchObject({ code: "AL_ERR_OUTBOUND_REDIRECT", error: expect.stringContaining(`http://api.test:${port} redirected to http://other.test:${port} with the value of its api_key parameter in the new URL's path`) });
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it("does not deliver a run's grant bound to one host to another through a login bounce", async () => {
    const provider = createConnections({ grants, resolve });
    const bound: ConnectionPolicy = { ...policy, grantHosts: ["api.test"] };
    const spec: DynamicConnectionSpec = { name: "keyed", kind: "http", baseUrl: `http://api.test:${port}`, auth: { grant: "api", query: "api_key" }, endpoints: { call: { method: "GET", path: "/sso", description: "Call" } } };
    const before = seen.length;
    await provider.tools("keyed", spec, await provider.describe("keyed", spec, bound), bound).keyed__call!.execute({}, callCtx());
    const elsewhere = seen.slice(before).filter((request) => request.host === "other.test");
    expect(elsewhere.map((request) => request.url)).toEqual(["/echo?lang=en"]);
  });

  it("does not let the secret follow an MCP server's redirect to another origin", async () => {
    const provider = createConnections({ grants, resolve });
    try {
      const before = seen.length;
      const definition = defineMcpConnection({ url: `http://api.test:${port}/mcp-moved`, description: "Moved MCP", auth: { grant: "api", query: "api_key" } });
      const refused = await provider.describe("moved", definition, policy).then(() => undefined, (error: Error) => error);
      expect(refused).toBeInstanceOf(Error);
      expect(refused!.message).not.toContain(SECRET);
      const elsewhere = seen.slice(before).filter((request) => request.host === "other.test");
      expect(elsewhere.length).toBeGreaterThan(0);
      for (const request of elsewhere) expect(request.url).not.toContain(SECRET);
    } finally {
      await provider.close?.();
    }
  });

  it("attaches the secret again after a redirect on the same origin", async () => {
    const provider = createConnections({ grants, resolve });
    const definition = http("/relative");
    const before = seen.length;
    const result = await provider.tools("keyed", definition, await provider.describe("keyed", definition, policy), policy).keyed__call!.execute({}, callCtx());
    expect(seen.slice(before).map((request) => [new URL(request.url, "http://x").pathname, keyOf(request)])).toEqual([
      ["/relative", SECRET],
      ["/echo", SECRET],
    ]);
    expect(result).toMatchObject({ status: 200 });
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it("refuses a request to a host the grant is not bound to before the secret is read or anything sent", async () => {
    // A store that fails every read: had the secret been read before the binding was checked, the call would fail with this instead.
    const unreadable: GrantStore = { ...grants, get: async () => Promise.reject(new Error("the grant store was read")) };
    const provider = createConnections({ grants: unreadable, resolve });
    const bound: ConnectionPolicy = { ...policy, grantHosts: ["api.test"] };
    const spec: DynamicConnectionSpec = { name: "keyed", kind: "http", baseUrl: `http://other.test:${port}`, auth: { grant: "api", query: "api_key" }, endpoints: { call: { method: "GET", path: "/echo", description: "Call" } } };
    const before = seen.length;
    const result = await provider.tools("keyed", spec, await provider.describe("keyed", spec, bound), bound).keyed__call!.execute({}, callCtx());
    expect(result).toMatchObject({ code: "AL_ERR_CONNECTION_REFUSED", error: expect.stringContaining('would send grant "api" to other.test') });
    expect(seen.slice(before)).toEqual([]);
  });
});

describe("a URL with a credential in it", () => {
  const refusal = (build: () => unknown) => {
    try {
      createConnections({ grants, resolve, connections: { keyed: build() as never } });
    } catch (error) {
      return error as Error & { code?: string; fix?: string };
    }
    throw new Error("not refused");
  };

  it("is refused in a host's definition, naming the field and the parameter, never the value", () => {
    for (const [build, field, parameter] of [
      [() => defineMcpConnection({ url: `https://mcp.example/mcp?api_key=${SECRET}`, description: "Docs" }), "url", "api_key"],
      [() => defineOpenApiConnection({ spec: `https://api.example/openapi.json?Access-Token=${SECRET}`, description: "API" }), "spec", "Access-Token"],
      [() => defineOpenApiConnection({ spec: { openapi: "3.0.3" }, baseUrl: `https://api.example/v1?region=eu&X-Amz-Signature=${SECRET}`, description: "API" }), "baseUrl", "X-Amz-Signature"],
      [() => defineHttpConnection({ baseUrl: `https://api.example/v1?sig=${SECRET}`, description: "API", endpoints: {} }), "baseUrl", "sig"],
      [() => defineHttpConnection({ baseUrl: `https://api.example/v1?github_api_key=${SECRET}`, description: "API", endpoints: {} }), "baseUrl", "github_api_key"],
      [() => defineHttpConnection({ baseUrl: `https://gitlab.example/api/v4?private_token=${SECRET}`, description: "GitLab", endpoints: {} }), "baseUrl", "private_token"],
      [() => defineHttpConnection({ baseUrl: `https://api.deepl.example/v2?auth_key=${SECRET}`, description: "DeepL", endpoints: {} }), "baseUrl", "auth_key"],
      [() => defineMcpConnection({ url: `https://mcp.example/mcp?license_key=${SECRET}`, description: "Licensed" }), "url", "license_key"],
      [() => defineMcpConnection({ url: `https://mcp.example/mcp?bearer_token=${SECRET}`, description: "Bearer" }), "url", "bearer_token"],
      [() => defineMcpConnection({ url: `https://mcp.example/mcp?deepl_auth_key=${SECRET}`, description: "Suffixed" }), "url", "deepl_auth_key"],
      [() => defineHttpConnection({ baseUrl: `https://api.example/v1?region=eu;api_key=${SECRET}`, description: "Semicolons", endpoints: {} }), "baseUrl", "api_key"],
    ] as const) {
      const error = refusal(build);
      expect(error.code).toBe("AL_ERR_CONNECTION_DEFINITION");
      expect(error.message).toContain(`${field} carries a credential in its query string (parameter "${parameter}")`);
      expect(error.fix).toContain(`auth: { grant: "<id>", query: "${parameter}" }`);
      expect(JSON.stringify({ message: error.message, fix: error.fix, stack: error.stack })).not.toContain(SECRET);
    }
    const fragment = refusal(() => defineMcpConnection({ url: `https://mcp.example/mcp#access_token=${SECRET}`, description: "Docs" }));
    expect(fragment.message).toContain('url carries a credential in its fragment (parameter "access_token")');
    expect(fragment.message).not.toContain(SECRET);
  });

  it("is refused in a run's spec before anything is fetched", async () => {
    const provider = createConnections({ grants, resolve });
    const before = seen.length;
    const spec: DynamicConnectionSpec = { name: "keyed", kind: "mcp", url: `http://api.test:${port}/mcp?token=${SECRET}` };
    const error = await provider.describe("keyed", spec, policy).then(() => undefined, (failure: Error) => failure);
    expect(error).toMatchObject({ code: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringContaining('url carries a credential in its query string (parameter "token")') });
    expect(error!.message).not.toContain(SECRET);
    expect(seen.slice(before)).toEqual([]);
  });

  it("is not echoed by the refusal of a URL that is not http(s)", () => {
    const error = refusal(() => defineMcpConnection({ url: `ftp://mcp.example/mcp?token=${SECRET}`, description: "Docs" }));
    expect(error.message).toContain('url "ftp://mcp.example/mcp?<query>" is not an absolute http(s) URL');
    const unparsed = refusal(() => defineMcpConnection({ url: `mcp.example/mcp?token=${SECRET}`, description: "Docs" }));
    expect(unparsed.message).toContain('url "mcp.example/mcp?<query>" is not an absolute http(s) URL');
    // A password with a "/" in it would parse as a port and a path: all before the last "@" is hidden.
    const slashed = refusal(() => defineMcpConnection({ url: `me:12/${SECRET}@mcp.example/mcp`, description: "Docs" }));
    expect(slashed.message).toContain('url "<credentials>@mcp.example/mcp" is not an absolute http(s) URL');
    for (const refused of [error, unparsed, slashed]) expect(`${refused.message} ${(refused as { fix?: string }).fix}`).not.toContain(SECRET);
  });

  it("leaves parameters that are no credential alone", () => {
    // (A baseUrl takes no query at all, credential or not: see http-endpoints.test.ts.)
    expect(() => createConnections({ connections: { paged: defineMcpConnection({ url: "https://mcp.example/mcp?page=2&pageToken=abc&monkey=1", description: "API" }) } })).not.toThrow();
    expect(() => createConnections({ connections: { paged: defineMcpConnection({ url: "https://mcp.example/mcp?page_token=abc;next_token=def&turnkey=1&hotkey=2", description: "API" }) } })).not.toThrow();
  });

  it("refuses auth with both a header and a query parameter", () => {
    const error = refusal(() => defineHttpConnection({ baseUrl: "https://api.example/v1", description: "API", auth: { grant: "api", header: "x-api-key", query: "api_key" }, endpoints: {} }));
    expect(error).toMatchObject({ code: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringContaining("auth.header and auth.query are both set") });
    expect(refusal(() => defineHttpConnection({ baseUrl: "https://api.example/v1", description: "API", auth: { grant: "api", query: "" }, endpoints: {} })).message).toContain('auth.query "" is not a query parameter name');
  });
});
