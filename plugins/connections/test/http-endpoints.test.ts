import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineHttpConnection, type ConnectionPolicy, type HttpEndpoint } from "@assemblyline-agents/core";
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
});
