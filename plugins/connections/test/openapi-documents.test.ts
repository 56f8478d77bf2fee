import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineHttpConnection, defineOpenApiConnection, type ConnectionPolicy, type OutboundResolver } from "@assemblyline-agents/core";
import { startRecordingService, type RecordingService } from "./support/recording-service.js";
import { createConnections } from "../src/index.js";

const resolve: OutboundResolver = async () => [{ address: "127.0.0.1", family: 4 }];
const policy: ConnectionPolicy = { allowedHosts: ["api.test"], onlyAllowedHosts: true };
const callCtx = () => ({ signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;

let service: RecordingService;
/** The calls the service's API received (its documents' fetches left out), bodies parsed. */
const received = () => service.received.filter((request) => !request.url.startsWith("/docs/")).map(({ url, body }) => ({ url, body: body ? JSON.parse(body) : null }));

const treeDocument = () => ({
  openapi: "3.0.3",
  info: { title: "Trees", version: "1.0.0" },
  servers: [{ url: `http://api.test:${service.port}/{version}`, variables: { version: { default: "v2", enum: ["v1", "v2"] } } }],
  paths: {
    "/nodes": {
      post: {
        operationId: "addNode",
        requestBody: { required: true, content: { "application/json": { schema: { $ref: "#/components/schemas/Node" } } } },
        responses: { "200": { description: "ok" } },
      },
      get: {
        operationId: "findNodes",
        parameters: [
          { name: "ids", in: "query", schema: { type: "array", items: { type: "integer" } } },
          { name: "tags", in: "query", explode: false, schema: { type: "array", items: { type: "string" } } },
          { name: "filter", in: "query", style: "deepObject", schema: { type: "object", properties: { sky: { type: "string" } } } },
        ],
        responses: { "200": { description: "ok" } },
      },
    },
  },
  components: { schemas: { Node: { type: "object", properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#/components/schemas/Node" } } } } } },
});

/** A document as services often publish it: YAML, with a $ref, served without servers. */
const YAML_DOCUMENT = `openapi: 3.0.3
info:
  title: Trees
  version: 1.0.0
paths:
  /nodes/{id}:
    get:
      operationId: getNode
      parameters:
        - $ref: "#/components/parameters/Id"
      responses:
        "200":
          description: ok
components:
  parameters:
    Id:
      name: id
      in: path
      required: true
      schema:
        type: integer
`;

beforeAll(async () => {
  service = await startRecordingService(({ url }, res) => {
    if (url === "/docs/huge.json") {
      // Announces 70 MB, sends a little, and holds the connection open.
      res.writeHead(200, { "content-type": "application/json", "content-length": String(70 * 1024 * 1024) }).write('{"openapi":"3.0.0",');
    } else if (url === "/docs/openapi.yaml") {
      res.writeHead(200, { "content-type": "application/yaml" }).end(YAML_DOCUMENT);
    } else if (url === "/docs/openapi.json") {
      const { servers: _servers, ...withoutServers } = treeDocument();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(withoutServers));
    }
  });
});
afterAll(() => service.close());

async function toolsOf(definition: ReturnType<typeof defineOpenApiConnection>) {
  const provider = createConnections({ resolve });
  const record = await provider.describe("trees", definition, policy);
  return { record, tools: provider.tools("trees", definition, record, policy) };
}

describe("OpenAPI documents as real services write them", () => {
  it("describes a recursive schema (a node whose children are nodes) and sends a tree to the server the variables name", async () => {
    const { record, tools } = await toolsOf(defineOpenApiConnection({ spec: treeDocument(), description: "Trees" }));
    expect(() => JSON.stringify(record)).not.toThrow();
    const tree = { name: "root", children: [{ name: "leaf", children: [] }] };
    expect(await tools.trees__add_node!.execute({ body: tree }, callCtx())).toMatchObject({ status: 200 });
    expect(received().at(-1)).toEqual({ url: "/v2/nodes", body: tree });
  });

  it("writes array and object query parameters in their OpenAPI style", async () => {
    const { tools } = await toolsOf(defineOpenApiConnection({ spec: treeDocument(), description: "Trees" }));
    await tools.trees__find_nodes!.execute({ ids: [1, 2], tags: ["a", "b"], filter: { sky: "clear" } }, callCtx());
    expect(new URL(received().at(-1)!.url, "http://x").search).toBe(`?ids=1&ids=2&tags=a%2Cb&filter%5Bsky%5D=clear`);
  });

  it("serves a fetched document that lists no servers from its own origin", async () => {
    const { tools } = await toolsOf(defineOpenApiConnection({ spec: `http://api.test:${service.port}/docs/openapi.json`, description: "Trees" }));
    await tools.trees__find_nodes!.execute({ ids: [3] }, callCtx());
    expect(received().at(-1)!.url).toBe("/nodes?ids=3");
  });

  it("reads a document fetched as YAML", async () => {
    const { tools } = await toolsOf(defineOpenApiConnection({ spec: `http://api.test:${service.port}/docs/openapi.yaml`, description: "Trees" }));
    expect(tools.trees__get_node!.inputSchema).toMatchObject({ properties: { id: { type: "integer" } }, required: ["id"] });
    await tools.trees__get_node!.execute({ id: 7 }, callCtx());
    expect(received().at(-1)!.url).toBe("/nodes/7");
  });

  it("refuses a fetched document past 64 MiB without reading it, saying to give it inline", async () => {
    const refused = await toolsOf(defineOpenApiConnection({ spec: `http://api.test:${service.port}/docs/huge.json`, description: "Trees" })).catch((error: unknown) => error);
    expect(String(refused)).toMatch(/AL_ERR_CONNECTION_FAILED.*larger than 64 MiB.*inline/s);
  });

  it("refuses an inline document whose server is relative, asking for baseUrl", async () => {
    const document = { ...treeDocument(), servers: [{ url: "/v1" }] };
    await expect(toolsOf(defineOpenApiConnection({ spec: document, description: "Trees" }))).rejects.toMatchObject({
      code: "AL_ERR_CONNECTION_DEFINITION",
      message: expect.stringMatching(/connection "trees": the document's server "\/v1" is not an absolute URL and the document was given inline[\s\S]*fix: Pass baseUrl/),
    });
    const { tools } = await toolsOf(defineOpenApiConnection({ spec: document, baseUrl: `http://api.test:${service.port}/v1`, description: "Trees" }));
    await tools.trees__find_nodes!.execute({}, callCtx());
    expect(received().at(-1)!.url).toBe("/v1/nodes");
  });
});

describe("tool names", () => {
  it("fits every <connection>__<tool> name in the 64 characters model providers accept, each distinct and the same in every process", async () => {
    const long = "reposGetRepositoryCollaboratorPermissionLevelForAUserInAnOrganization";
    const operations = [`${long}Admin`, `${long}Member`, "list_items", "listItems", "list_items_2"];
    const document = {
      openapi: "3.0.3",
      info: { title: "Long", version: "1.0.0" },
      servers: [{ url: `http://api.test:${service.port}` }],
      paths: Object.fromEntries(operations.map((operationId, index) => [`/op${index}`, { get: { operationId, responses: { "200": { description: "ok" } } } }])),
    };
    const names = async () => Object.keys((await toolsOf(defineOpenApiConnection({ spec: document, description: "Long" }))).tools);
    const first = await names();
    expect(first).toHaveLength(operations.length);
    expect(new Set(first).size).toBe(operations.length);
    for (const name of first) expect(name).toMatch(/^trees__[a-z][a-z0-9_]*$/);
    for (const name of first) expect(name.length).toBeLessThanOrEqual(64);
    expect(first[0]!.startsWith("trees__repos_get_repository_collaborator")).toBe(true);
    expect(await names()).toEqual(first);
  });
});

describe("HTTP endpoints", () => {
  it("answers a body given to an endpoint that declares none with an error the model can act on, sending nothing", async () => {
    const provider = createConnections({ resolve });
    const definition = defineHttpConnection({
      baseUrl: `http://api.test:${service.port}`,
      description: "Nodes",
      endpoints: { list_nodes: { method: "GET", path: "/nodes", description: "List" }, add_node: { method: "POST", path: "/nodes", description: "Add", body: { type: "object" } } },
    });
    const record = await provider.describe("nodes", definition, policy);
    const tools = provider.tools("nodes", definition, record, policy);
    expect(tools.nodes__list_nodes!.inputSchema).toMatchObject({ additionalProperties: false });
    const before = received().length;
    expect(await tools.nodes__list_nodes!.execute({ body: { name: "x" } }, callCtx())).toEqual({ error: "list_nodes takes no body (GET /nodes); call it without body" });
    expect(received().length).toBe(before);
    expect(await tools.nodes__add_node!.execute({ body: { name: "x" } }, callCtx())).toMatchObject({ status: 200 });
    expect(received().at(-1)).toEqual({ url: "/nodes", body: { name: "x" } });
  });
});
