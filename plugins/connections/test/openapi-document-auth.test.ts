import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineOpenApiConnection, type ConnectionPolicy, type OutboundResolver, type RuntimeLogger } from "@assemblyline-agents/core";
import { EncryptedGrantStore, createConnections } from "../src/index.js";

const SECRET = "sk_live_document-4c1e9f0a7b3d2e58";
const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["docs.test", "api.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;
const work = mkdtempSync(join(tmpdir(), "al-openapi-document-auth-"));
let grants: EncryptedGrantStore;
let server: Server;
let port: number;
/** Each request's path and authorization header. */
const seen: Array<{ path: string; authorization: string | undefined }> = [];

/** An OpenAPI document that quotes the authorization it was fetched with in an operation left out (multipart): a careless docs server. */
function documentFor(req: IncomingMessage) {
  return {
    openapi: "3.0.3",
    info: { title: "Files", version: "1" },
    paths: {
      "/upload": { post: { operationId: `upload (you sent ${String(req.headers.authorization)})`, requestBody: { required: true, content: { "multipart/form-data": { schema: { type: "object" } } } }, responses: { 200: { description: "ok" } } } },
      "/files": { get: { operationId: "listFiles", responses: { 200: { description: "ok" } } } },
    },
  };
}

beforeAll(async () => {
  grants = new EncryptedGrantStore({ path: join(work, "grants.json"), secretKey: "s".repeat(40) });
  await grants.put("files-token", SECRET);
  server = createServer((req, res) => {
    seen.push({ path: `${req.headers.host?.split(":")[0]}${req.url}`, authorization: req.headers.authorization });
    const body = req.url === "/openapi.json" ? documentFor(req) : { files: [] };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
  rmSync(work, { recursive: true, force: true });
});

describe("an OpenAPI connection's document", () => {
  it("is fetched without the API's credentials from another origin (a docs site, a CDN); the calls carry them", async () => {
    const provider = createConnections({ resolve, grants });
    const definition = defineOpenApiConnection({ spec: `http://docs.test:${port}/openapi.json`, baseUrl: `http://api.test:${port}`, description: "Files", auth: { grant: "files-token" } });
    seen.length = 0;
    const tools = provider.tools("files", definition, await provider.describe("files", definition, policy), policy);
    expect(seen).toEqual([{ path: "docs.test/openapi.json", authorization: undefined }]);
    await tools[Object.keys(tools).find((name) => name.includes("list"))!]!.execute({}, callCtx());
    expect(seen[1]).toEqual({ path: "api.test/files", authorization: `Bearer ${SECRET}` });
  });

  it("is fetched with them from the API's own origin, and what it quotes of them reaches neither the record nor the logs", async () => {
    const warnings: string[] = [];
    const logger: RuntimeLogger = { debug() {}, info() {}, error() {}, warn: (fields, msg) => void warnings.push(JSON.stringify(fields) + (msg ?? "")) };
    const provider = createConnections({ resolve, grants, logger });
    const definition = defineOpenApiConnection({ spec: `http://api.test:${port}/openapi.json`, baseUrl: `http://api.test:${port}`, description: "Files", auth: { grant: "files-token" } });
    seen.length = 0;
    const record = await provider.describe("files", definition, policy);
    expect(seen).toEqual([{ path: "api.test/openapi.json", authorization: `Bearer ${SECRET}` }]);
    // The multipart operation is left out with a warning that quotes its operationId.
    expect(warnings.join("\n")).toContain("upload (you sent Bearer [grant files-token])");
    expect(`${JSON.stringify(record)}${warnings.join("\n")}`).not.toContain(SECRET);
  });
});
