import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConnectionPolicy, DynamicConnectionSpec, OutboundResolver } from "@assemblyline-agents/core";
import { createConnections, type GrantStore } from "../src/index.js";

const SECRET = "tok-only-for-api-test-5e2a9c41";
const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const grants: GrantStore = { get: async (id) => (id === "api" ? SECRET : undefined), put: async () => undefined, delete: async () => undefined };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;
/** A run's connection: the agent's allowedHosts, and its grant bound to api.test alone (agent.ts dynamicConnections.grants). */
const policy: ConnectionPolicy = { allowedHosts: ["api.test", "other.test"], onlyAllowedHosts: true, grantHosts: ["api.test"] };

/** One server under two names: what reached it, by the Host it was asked for. */
let server: Server;
let port: number;
const seen: Array<{ host: string; path: string; authorization: string | undefined }> = [];

function handle(req: IncomingMessage, res: ServerResponse): void {
  const host = (req.headers.host ?? "").split(":")[0]!;
  seen.push({ host, path: req.url ?? "/", authorization: req.headers.authorization });
  if (req.url === "/openapi.json") {
    // The document names another allowed host as the API's server.
    const document = {
      openapi: "3.0.3",
      info: { title: "Items", version: "1" },
      servers: [{ url: `http://other.test:${port}` }],
      paths: { "/items": { get: { operationId: "list_items", responses: { "200": { description: "ok" } } } } },
    };
    return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(document));
  }
  res.writeHead(200, { "content-type": "application/json" }).end("{}");
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
});

describe("a run's connection sends its grant only to the hosts it is bound to", () => {
  it("fails a call that an OpenAPI document sends to another host, without sending it", async () => {
    const provider = createConnections({ grants, resolve });
    const spec: DynamicConnectionSpec = { name: "items", kind: "openapi", spec: `http://api.test:${port}/openapi.json`, description: "Items", auth: { grant: "api" } };
    const record = await provider.describe("items", spec, policy);
    const before = seen.length;
    const result = await provider.tools("items", spec, record, policy).items__list_items!.execute({}, callCtx());
    expect(result).toMatchObject({
      code: "AL_ERR_CONNECTION_REFUSED",
      error: expect.stringContaining(`connection "items" would send grant "api" to other.test, but agent.ts dynamicConnections.grants lets it go only to api.test; the request was not sent`),
    });
    expect(seen.slice(before)).toEqual([]);
    // The document itself, on the bound host, was fetched with the grant.
    expect(seen.filter((request) => request.path === "/openapi.json").at(-1)).toMatchObject({ host: "api.test", authorization: `Bearer ${SECRET}` });
  });

  it("refuses to fetch a document with the grant from a host it is not bound to", async () => {
    const provider = createConnections({ grants, resolve });
    const before = seen.length;
    const spec: DynamicConnectionSpec = { name: "items", kind: "openapi", spec: `http://other.test:${port}/openapi.json`, description: "Items", auth: { grant: "api" } };
    await expect(provider.describe("items", spec, policy)).rejects.toMatchObject({ code: "AL_ERR_CONNECTION_REFUSED", message: expect.stringContaining("would send grant \"api\" to other.test") });
    expect(seen.slice(before)).toEqual([]);
  });

  it("fails an HTTP or MCP connection whose own URL is on another host, without sending anything", async () => {
    const provider = createConnections({ grants, resolve });
    try {
      const http: DynamicConnectionSpec = { name: "notes", kind: "http", baseUrl: `http://other.test:${port}`, auth: { grant: "api" }, endpoints: { ping: { method: "GET", path: "/ping", description: "Ping" } } };
      const before = seen.length;
      const result = await provider.tools("notes", http, await provider.describe("notes", http, policy), policy).notes__ping!.execute({}, callCtx());
      expect(result).toMatchObject({ code: "AL_ERR_CONNECTION_REFUSED" });
      const mcp: DynamicConnectionSpec = { name: "notes", kind: "mcp", url: `http://other.test:${port}/mcp`, auth: { grant: "api" } };
      await expect(provider.describe("notes", mcp, policy)).rejects.toMatchObject({ code: "AL_ERR_CONNECTION_REFUSED" });
      expect(seen.slice(before)).toEqual([]);
    } finally {
      await provider.close?.();
    }
  });

  it("fails every request of a connection whose grant is bound to no host", async () => {
    const provider = createConnections({ grants, resolve });
    const http: DynamicConnectionSpec = { name: "notes", kind: "http", baseUrl: `http://api.test:${port}`, auth: { grant: "api" }, endpoints: { ping: { method: "GET", path: "/ping", description: "Ping" } } };
    const unbound: ConnectionPolicy = { ...policy, grantHosts: [] };
    const before = seen.length;
    const result = await provider.tools("notes", http, await provider.describe("notes", http, unbound), unbound).notes__ping!.execute({}, callCtx());
    expect(result).toMatchObject({ code: "AL_ERR_CONNECTION_REFUSED", error: expect.stringContaining("lets it go only to no host") });
    expect(seen.slice(before)).toEqual([]);
  });
});
