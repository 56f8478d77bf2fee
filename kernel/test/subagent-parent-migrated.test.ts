import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { noopLogger } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource } from "./support/agent-folder.js";

const SCRIPT = {
  turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "look" } }] }, { toolCalls: [{ name: "mark", input: { value: "x" } }] }, { text: "parent done" }],
  subagents: { researcher: { turns: [{ toolCalls: [{ name: "lookup", input: { value: "x" } }] }, { text: "child result" }] } },
};

describe("a parent migrated to a new build while it waits on its subagent", () => {
  it("goes on under the revision it was migrated to once the child ends", async () => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname });
`,
      "tools/mark.ts": toolSource({ upFront: true, execute: `return { by: "v1" };` }),
      "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks facts up." });
`,
      "subagents/researcher/tools/lookup.ts": toolSource({ upFront: true, extra: `needsApproval: approvalRequired("billed"),`, execute: `return { fact: "42" };` }),
    });
    writeFileSync(join(dir, "script.json"), JSON.stringify(SCRIPT));
    const state = new InMemoryStateAdapter();
    const first = new OpenEveRuntime({ ...(await loadRuntimeBundle((await buildAgent(dir)).artifactRoot)), state, logger: noopLogger() });
    const paused = await first.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    await first.close();

    writeFileSync(join(dir, "tools/mark.ts"), toolSource({ upFront: true, execute: `return { by: "v2" };` }));
    const second = new OpenEveRuntime({ ...(await loadRuntimeBundle((await buildAgent(dir)).artifactRoot)), state, logger: noopLogger() });
    await second.migrateRun(paused.runId);
    expect(await second.revisionOf(paused.runId)).toBe(second.manifest.agentRevision);

    await second.approve(paused.runId);
    const parent = await second.getRun(paused.runId);
    expect(parent.status).toBe("completed");
    const marked = (await second.listEvents(paused.runId)).find((event) => event.type === "tool.completed" && event.data.toolName === "mark");
    // The migrated parent must run its later calls on the build it was moved to.
    expect(marked?.data.output).toEqual({ by: "v2" });
  });
});
