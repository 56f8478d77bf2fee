import type { AgentHarness, ModelToolCall } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

/** An engine that, as one answering a model's parallel tool calls, makes both ask_question calls at once, then ends with their answers. */
function twoQuestions(): AgentHarness {
  return {
    name: "parallel-questions",
    async runTurn(_input, ctx) {
      await ctx.modelCall("model:0", async () => ({ ok: true }));
      const calls: ModelToolCall[] = [
        { id: "call_env", name: "ask_question", input: { question: "Which env?" } },
        { id: "call_region", name: "ask_question", input: { question: "Which region?" } },
      ];
      const outcomes = await Promise.all(calls.map((call) => ctx.callTool(call)));
      const paused = outcomes.find((outcome) => outcome.status === "paused");
      if (paused) return { status: "paused", continuation: { version: 1, harness: "parallel-questions", agentRevision: _input.agentRevision, data: {} } };
      return { status: "completed", response: { text: JSON.stringify(outcomes.map((outcome) => (outcome.status === "paused" ? null : outcome.output))) } };
    },
  };
}

describe("two questions pending at once", () => {
  it("takes an answer named for either pending question, each for its own call, and goes on once both are answered", async () => {
    const { runtime, state } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { agentHarness: twoQuestions() });
    const paused = await runtime.run({ message: "deploy" });
    expect(paused.status).toBe("waiting_input");
    const waiting = (await state.listToolCalls(paused.runId)).filter((call) => call.status === "waiting_input").map((call) => call.callId).sort();
    expect(waiting).toEqual(["call_env", "call_region"]);
    // The user answers the region question first, naming it: it is pending, so it must be taken, for that call.
    expect(await runtime.answer(paused.runId, "eu-west-1", { callId: "call_region" })).toMatchObject({ status: "waiting_input" });
    const region = await state.getToolCall(paused.runId, "call_region");
    expect(region).toMatchObject({ status: "completed", output: { answer: "eu-west-1" } });
    const env = await state.getToolCall(paused.runId, "call_env");
    expect(env!.status).toBe("waiting_input");
    // One question is still open: the run shows it and waits for it, and goes on once it is answered too.
    expect(await runtime.getRun(paused.runId)).toMatchObject({ status: "waiting_input", question: { callId: "call_env" } });
    const done = await runtime.answer(paused.runId, "production", { callId: "call_env" });
    expect(done).toMatchObject({ status: "completed", response: { text: JSON.stringify([{ answer: "production" }, { answer: "eu-west-1" }]) } });
  });

  it("refuses an answer naming a question that is not pending, naming the ones that are", async () => {
    const { runtime, state } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { agentHarness: twoQuestions() });
    const paused = await runtime.run({ message: "deploy" });
    await expect(runtime.answer(paused.runId, "eu-west-1", { callId: "call_zone" })).rejects.toMatchObject({
      code: "AL_ERR_APPROVAL_NOT_FOUND",
      message: expect.stringContaining(`run ${paused.runId} has no pending question call_zone; it waits on call_env, call_region`),
    });
    expect((await state.listToolCalls(paused.runId)).filter((call) => call.status === "waiting_input").length).toBe(2);
  });

  it("refuses an answer that names no question while two are pending, as a decision with two pending approvals is refused", async () => {
    const { runtime, state } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [], { agentHarness: twoQuestions() });
    const paused = await runtime.run({ message: "deploy" });
    // Which of "Which env?" and "Which region?" is "eu-west-1" for? Guessing would give one question the other's answer.
    await expect(runtime.answer(paused.runId, "eu-west-1")).rejects.toMatchObject({
      code: "AL_ERR_APPROVAL_NOT_FOUND",
      message: expect.stringContaining(`run ${paused.runId} asks 2 questions (call_env, call_region); an answer must name the one it answers`),
    });
    const calls = await state.listToolCalls(paused.runId);
    expect(calls.filter((call) => call.status === "waiting_input").length).toBe(2);
  });
});
