import { describe, expect, it } from "vitest";
import { defineTool, type ConnectionProvider, type RuntimeLogger } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, noopLogger } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const provider: ConnectionProvider = {
  describe: async () => ({}),
  tools: (name) => ({ [`${name}__ping`]: defineTool({ description: "Ping.", inputSchema: { type: "object" }, execute: async () => ({ pong: true }) }) }),
};

const agentTs = (dynamicConnections: string) => `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "crm-agent", model: "test/model", dynamicConnections: ${dynamicConnections} });
`;
const connect = toolSource({
  upFront: true,
  execute: `return await ctx.connectionManager.add({ name: "crm", kind: "http", baseUrl: "https://crm.example.com", endpoints: { get_item: { method: "GET", path: "/items/{id}", description: "Get." } } });`,
});
const look = toolSource({ upFront: true, execute: `return { connections: Object.keys(ctx.connections) };` });

function recordingLogger() {
  const warnings: Array<Record<string, unknown>> = [];
  return { logger: { ...noopLogger(), warn: (fields: Record<string, unknown>) => void warnings.push(fields) } as RuntimeLogger, warnings };
}

/** A runtime on `dynamicConnections` over `state` whose run looks at ctx.connections, then calls the run's connection's tool. */
async function lookAndCall(state: InMemoryStateAdapter, dynamicConnections: string) {
  const { logger, warnings } = recordingLogger();
  const { runtime } = await startAgent(
    agentFolder({ "agent.ts": agentTs(dynamicConnections), "tools/look.ts": look }),
    [{ toolCalls: [{ name: "look", input: { value: "x" } }] }, { toolCalls: [{ name: "crm__ping", input: {} }] }, { toolCalls: [{ name: "tool_call", input: { name: "crm__ping", input: {} } }] }, { text: "done" }],
    { state, connections: provider, logger },
  );
  const run = await runtime.run({ message: "look" });
  const calls = await state.listToolCalls(run.runId);
  return {
    seen: calls.find((call) => call.toolName === "look")!.output,
    /** What calling the connection's tool answered: by name, then through tool_call (where discovery is on). */
    pinged: calls.filter((call) => call.toolName === "crm__ping" || call.toolName === "tool_call").map((call) => call.output),
    warnings: warnings.filter((fields) => fields.event === "connection.withheld"),
  };
}

async function stateWithARunsConnection() {
  const state = new InMemoryStateAdapter();
  const { runtime } = await startAgent(
    agentFolder({ "agent.ts": agentTs(`{ dynamic: true, approval: false, allowedHosts: ["crm.example.com"] }`), "tools/connect.ts": connect }),
    [{ toolCalls: [{ name: "connect", input: { value: "x" } }] }, { text: "done" }],
    { state, connections: provider },
  );
  expect((await runtime.run({ message: "connect" })).status).toBe("completed");
  expect(await state.getSetting("connections:crm-agent")).toMatchObject({ crm: { addedBy: expect.any(String) } });
  return state;
}

describe("a run-added connection after agent.ts narrows dynamicConnections", () => {
  it("is neither offered nor callable once dynamic is off, is kept, says so once, and comes back when dynamic is on again", async () => {
    const state = await stateWithARunsConnection();

    const off = await lookAndCall(state, `{ dynamic: false, allowedHosts: ["crm.example.com"] }`);
    expect(off.seen).toEqual({ connections: [] });
    expect(off.pinged).not.toContainEqual({ pong: true });
    expect(off.warnings).toEqual([{ event: "connection.withheld", connections: ["crm"] }]);
    expect(await state.getSetting("connections:crm-agent")).toMatchObject({ crm: {} });

    const on = await lookAndCall(state, `{ dynamic: true, approval: false, allowedHosts: ["crm.example.com"] }`);
    expect(on.seen).toEqual({ connections: ["crm"] });
    expect(on.pinged).toContainEqual({ pong: true });
    expect(on.warnings).toEqual([]);
  });

  it("is neither offered nor callable once allowedHosts no longer allows its host, and says so", async () => {
    const state = await stateWithARunsConnection();

    const narrowed = await lookAndCall(state, `{ dynamic: true, approval: false, allowedHosts: ["other.example.com"] }`);
    expect(narrowed.seen).toEqual({ connections: [] });
    expect(narrowed.pinged).not.toContainEqual({ pong: true });
    expect(narrowed.warnings).toEqual([expect.objectContaining({ event: "connection.withheld", connection: "crm", host: "crm.example.com" })]);
    expect(await state.getSetting("connections:crm-agent")).toMatchObject({ crm: {} });

    const wildcard = await lookAndCall(state, `{ dynamic: true, approval: false, allowedHosts: ["*.example.com"] }`);
    expect(wildcard.seen).toEqual({ connections: ["crm"] });
    expect(wildcard.pinged).toContainEqual({ pong: true });
  });
});
