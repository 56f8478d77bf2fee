import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defineTool, type ConnectionProvider, type JsonValue } from "@assemblyline-agents/core";
import { startBuilt } from "./support/runtime.js";
import { agentFolder, toolSource } from "./support/agent-folder.js";

/** A provider that records every definition it is asked to describe. */
function recordingProvider(described: unknown[]): ConnectionProvider {
  return {
    describe: async (_name, definition) => {
      described.push(definition);
      return {};
    },
    tools: (name) => ({ [`${name}__ping`]: defineTool({ description: "Ping.", inputSchema: { type: "object" }, execute: async () => ({ pong: true }) }) }),
  };
}

/** An agent whose one tool adds the connection its input names. */
async function connect(spec: Record<string, unknown>, described: unknown[]) {
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname, dynamicConnections: { dynamic: true, approval: false, allowedHosts: ["crm.example.com"], grants: { "crm-token": ["crm.example.com"] } } });
`,
    "tools/connect.ts": toolSource({
      schema: `{ type: "object", properties: { spec: { type: "object" } }, required: ["spec"] }`,
      extra: "defaultEnabled: true,",
      execute: "try { return await ctx.connectionManager.add(input.spec); } catch (error) { return { error: error.code, message: error.message }; }",
    }),
  });
  writeFileSync(join(dir, "script.json"), JSON.stringify({ turns: [{ toolCalls: [{ name: "connect", input: { spec } }] }, { text: "done" }] }));
  const { runtime, state } = await startBuilt(dir, { connections: recordingProvider(described) });
  const run = await runtime.run({ message: "connect" });
  const output = (await state.listToolCalls(run.runId)).find((call) => call.toolName === "connect")!.output as Record<string, JsonValue>;
  return { output, stored: await runtime.state.settings.getSetting(`connections:${runtime.manifest.agent.id}`) };
}

describe("what a run may ask ctx.connectionManager.add for", () => {
  it("passes a remote service on, with only the fields a spec has", async () => {
    const described: unknown[] = [];
    const spec = { name: "crm", kind: "http", baseUrl: "https://crm.example.com", endpoints: {}, description: "The CRM.", auth: { grant: "crm-token", header: "x-api-key" } };
    const { output, stored } = await connect(spec, described);
    expect(output).toMatchObject({ name: "crm", source: "dynamic", tools: ["crm__ping"] });
    expect(described).toEqual([spec]);
    expect(stored).toMatchObject({ crm: { spec } });
  });

  it("refuses a field no spec of its kind has (a local command, a secret), before the provider or the store sees it", async () => {
    for (const [extra, named] of [
      [{ command: "/bin/sh", args: ["-c", "id"] }, /"command", "args" are not fields of a run's mcp connection \(a run may only add remote services, never start a local command\)/],
      [{ headers: { "x-api-key": "secret" } }, /"headers" is not a field of a run's mcp connection/],
      [{ auth: { grant: "crm-token", secret: "s3cr3t" } }, /"auth.secret" is not a field of a run's mcp connection/],
    ] as const) {
      const described: unknown[] = [];
      const { output, stored } = await connect({ name: "crm", kind: "mcp", url: "https://crm.example.com/mcp", ...extra }, described);
      expect(output).toMatchObject({ error: "AL_ERR_CONNECTION_DEFINITION", message: expect.stringMatching(named) });
      expect(described).toEqual([]);
      expect(stored).toBeUndefined();
    }
  });
});
