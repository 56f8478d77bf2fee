import { describe, expect, it, onTestFinished } from "vitest";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

describe("a pending approval of a change a run-time API would make", () => {
  it("shows the automation change the approval would let through, in the result and in getRun", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["schedule"], dynamicAutomations: { dynamic: true, approval: true } });
`;
    const schedule = toolSource({
      schema: `{ type: "object", properties: { name: { type: "string" } }, required: ["name"] }`,
      execute: `return await ctx.automationManager.create({ name: input.name, schedule: { cron: "0 8 * * *" }, message: "morning digest" });`,
    });
    const { runtime } = await startAgent(agentFolder({ "agent.ts": agentTs, "tools/schedule.ts": schedule }), [{ toolCalls: [{ name: "schedule", input: { name: "digest" } }] }, { text: "scheduled" }]);
    onTestFinished(() => runtime.close());

    const paused = await runtime.run({ message: "schedule a digest" });
    expect(paused.status).toBe("waiting_approval");
    const change = { action: "create", name: "digest", automation: { name: "digest", schedule: { cron: "0 8 * * *" }, message: "morning digest" } };
    expect(paused.pendingApprovals).toEqual([expect.objectContaining({ toolName: "schedule", reason: 'The agent asks to create the automation "digest".', change })]);
    expect(paused.pendingApprovals?.[0]).not.toHaveProperty("skillWrite");
    expect((await runtime.getRun(paused.runId)).pendingApprovals?.[0]?.change).toEqual(change);
  });

  it("shows the skill write it waits on: the skill, the file and the text it would write", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ id: "learner", model: "test/model", selfImprovement: { writable: true, writeApproval: true } });
`;
    const learn = toolSource({
      upFront: true,
      schema: `{ type: "object" }`,
      execute: `return await ctx.selfImprovement.create({ name: "release", description: "Release.", body: "1. Tag.\\n2. Publish." });`,
    });
    const { runtime } = await startAgent(agentFolder({ "agent.ts": agentTs, "tools/learn.ts": learn }), [{ toolCalls: [{ name: "learn", input: {} }] }, { text: "done" }]);
    onTestFinished(() => runtime.close());

    const paused = await runtime.run({ message: "learn" });
    expect(paused.status).toBe("waiting_approval");
    const [pending] = paused.pendingApprovals ?? [];
    expect(pending?.skillWrite).toEqual({
      name: "release",
      path: "SKILL.md",
      before: null,
      after: expect.stringMatching(/^sha256:/),
      binding: expect.any(String),
      proposed: { files: { "SKILL.md": expect.stringContaining("1. Tag.\n2. Publish.") }, removed: [], bytes: expect.any(Number), truncated: false },
    });
    expect(pending).not.toHaveProperty("change");
  });

  it("shows neither for a tool's own approval gate, which makes no change through these APIs", async () => {
    const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["launch"] });
`;
    const launch = toolSource({ extra: 'needsApproval: approvalRequired("Launching is visible."),' });
    const { runtime } = await startAgent(agentFolder({ "agent.ts": agentTs, "tools/launch.ts": launch }), [{ toolCalls: [{ name: "launch", input: { value: "now" } }] }, { text: "launched" }]);
    onTestFinished(() => runtime.close());

    const paused = await runtime.run({ message: "launch" });
    expect(paused.pendingApprovals).toEqual([{ approvalId: expect.any(String), callId: expect.any(String), toolName: "launch", input: { value: "now" }, reason: "Launching is visible.", sideEffect: "external" }]);
  });
});
