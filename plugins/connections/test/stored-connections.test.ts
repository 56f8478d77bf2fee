import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type JsonValue, type OutboundResolver, type RuntimeLogger } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, scriptedHarness } from "@assemblyline-agents/runtime";
import { createConnections } from "../src/index.js";

const work = mkdtempSync(join(tmpdir(), "al-stored-connections-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const resolve: OutboundResolver = async () => [{ address: "93.184.216.34", family: 4 }];

const GOOD = { name: "status", kind: "http", baseUrl: "https://status.example.com", description: "Service status", endpoints: { ping: { method: "GET", path: "/ping", description: "Ping the service" } } } as const;
const BROKEN = { name: "tickets", kind: "mcp", url: "https://tickets.example.com/mcp", description: "Tickets" } as const;

describe("stored run-added connections", () => {
  it("withhold one whose stored row cannot be read, warning once with its name and the problem, and offer the others", async () => {
    const dir = join(work, "agent");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "agent.ts"), `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: "stored", model: "test/model", dynamicConnections: { dynamic: true, approval: false, allowedHosts: ["status.example.com", "tickets.example.com"] } });\n`);
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    const connections = createConnections({ resolve });
    const state = new InMemoryStateAdapter();
    // The row as a hand edit or an older release might leave it: the MCP connection's record has no tool list.
    await state.putSetting(`connections:${bundle.manifest.agent.id}`, {
      status: { spec: GOOD, record: await connections.describe("status", GOOD, { allowedHosts: ["status.example.com"], onlyAllowedHosts: true }), addedBy: "run_earlier" },
      tickets: { spec: BROKEN, record: { kind: "mcp", description: "Tickets" }, addedBy: "run_earlier" },
    } as unknown as JsonValue, { actor: "test", reason: "seed" });
    const warnings: Array<{ fields: Record<string, unknown>; message: string | undefined }> = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (fields: Record<string, unknown>, message?: string) => void warnings.push({ fields, message }) } as unknown as RuntimeLogger;
    const script = { turns: [{ toolCalls: [{ name: "tool_search", input: { query: "ping the service status" } }] }, { text: "done" }, { text: "again" }] };
    const runtime = new OpenEveRuntime({ ...bundle, state, logger, connections, agentHarness: scriptedHarness(script) });
    try {
      const first = await runtime.run({ message: "find the ping" });
      expect(first.status).toBe("completed");
      const found = (await runtime.listEvents(first.runId)).find((event) => event.type === "tool.completed" && event.data.toolName === "tool_search");
      expect(JSON.stringify(found?.data.output)).toContain("status__ping");
      expect((await runtime.run({ message: "once more" })).status).toBe("completed");
      const withheld = warnings.filter(({ fields }) => fields.connection === "tickets");
      expect(withheld).toHaveLength(1);
      expect(withheld[0]!.fields).toMatchObject({ event: "connection.withheld", err: expect.stringContaining("AL_ERR_STATE_ROW_INVALID") });
      expect(withheld[0]!.message).toContain('connection "tickets": its stored description cannot be read: tools is not a list');
    } finally {
      await runtime.close();
    }
  });
});
