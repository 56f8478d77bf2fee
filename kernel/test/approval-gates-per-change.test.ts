import { describe, expect, it } from "vitest";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

// A gated tool whose call then makes a change that needs approval too: one call, two gates.
const agentTs = `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", defaultTools: ["schedule"], dynamicAutomations: { dynamic: true, approval: true } });
`;
const schedule = toolSource({
  schema: `{ type: "object", properties: { name: { type: "string" } }, required: ["name"] }`,
  extra: 'needsApproval: approvalRequired("Scheduling is visible."),',
  execute: `return await ctx.automationManager.create({ name: input.name, schedule: { cron: "0 8 * * *" }, message: "wipe prod" });`,
});

async function pausedOnTheToolGate() {
  const started = await startAgent(agentFolder({ "agent.ts": agentTs, "tools/schedule.ts": schedule }), [{ toolCalls: [{ name: "schedule", input: { name: "nightly" } }] }, { text: "scheduled" }]);
  const paused = await started.runtime.run({ message: "schedule it" });
  expect(paused.status).toBe("waiting_approval");
  const [toolGate] = paused.pendingApprovals ?? [];
  expect(toolGate).toBeDefined();
  expect(toolGate).not.toHaveProperty("change");
  return { ...started, runId: paused.runId, toolGate: toolGate! };
}

describe("each approval gate of one tool call has its own approval id", () => {
  it("lets the same approval sent twice pass the tool's gate only, never the change shown after it", async () => {
    const { runtime, runId, events } = await pausedOnTheToolGate();

    const decisions = await Promise.allSettled([runtime.approve(runId), runtime.approve(runId)]);

    // One of them decided the tool's gate; the other was sent for that gate too, which is no longer pending.
    expect(decisions.filter((decision) => decision.status === "fulfilled")).toHaveLength(1);
    const refused = decisions.find((decision) => decision.status === "rejected");
    expect((refused as PromiseRejectedResult).reason).toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND" });
    const log = await events(runId);
    expect(log.filter((event) => event.type === "approval.granted")).toHaveLength(1);
    const run = await runtime.getRun(runId);
    expect(run.status).toBe("waiting_approval");
    expect(run.pendingApprovals?.[0]?.change).toMatchObject({ action: "create", name: "nightly" });
    expect(await runtime.automations.list()).toEqual([]);
  });

  it("gives the change's gate another approval id than the tool's, so approving the first id again is refused", async () => {
    const { runtime, runId, toolGate, events } = await pausedOnTheToolGate();

    const afterToolGate = await runtime.approve(runId, { callId: toolGate.approvalId });
    expect(afterToolGate.status).toBe("waiting_approval");
    const [changeGate] = afterToolGate.pendingApprovals ?? [];
    expect(changeGate?.callId).toBe(toolGate.callId);
    expect(changeGate?.change).toMatchObject({ action: "create", name: "nightly" });
    expect(changeGate?.approvalId).not.toBe(toolGate.approvalId);
    const requested = (await events(runId)).filter((event) => event.type === "approval.requested").map((event) => event.data.approvalId);
    expect(requested).toEqual([toolGate.approvalId, changeGate?.approvalId]);

    // A retried decision for the tool's gate finds no such gate pending.
    await expect(runtime.approve(runId, { callId: toolGate.approvalId })).rejects.toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND" });
    expect(await runtime.automations.list()).toEqual([]);

    // The change's own approval lets it through, once.
    const done = await runtime.approve(runId, { callId: changeGate!.approvalId });
    expect(done.status).toBe("completed");
    expect((await runtime.automations.list()).map((automation) => [automation.name, automation.message])).toEqual([["nightly", "wipe prod"]]);
  });

  it("lets the same approval sent twice by call id pass the tool's gate only, never the change shown after it", async () => {
    const { runtime, runId, toolGate, events } = await pausedOnTheToolGate();

    // `assembly-line approve <run> <callId>` sent twice: the call id names both gates of the call.
    const decisions = await Promise.allSettled([runtime.approve(runId, { callId: toolGate.callId }), runtime.approve(runId, { callId: toolGate.callId })]);

    expect(decisions.filter((decision) => decision.status === "fulfilled")).toHaveLength(1);
    const refused = decisions.find((decision) => decision.status === "rejected");
    expect((refused as PromiseRejectedResult).reason).toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND", message: expect.stringContaining("already decided") });
    expect((await events(runId)).filter((event) => event.type === "approval.granted")).toHaveLength(1);
    expect((await runtime.getRun(runId)).pendingApprovals?.[0]?.change).toMatchObject({ action: "create", name: "nightly" });
    expect(await runtime.automations.list()).toEqual([]);
  });
});
