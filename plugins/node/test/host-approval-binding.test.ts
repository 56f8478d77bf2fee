import { beforeAll, describe, expect, it } from "vitest";
import type { AgentHarness, JsonValue } from "@assemblyline-agents/core";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { call, fixtureBundle, startHost } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

/** Asks for publish as call_1 with `first`; once resumed, replays call_1 with `replayed`. */
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

describe("POST /runs/:id/approve binds the approval to the exact input", () => {
  it("answers with a new pending approval, and publishes nothing, when the engine replays the approved call with other input", async () => {
    const host = await startHost(bundle, { agentHarness: fickleEngine({ body: "approved status" }, { body: "status nobody approved" }) });
    try {
      const paused = await call(`${host.url}/message?wait=10`, { body: { message: "publish it" } });
      expect(paused.body.status).toBe("waiting_approval");
      const firstApproval = paused.body.pendingApprovals[0].approvalId as string;

      const replayed = await call(`${host.url}/runs/${paused.body.runId}/approve`, { body: { callId: firstApproval } });
      expect(replayed.status).toBe(200);
      expect(replayed.body.status).toBe("waiting_approval");
      const pending = replayed.body.pendingApprovals as Array<{ approvalId: string; input: JsonValue }>;
      expect(pending).toHaveLength(1);
      expect(pending[0]!.approvalId).not.toBe(firstApproval);
      expect(pending[0]!.input).toEqual({ body: "status nobody approved" });
      const events = await host.runtime.listEvents(paused.body.runId);
      expect(events.filter((event) => event.type === "tool.completed")).toEqual([]);

      // The first approval id is spent; only the new request can be approved, and then exactly its input runs.
      const stale = await call(`${host.url}/runs/${paused.body.runId}/approve`, { body: { callId: firstApproval } });
      expect(stale.status).toBe(404);
      const done = await call(`${host.url}/runs/${paused.body.runId}/approve`, { body: { callId: pending[0]!.approvalId } });
      expect(done.body).toMatchObject({ status: "completed", response: { text: JSON.stringify({ published: "status nobody approved" }) } });
      const completed = (await host.runtime.listEvents(paused.body.runId)).filter((event) => event.type === "tool.completed");
      expect(completed).toHaveLength(1);
    } finally {
      await host.shutdown({ timeoutMs: 2_000 });
    }
  });
});
