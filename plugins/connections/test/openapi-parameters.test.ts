import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineOpenApiConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { startRecordingService, type RecordingService } from "./support/recording-service.js";
import { createConnections } from "../src/index.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["api.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;
const ok = { "200": { description: "ok" } };

let service: RecordingService;
beforeAll(async () => {
  service = await startRecordingService();
});
afterAll(() => service.close());

/** The tools of an OpenAPI connection over `paths`, and the warnings its description gave. */
async function toolsFor(paths: Record<string, unknown>) {
  const warnings: string[] = [];
  const provider = createConnections({ resolve, logger: { warn: (_fields, message) => void warnings.push(String(message)) } });
  const definition = defineOpenApiConnection({ spec: { openapi: "3.0.3", info: { title: "T", version: "1" }, servers: [{ url: `http://api.test:${service.port}` }], paths }, description: "T" });
  return { tools: provider.tools("shop", definition, await provider.describe("shop", definition, policy), policy), warnings };
}

describe("OpenAPI parameters", () => {
  it("take an operation's parameter in place of the path item's of the same name and location, sending it once", async () => {
    const { tools } = await toolsFor({
      "/items": {
        parameters: [
          { name: "limit", in: "query", schema: { type: "integer" } },
          { name: "X-Tenant", in: "header", schema: { type: "string" } },
        ],
        get: {
          operationId: "listItems",
          parameters: [
            { name: "limit", in: "query", required: true, schema: { type: "integer", maximum: 50 } },
            { name: "x-tenant", in: "header", schema: { type: "string" } },
          ],
          responses: ok,
        },
      },
    });
    const schema = tools.shop__list_items!.inputSchema as { properties: Record<string, unknown>; required?: string[] };
    expect(schema.properties.limit).toMatchObject({ type: "integer", maximum: 50 });
    expect(schema.required).toEqual(["limit"]);
    expect(Object.keys(schema.properties)).toEqual(["limit", "x-tenant"]);
    expect(await tools.shop__list_items!.execute({ limit: 5 }, callCtx())).toMatchObject({ status: 200 });
    expect(service.received.at(-1)!.url).toBe("/items?limit=5");
  });

  it("write a path parameter in the matrix or label style the document declares, exploded or not", async () => {
    const operation = (operationId: string, style: string, explode: boolean) => ({
      get: { operationId, parameters: [{ name: "id", in: "path", required: true, style, explode, schema: {} }], responses: ok },
    });
    const { tools } = await toolsFor({
      "/m/{id}": operation("matrix", "matrix", false),
      "/me/{id}": operation("matrixExploded", "matrix", true),
      "/l/{id}": operation("label", "label", false),
      "/le/{id}": operation("labelExploded", "label", true),
      "/s/{id}": operation("simple", "simple", false),
    });
    const cases: Array<[string, unknown, string]> = [
      ["matrix", "7", "/m/;id=7"],
      ["matrix", "a b;c", "/m/;id=a%20b%3Bc"],
      ["matrix", ["3", "4", "5"], "/m/;id=3,4,5"],
      ["matrix_exploded", ["3", "4", "5"], "/me/;id=3;id=4;id=5"],
      ["matrix", { role: "admin", firstName: "Alex" }, "/m/;id=role,admin,firstName,Alex"],
      ["matrix_exploded", { role: "admin", firstName: "Alex" }, "/me/;role=admin;firstName=Alex"],
      ["label", "7", "/l/.7"],
      ["label", ["3", "4", "5"], "/l/.3,4,5"],
      ["label_exploded", ["3", "4", "5"], "/le/.3.4.5"],
      ["label", { role: "admin", firstName: "Alex" }, "/l/.role,admin,firstName,Alex"],
      ["label_exploded", { role: "admin", firstName: "Alex" }, "/le/.role=admin.firstName=Alex"],
      ["simple", ["3", "4", "5"], "/s/3,4,5"],
    ];
    for (const [tool, id, url] of cases) {
      expect(await tools[`shop__${tool}`]!.execute({ id }, callCtx()), tool).toMatchObject({ status: 200 });
      expect(service.received.at(-1)!.url, `${tool} ${JSON.stringify(id)}`).toBe(url);
    }
    // A label of "." would be the segment "..": refused, as in the simple style, nothing sent.
    const before = service.received.length;
    expect(await tools.shop__label!.execute({ id: "." }, callCtx())).toEqual({ error: `path parameter "id" is ".", which would leave the operation's path; pass the id or name itself` });
    expect(service.received.length).toBe(before);
  });

  it("leave out, with a warning naming them, an operation whose parameters share a name in two locations", async () => {
    const { tools, warnings } = await toolsFor({
      "/users/{id}/posts": {
        get: {
          operationId: "userPosts",
          parameters: [
            { name: "id", in: "path", required: true, schema: { type: "string" } },
            { name: "id", in: "query", schema: { type: "string" } },
          ],
          responses: ok,
        },
      },
      "/users": { get: { operationId: "listUsers", responses: ok } },
    });
    expect(Object.keys(tools)).toEqual(["shop__list_users"]);
    expect(warnings).toEqual([
      'connection "shop": OpenAPI operation userPosts is not offered as a tool: its parameters "id" in path and "id" in query share a name, and a tool takes each input by name once; give them different names in the document to offer it',
    ]);
  });

  it("leave out, with a warning, an operation with a parameter named body beside a request body, and keep one without a body", async () => {
    const { tools, warnings } = await toolsFor({
      "/notes": {
        post: { operationId: "addNote", parameters: [{ name: "body", in: "query", schema: { type: "string" } }], requestBody: { content: { "application/json": { schema: { type: "object" } } } }, responses: ok },
        get: { operationId: "findNotes", parameters: [{ name: "body", in: "query", schema: { type: "string" } }], responses: ok },
      },
    });
    expect(Object.keys(tools)).toEqual(["shop__find_notes"]);
    expect(warnings).toEqual([`connection "shop": OpenAPI operation addNote is not offered as a tool: its query parameter "body" has the name of the tool's body input (the request body); rename the parameter in the document to offer it`]);
    await tools.shop__find_notes!.execute({ body: "hello" }, callCtx());
    expect(service.received.at(-1)!.url).toBe("/notes?body=hello");
  });
});
