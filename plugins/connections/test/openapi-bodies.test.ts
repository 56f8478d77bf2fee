import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineOpenApiConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { startRecordingService, type RecordingService } from "./support/recording-service.js";
import { createConnections } from "../src/index.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["api.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;

let service: RecordingService;
beforeAll(async () => {
  service = await startRecordingService();
});
afterAll(() => service.close());

const ok = { "200": { description: "ok" } };
const document = () => ({
  openapi: "3.0.3",
  info: { title: "Shop", version: "1.0.0" },
  servers: [{ url: `http://api.test:${service.port}` }],
  paths: {
    "/cart": {
      get: {
        operationId: "getCart",
        parameters: [
          { name: "session", in: "cookie", required: true, schema: { type: "string" } },
          { name: "prefs", in: "cookie", schema: { type: "array", items: { type: "string" } } },
          { name: "Authorization", in: "header", schema: { type: "string" } },
        ],
        responses: ok,
      },
    },
    "/token": {
      post: {
        operationId: "getToken",
        requestBody: {
          required: true,
          content: {
            "application/x-www-form-urlencoded": {
              schema: { type: "object", properties: { grant_type: { type: "string" }, scope: { type: "array", items: { type: "string" } }, filter: { type: "object" } } },
              encoding: { filter: { style: "deepObject", explode: true } },
            },
          },
        },
        responses: ok,
      },
    },
    "/items/{id}": {
      patch: {
        operationId: "patchItem",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        requestBody: { required: true, content: { "application/merge-patch+json": { schema: { type: "object" } } } },
        responses: ok,
      },
    },
    "/avatar": {
      put: { operationId: "uploadAvatar", requestBody: { required: true, content: { "multipart/form-data": { schema: { type: "object" } } } }, responses: ok },
      post: { operationId: "touchAvatar", requestBody: { content: { "application/octet-stream": {} } }, responses: ok },
    },
  },
});

async function shop() {
  const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const provider = createConnections({ resolve, logger: { warn: (fields, message) => warnings.push({ fields, message: message ?? "" }) } });
  const definition = defineOpenApiConnection({ spec: document(), description: "Shop" });
  const tools = provider.tools("shop", definition, await provider.describe("shop", definition, policy), policy);
  return { tools, warnings };
}

describe("OpenAPI operations beyond JSON bodies and path, query and header parameters", () => {
  it("sends cookie parameters as one Cookie header, and offers no input for an Authorization header the grant owns", async () => {
    const { tools } = await shop();
    expect(Object.keys((tools.shop__get_cart!.inputSchema as { properties: object }).properties)).toEqual(["session", "prefs"]);
    expect(await tools.shop__get_cart!.execute({ session: "a b;c", prefs: ["dark", "compact"] }, callCtx())).toMatchObject({ status: 200 });
    expect(service.received.at(-1)).toMatchObject({ url: "/cart", headers: expect.objectContaining({ cookie: "session=a%20b%3Bc; prefs=dark,compact" }) });
  });

  it("sends an application/x-www-form-urlencoded body as a form, each field in its encoding", async () => {
    const { tools } = await shop();
    await tools.shop__get_token!.execute({ body: { grant_type: "client_credentials", scope: ["read", "write"], filter: { team: "a&b" } } }, callCtx());
    expect(service.received.at(-1)).toMatchObject({ method: "POST", url: "/token", headers: expect.objectContaining({ "content-type": "application/x-www-form-urlencoded" }) });
    expect([...new URLSearchParams(service.received.at(-1)!.body)]).toEqual([
      ["grant_type", "client_credentials"],
      ["scope", "read"],
      ["scope", "write"],
      ["filter[team]", "a&b"],
    ]);
  });

  it("sends a JSON body in the operation's own JSON media type", async () => {
    const { tools } = await shop();
    await tools.shop__patch_item!.execute({ id: "7", body: { name: null } }, callCtx());
    expect(service.received.at(-1)).toMatchObject({ method: "PATCH", url: "/items/7", headers: expect.objectContaining({ "content-type": "application/merge-patch+json" }), body: '{"name":null}' });
  });

  it("leaves out an operation whose required body only comes in a media type it cannot send, with one warning naming it and why", async () => {
    const { tools, warnings } = await shop();
    expect(tools.shop__upload_avatar).toBeUndefined();
    expect(warnings).toEqual([
      {
        fields: { event: "connection.operation_omitted", connection: "shop", operation: "uploadAvatar" },
        message: expect.stringMatching(/connection "shop": OpenAPI operation uploadAvatar is not offered as a tool: its request body is required and only comes as multipart\/form-data/),
      },
    ]);
    // An optional body it cannot send leaves an operation that works without it.
    expect(tools.shop__touch_avatar!.inputSchema).toEqual({ type: "object", properties: {} });
  });
});
