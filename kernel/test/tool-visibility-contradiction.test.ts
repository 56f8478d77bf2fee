import { describe, expect, it } from "vitest";
import { defineTool } from "@assemblyline-agents/core";
import { ToolTable, buildAgent } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

// defaultEnabled: false keeps a tool back; visibility "always" offers it up front. Neither wins silently.
const contradiction = /defaultEnabled: false contradicts capability\.visibility "always"/;

describe("defaultEnabled: false on a tool whose capability.visibility is always", () => {
  it("is refused at build with AL_ERR_TOOL_CAPABILITY, naming the tool's file and both fields", async () => {
    const tool = toolSource({ extra: `capability: { visibility: "always" }, defaultEnabled: false,` });
    const error = await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/kept_back.ts": tool })).catch((caught: Error) => caught);
    expect(error).toMatchObject({ code: "AL_ERR_TOOL_CAPABILITY" });
    expect((error as Error).message).toMatch(/tools\/kept_back\.ts: /);
    expect((error as Error).message).toMatch(contradiction);
  });

  it("is refused for a tool a plugin provides", () => {
    const lookup = defineTool({ description: "Look a record up.", inputSchema: { type: "object" }, execute: async () => ({}) });
    const table = new ToolTable();
    expect(() => table.provide("crm__lookup", { ...lookup, capability: { visibility: "always" }, defaultEnabled: false }, { provider: "crm" })).toThrow(contradiction);
  });

  it("still builds each of them alone, and defaultEnabled: false with visibility deferred", async () => {
    for (const extra of [`capability: { visibility: "always" },`, `defaultEnabled: false,`, `capability: { visibility: "deferred" }, defaultEnabled: false,`]) {
      await expect(buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/kept_back.ts": toolSource({ extra }) }))).resolves.toBeDefined();
    }
  });
});
