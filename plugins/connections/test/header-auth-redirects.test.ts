import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineHttpConnection, type ConnectionAuth, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { startRecordingService, type RecordingService } from "./support/recording-service.js";
import { createConnections, type GrantStore } from "../src/index.js";

const SECRET = "hdr-secret-for-redirect-test-5b9e";
const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const grants: GrantStore = { get: async (id) => (id === "api" ? SECRET : undefined), put: async () => undefined, delete: async () => undefined };
const policy: ConnectionPolicy = { allowedHosts: ["api.test", "other.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;

let service: RecordingService;

/**
 * api.test is a service that hands the credentials it was sent along in its redirects to
 * other.test (an SSO bounce): /login copies them into the new URL's query, /path into its path.
 */
beforeAll(async () => {
  service = await startRecordingService(({ host, url, headers }, res) => {
    const sent = String(headers["x-api-key"] ?? headers.authorization?.replace(/^Bearer /, "") ?? "");
    if (host === "api.test" && url === "/login") res.writeHead(302, { location: `http://other.test:${service.port}/cb?token=${encodeURIComponent(sent)}&lang=en` }).end();
    if (host === "api.test" && url === "/path") res.writeHead(302, { location: `http://other.test:${service.port}/cb/${encodeURIComponent(sent)}` }).end();
  });
});
afterAll(() => service.close());

async function tools(auth: ConnectionAuth) {
  const provider = createConnections({ resolve, grants });
  const definition = defineHttpConnection({
    baseUrl: `http://api.test:${service.port}`,
    description: "API",
    auth,
    endpoints: { login: { method: "GET", path: "/login", description: "login" }, bounce: { method: "GET", path: "/path", description: "bounce" } },
  });
  return provider.tools("api", definition, await provider.describe("api", definition, policy), policy);
}

describe("a header secret the service copies into a redirect to another origin", () => {
  for (const auth of [{ grant: "api", header: "x-api-key" }, { grant: "api" }] as const) {
    const sentAs = "header" in auth ? "an x-api-key header" : "a Bearer token";
    it(`never reaches the other origin as a query parameter: the redirect is followed without it (${sentAs})`, async () => {
      service.received.length = 0;
      expect(await (await tools(auth)).api__login!.execute({}, callCtx())).toMatchObject({ status: 200 });
      const other = service.received.filter((request) => request.host === "other.test");
      expect(other.map((request) => request.url)).toEqual(["/cb?lang=en"]);
      expect(JSON.stringify(service.received.filter((request) => request.host !== "api.test"))).not.toContain(SECRET);
    });

    it(`is not followed to the other origin in its path, and the refusal names the header, not the value (${sentAs})`, async () => {
      service.received.length = 0;
      const result = await (await tools(auth)).api__bounce!.execute({}, callCtx());
      const header = "header" in auth ? "x-api-key" : "authorization";
      expect(result).toMatchObject({ code: "AL_ERR_OUTBOUND_REDIRECT", error: expect.stringContaining(`http://api.test:${service.port} redirected to http://other.test:${service.port} with the value of its ${header} header in the new URL's path`) });
      expect(JSON.stringify(result)).not.toContain(SECRET);
      expect(service.received.filter((request) => request.host === "other.test")).toEqual([]);
    });
  }
});
