import { resolve as resolvePath } from "node:path";
import { describe, expect, it } from "vitest";
import { defineMcpConnection, defineOpenApiConnection, type ConnectionPolicy } from "@assemblyline-agents/core";
import { createConnections } from "../src/index.js";

const policy: ConnectionPolicy = { allowedHosts: ["api.test"], onlyAllowedHosts: true };
const callCtx = () => ({ runId: "run_1", signal: new AbortController().signal, idempotencyKey: (scope: string) => `al_${scope}` }) as never;
/** Model APIs' tool names (OpenAI and Anthropic): ^[a-zA-Z0-9_-]{1,64}$. */
const MAX = 64;

const document = (operationIds: string[]) => ({
  openapi: "3.0.3",
  info: { title: "T", version: "1" },
  servers: [{ url: "http://api.test" }],
  paths: Object.fromEntries(operationIds.map((operationId) => [`/${operationId}`, { get: { operationId, summary: operationId, responses: { "200": { description: "ok" } } } }])),
});

/** The tool names a connection offers, by the service's own name of each (each operation's summary, which starts its tool's description). */
async function openApiNames(connection: string, operationIds: string[]): Promise<Record<string, string>> {
  const provider = createConnections({});
  const definition = defineOpenApiConnection({ spec: document(operationIds), description: "T" });
  const tools = provider.tools(connection, definition, await provider.describe(connection, definition, policy), policy);
  return Object.fromEntries(Object.entries(tools).map(([name, tool]) => [tool.description.split(" ")[0]!, name]));
}

describe("connection tool names", () => {
  it("refuse a connection name that leaves no room in the 64 characters model APIs accept for <connection>__<tool>", async () => {
    const connection = "customer_relationship_management_platform_sandbox_eu";
    const definition = defineOpenApiConnection({ spec: document(["listAllContactsInTheAccount"]), description: "CRM" });
    const refusal = expect.objectContaining({
      code: "AL_ERR_CONNECTION_DEFINITION",
      message: expect.stringContaining(`connection "${connection}": the name is 52 characters; its tools are named <connection>__<tool>, and model APIs refuse tool names over 64 characters`),
      fix: "Name the connection in at most 46 characters.",
    });
    expect(() => createConnections({ connections: { [connection]: definition } })).toThrow(refusal);
    await expect(createConnections({}).describe(connection, { name: connection, kind: "openapi", spec: "http://api.test/openapi.json" } as never, policy)).rejects.toThrow(refusal);
  });

  it("fit in 64 characters under the longest connection name allowed, each distinct", async () => {
    const connection = "c".repeat(46);
    const names = await openApiNames(connection, ["listAllContactsInTheAccount", "listAllContactsInTheAccountArchived", "get"]);
    expect(Object.keys(names)).toHaveLength(3);
    expect(new Set(Object.values(names)).size).toBe(3);
    for (const name of Object.values(names)) expect(name.length, name).toBeLessThanOrEqual(MAX);
    expect(names.get).toBe(`${connection}__get`);
  });

  it("do not depend on the order a service lists its tools in: names that snake-case alike end in a digest of their own", async () => {
    const operationIds = ["getItem", "get_item", "GetItem", "listItems"];
    const listed = await openApiNames("shop", operationIds);
    expect(await openApiNames("shop", [...operationIds].reverse())).toEqual(listed);
    // A name no other collides with is as it always was, and so is the one already written in snake_case.
    expect(listed.listItems).toBe("shop__list_items");
    expect(listed.get_item).toBe("shop__get_item");
    expect(listed.getItem).toMatch(/^shop__get_item_[0-9a-f]{8}$/);
    expect(listed.GetItem).toMatch(/^shop__get_item_[0-9a-f]{8}$/);
    expect(listed.GetItem).not.toBe(listed.getItem);
  });

  it("call the same MCP tool after a restart in which the server lists its tools in another order", async () => {
    const called: Array<Record<string, string>> = [];
    for (const order of ["get-item,getItem,get_item", "get_item,getItem,get-item"]) {
      const definition = defineMcpConnection({ command: process.execPath, args: [resolvePath(import.meta.dirname, "fixtures/named-tools-stdio-server.mjs")], env: { TOOLS: order }, description: "Items" });
      const provider = createConnections({ connections: { items: definition } });
      try {
        const tools = provider.tools("items", definition, await provider.describe("items", definition, policy), policy);
        const answers: Record<string, string> = {};
        for (const [name, tool] of Object.entries(tools)) answers[name] = ((await tool.execute({}, callCtx())) as { content: Array<{ text: string }> }).content[0]!.text;
        called.push(answers);
      } finally {
        await provider.close?.();
      }
    }
    expect(called[1]).toEqual(called[0]);
    expect(called[0]!.items__get_item).toBe("get_item");
    expect(Object.keys(called[0]!).sort()).toHaveLength(3);
  }, 30_000);
});
