import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineHttpConnection, defineOpenApiConnection, type ConnectionPolicy, type HttpEndpoint } from "@assemblyline-agents/core";
import { createConnections } from "../src/index.js";

const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;
const policy: ConnectionPolicy = { allowedHosts: ["127.0.0.1"], onlyAllowedHosts: true };
let server: Server;
let port: number;
const received: Array<{ method: string; body: string }> = [];

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    received.push({ method: req.method ?? "", body: Buffer.concat(chunks).toString("utf8") });
    res.writeHead(200, { "content-type": "application/json" }).end('{"done":true}');
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
});

const items = (endpoint: Record<string, unknown>) =>
  defineHttpConnection({ description: "Items API", baseUrl: `http://127.0.0.1:${port}`, endpoints: { delete_item: endpoint as unknown as HttpEndpoint } });

describe("an HTTP connection's endpoints", () => {
  it("refuses a field an endpoint does not read (an approval, headers, query of its own), naming it and the fields there are", () => {
    for (const [extra, named] of [
      [{ approval: true }, /endpoint delete_item: "approval" is not a field of an HTTP endpoint/],
      [{ headers: { "x-tenant": "acme" }, query: { type: "object" } }, /endpoint delete_item: "headers", "query" are not fields of an HTTP endpoint/],
    ] as const) {
      const connections = { items: items({ method: "DELETE", path: "/items/{id}", description: "Delete an item", ...extra }) };
      expect(() => createConnections({ connections })).toThrow(expect.objectContaining({ code: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringMatching(named) }));
      expect(() => createConnections({ connections })).toThrow(/Use only method, path, description, body\. .*approval is the connection's/);
    }
  });

  it("refuses a body declared on a GET, which fetch could never send", () => {
    const connections = { items: items({ method: "GET", path: "/items", description: "List", body: { type: "object" } }) };
    expect(() => createConnections({ connections })).toThrow(expect.objectContaining({ code: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringContaining("endpoint delete_item: a GET request has no body, so body cannot be declared") }));
  });

  it("sends the body a DELETE declares", async () => {
    const definition = items({ method: "DELETE", path: "/items/{id}", description: "Delete an item", body: { type: "object", properties: { reason: { type: "string" } } } });
    const provider = createConnections({ connections: { items: definition } });
    const tools = provider.tools("items", definition, await provider.describe("items", definition, policy), policy);
    expect(await tools.items__delete_item!.execute({ id: "42", body: { reason: "duplicate" } }, callCtx())).toEqual({ status: 200, body: { done: true } });
    expect(received.at(-1)).toEqual({ method: "DELETE", body: '{"reason":"duplicate"}' });
  });

  it("refuses a path parameter named query or body, the tool's own inputs, naming it and the fix", () => {
    for (const clash of ["query", "body"]) {
      const connections = { items: items({ method: "POST", path: `/search/{${clash}}`, description: "Search" }) };
      expect(() => createConnections({ connections })).toThrow(
        expect.objectContaining({
          code: "AL_ERR_CONNECTION_DEFINITION",
          message: expect.stringContaining(`endpoint delete_item: path parameter {${clash}} has the name of the tool's own ${clash} input`),
          fix: expect.stringContaining(`Give {${clash}} another name in path`),
        }),
      );
    }
  });

  it("refuses a path with a query string or a fragment, which the tool's query input would be written after, pointing to that input", () => {
    for (const [path, part] of [["/search?type=repo", "query string"], ["/search#top", "fragment"]]) {
      const connections = { items: items({ method: "GET", path, description: "Search" }) };
      expect(() => createConnections({ connections })).toThrow(
        expect.objectContaining({
          code: "AL_ERR_CONNECTION_DEFINITION",
          message: expect.stringContaining(`endpoint delete_item: path ${JSON.stringify(path)} has a ${part}`),
          fix: expect.stringContaining(`Give path without ${part === "query string" ? "?..." : "#..."} ("/search"); the model passes query parameters in the tool's query input`),
        }),
      );
    }
  });

  it("refuses an endpoint whose tool name would pass the 64 characters model APIs accept, saying how long it may be", () => {
    const endpoint = "list_every_open_pull_request_review_comment_for_the_repository_owner";
    const definition = defineHttpConnection({ baseUrl: "http://api.test", description: "GitHub", endpoints: { [endpoint]: { method: "GET", path: "/x", description: "x" } } });
    expect(() => createConnections({ connections: { github: definition } })).toThrow(
      expect.objectContaining({
        code: "AL_ERR_CONNECTION_DEFINITION",
        message: expect.stringContaining(`endpoint ${endpoint}: its tool github__${endpoint} is 76 characters, and model APIs refuse tool names over 64`),
        fix: expect.stringContaining("Name the endpoint in at most 56 characters"),
      }),
    );
    const longest = "x".repeat(56);
    expect(() => createConnections({ connections: { github: defineHttpConnection({ baseUrl: "http://api.test", description: "GitHub", endpoints: { [longest]: { method: "GET", path: "/x", description: "x" } } }) } })).not.toThrow();
  });
});

describe("a baseUrl", () => {
  it("with a query string or a fragment is refused, as each tool's path would be written into it", () => {
    const endpoints = { get_item: { method: "GET" as const, path: "/items/{id}", description: "one item" } };
    for (const [baseUrl, part] of [
      ["http://api.test/v1?version=2", "query string"],
      ["http://api.test/v1?", "query string"],
      ["http://api.test/v1#top", "fragment"],
    ] as const) {
      for (const definition of [defineHttpConnection({ baseUrl, description: "API", endpoints }), defineOpenApiConnection({ baseUrl, spec: "http://api.test/openapi.json", description: "API" })]) {
        expect(() => createConnections({ connections: { api: definition } }), `${definition.kind} ${baseUrl}`).toThrow(
          expect.objectContaining({
            code: "AL_ERR_CONNECTION_DEFINITION",
            // The URL is quoted without its query or fragment, which may hold what is not for logs.
            message: expect.stringMatching(new RegExp(`baseUrl "http://api\\.test/v1[?#]?(<query>|<fragment>)?" has a ${part}; each tool's path is written after baseUrl`)),
            fix: expect.stringContaining('Give baseUrl as scheme, host and path only ("https://api.example.com/v1")'),
          }),
        );
        expect(() => createConnections({ connections: { api: definition } })).not.toThrow(/version=2/);
      }
    }
  });

  it("is refused in a run's spec, and a document's server with a query string asks for baseUrl", async () => {
    const provider = createConnections({});
    const refused = await provider.describe("api", { name: "api", kind: "http", baseUrl: "http://api.test/v1?version=2", endpoints: { get_item: { method: "GET", path: "/items", description: "x" } } } as never, policy).catch((error: Error) => error);
    expect(refused).toMatchObject({ code: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringContaining("has a query string") });
    const spec = { openapi: "3.0.3", info: { title: "T", version: "1" }, servers: [{ url: "http://api.test/v1?version=2" }], paths: { "/items": { get: { operationId: "listItems", responses: { "200": { description: "ok" } } } } } };
    const server = await provider.describe("api", defineOpenApiConnection({ spec, description: "API" }), policy).catch((error: Error) => error);
    expect(server).toMatchObject({ code: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringContaining('the document\'s server "http://api.test/v1?version=2" has a query string or fragment'), fix: expect.stringContaining("Pass baseUrl") });
  });
});
