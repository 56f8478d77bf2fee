import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineHttpConnection, defineOpenApiConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { createConnections } from "../src/index.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["svc.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;

let server: Server;
let base: string;
const seen: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req.url ?? "");
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ path: req.url }));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  base = `http://svc.test:${(server.address() as AddressInfo).port}/api/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
});

/**
 * A path parameter is one segment of the operation's path. `..` passed as one would be folded by
 * the URL parser and send the call, with the connection's credentials, to another endpoint of the
 * service than the tool's (one no tool, and no per-tool approval, covers).
 */
describe("path parameters", () => {
  it("refuse . and .. in an HTTP endpoint's path, so a call never leaves the tool's path", async () => {
    const provider = createConnections({ resolve });
    const definition = defineHttpConnection({ baseUrl: base, description: "Repos", endpoints: { get_profile: { method: "GET", path: "/repos/{owner}/{repo}/profile", description: "A repository's profile" } } });
    try {
      const tools = provider.tools("repos", definition, await provider.describe("repos", definition, policy), policy);
      seen.length = 0;
      for (const value of ["..", "."]) {
        expect(await tools.repos__get_profile!.execute({ owner: value, repo: value }, callCtx())).toEqual({ error: `path parameter "owner" is "${value}", which would leave the operation's path; pass the id or name itself` });
      }
      expect(seen).toEqual([]);
      // A value that merely holds dots or slashes stays inside its segment.
      expect(await tools.repos__get_profile!.execute({ owner: "a..b", repo: "../x" }, callCtx())).toMatchObject({ status: 200, body: { path: "/api/v1/repos/a..b/..%2Fx/profile" } });
    } finally {
      await provider.close?.();
    }
  });

  it("refuse . and .. in an OpenAPI operation's path", async () => {
    const provider = createConnections({ resolve });
    const definition = defineOpenApiConnection({
      baseUrl: base,
      description: "Users",
      spec: {
        openapi: "3.0.3",
        info: { title: "Users", version: "1" },
        paths: { "/users/{id}/profile": { get: { operationId: "getProfile", parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], responses: { 200: { description: "ok" } } } } },
      },
    });
    try {
      const tools = provider.tools("users", definition, await provider.describe("users", definition, policy), policy);
      const [name] = Object.keys(tools);
      seen.length = 0;
      expect(await tools[name!]!.execute({ id: ".." }, callCtx())).toEqual({ error: `path parameter "id" is "..", which would leave the operation's path; pass the id or name itself` });
      expect(seen).toEqual([]);
      expect(await tools[name!]!.execute({ id: "u-1" }, callCtx())).toMatchObject({ status: 200, body: { path: "/api/v1/users/u-1/profile" } });
    } finally {
      await provider.close?.();
    }
  });
});
