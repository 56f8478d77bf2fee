import { describe, expect, it } from "vitest";
import type { AgentHarness, JsonValue } from "@assemblyline-agents/core";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/**
 * An engine that is not deterministic across a resume: it asks for call_1 with
 * `first`, and once resumed replays the same call id with `replayed` (a model
 * sampled again, a resumed turn that rebuilt its input).
 */
function fickleEngine(first: JsonValue, replayed: JsonValue): AgentHarness {
  return {
    name: "fickle",
    async runTurn(input, ctx) {
      const resumes = input.continuation ? (input.continuation.data as { resumes: number }).resumes + 1 : 0;
      const outcome = await ctx.callTool({ id: "call_1", name: "publish", input: resumes === 0 ? first : replayed });
      if (outcome.status === "paused") {
        return { status: "paused", continuation: { version: 1, harness: "fickle", agentRevision: input.agentRevision, data: { resumes } } };
      }
      return { status: "completed", response: { text: JSON.stringify(outcome.output) } };
    },
  };
}

const gated = () =>
  agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/publish.ts": toolSource({
      upFront: true,
      extra: `needsApproval: approvalRequired("Publishing is externally visible."),`,
      execute: "(globalThis.__published ??= []).push(input.value); return { published: input.value };",
    }),
  });

const published = () => ((globalThis as { __published?: string[] }).__published ??= []);

describe("an approval is bound to the exact input that was approved", () => {
  it("records a new approval request, and executes nothing, when an approved call id is replayed with other input", async () => {
    published().length = 0;
    const { runtime, events } = await startAgent(gated(), [], { agentHarness: fickleEngine({ value: "approved text" }, { value: "text nobody approved" }) });
    const paused = await runtime.run({ message: "publish" });
    expect(paused.status).toBe("waiting_approval");
    const firstRequest = (await events(paused.runId)).find((event) => event.type === "approval.requested")!;

    const replayed = await runtime.approve(paused.runId);
    expect(published()).toEqual([]);
    expect(replayed.status).toBe("waiting_approval");
    const requests = (await events(paused.runId)).filter((event) => event.type === "approval.requested");
    expect(requests).toHaveLength(2);
    expect(requests[1]!.data).toMatchObject({ callId: "call_1", input: { value: "text nobody approved" } });
    expect(requests[1]!.data.approvalId).not.toBe(firstRequest.data.approvalId);
    expect(replayed.pendingApprovals).toEqual([expect.objectContaining({ callId: "call_1", approvalId: requests[1]!.data.approvalId })]);
    expect((await events(paused.runId)).filter((event) => event.type === "tool.completed")).toEqual([]);

    // Approving what is now asked executes exactly that input, once.
    const done = await runtime.approve(paused.runId, { callId: String(requests[1]!.data.approvalId) });
    expect(done.status).toBe("completed");
    expect(published()).toEqual(["text nobody approved"]);
  });

  it("executes an approved call replayed with the same input exactly once", async () => {
    published().length = 0;
    const { runtime, events } = await startAgent(gated(), [], { agentHarness: fickleEngine({ value: "same" }, { value: "same" }) });
    const paused = await runtime.run({ message: "publish" });
    const done = await runtime.approve(paused.runId);
    expect(done.status).toBe("completed");
    expect(published()).toEqual(["same"]);
    expect((await events(paused.runId)).filter((event) => event.type === "approval.requested")).toHaveLength(1);
  });
});
