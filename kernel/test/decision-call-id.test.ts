import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const gatedAgent = () =>
  agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/publish.ts": toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Publishing is externally visible."),` }),
  });

describe("a decision naming the empty call id", () => {
  for (const decide of ["approve", "deny"] as const) {
    it(`${decide} refuses callId "" as naming no pending call, and leaves the only pending call waiting`, async () => {
      const { runtime, state } = await startAgent(gatedAgent(), [{ toolCalls: [{ name: "publish", input: { value: "x" } }] }, { text: "done" }]);
      const paused = await runtime.run({ message: "go" });
      expect(paused.status).toBe("waiting_approval");
      // An empty form field sent as callId names no call: it must not be read as "the only pending one".
      await expect(runtime[decide](paused.runId, { callId: "" })).rejects.toMatchObject({
        code: "AL_ERR_APPROVAL_NOT_FOUND",
        message: expect.stringContaining(`run ${paused.runId} has no pending approval ""`),
      });
      expect((await state.listToolCalls(paused.runId)).map((call) => call.status)).toEqual(["waiting_approval"]);
      expect(await runtime.getRun(paused.runId)).toMatchObject({ status: "waiting_approval" });
    });
  }

  it('answer refuses callId "" the same way', async () => {
    const { runtime } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ toolCalls: [{ name: "ask_question", input: { question: "Which env?" } }] }, { text: "done" }]);
    const paused = await runtime.run({ message: "deploy" });
    expect(paused.status).toBe("waiting_input");
    await expect(runtime.answer(paused.runId, "production", { callId: "" })).rejects.toMatchObject({
      code: "AL_ERR_APPROVAL_NOT_FOUND",
      message: expect.stringContaining(`run ${paused.runId} has no pending question ""; it waits on `),
    });
  });
});
