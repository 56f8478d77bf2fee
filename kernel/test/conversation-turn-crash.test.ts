import { buildAgent, loadRuntimeBundle, noopLogger, OpenEveRuntime, type RuntimeOptions } from "@assemblyline-agents/runtime";
import type { AgentHarness } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";
import { CrashOnceBefore } from "./support/crash-once-state.js";

/** A model whose every real call answers differently, as an LLM does: answer 1, answer 2, ... */
function varyingModel(): AgentHarness & { calls: number } {
  const harness = {
    name: "varying",
    calls: 0,
    async runTurn(_input: unknown, ctx: Parameters<AgentHarness["runTurn"]>[1]) {
      const reply = (await ctx.modelCall("model:0", () => ({ text: `answer ${++harness.calls}` }))) as { text: string };
      return { status: "completed" as const, response: { text: reply.text } };
    },
  };
  return harness as AgentHarness & { calls: number };
}

/** A run whose process died right after writing its turn into the conversation, before recording `run.completed`. */
async function crashedAfterTurn(conversationId: string, message: string) {
  const bundle = await loadRuntimeBundle((await buildAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }))).artifactRoot);
  const state = new CrashOnceBefore("run.completed");
  const runtime = (options: Partial<RuntimeOptions>) => new OpenEveRuntime({ ...bundle, state, logger: noopLogger(), ...options });
  const runId = (await runtime({ agentHarness: varyingModel() }).submit({ message, conversationId, channel: { name: "web" } })).runId;
  await runtime({ agentHarness: varyingModel() }).start(runId).catch(() => undefined);
  expect(state.crashed).toBe(true);
  expect((await state.listConversationMessages(conversationId)).filter((turn) => turn.runId === runId).map((turn) => turn.content)).toEqual([message, "answer 1"]);
  return { state, runtime, runId };
}

describe("a run whose process died between writing its conversation turn and recording its end", () => {
  it("completes on recovery with the reply the history holds, making no new model call", async () => {
    const { state, runtime, runId } = await crashedAfterTurn("conv-1", "hello");
    const model = varyingModel();

    const result = await runtime({ agentHarness: model }).resume(runId, { recovered: true });

    // What the API returns and the channel is delivered agrees with what the next turn's context shows.
    expect(result).toMatchObject({ status: "completed", response: { text: "answer 1" } });
    expect(model.calls).toBe(0);
    expect((await state.listConversationMessages("conv-1")).map((turn) => turn.content)).toEqual(["hello", "answer 1"]);
    expect((await state.listDeliveries(runId)).map((delivery) => delivery.payload)).toEqual([{ runId, text: "answer 1" }]);
  });

  it("finds its turn however many turns the conversation took since, and writes it no second time", async () => {
    const { state, runtime, runId } = await crashedAfterTurn("conv-2", "the crashed turn");
    // The conversation goes on (other runs, other replicas) before the recovery sweep reaches the run.
    const other = runtime({ agentHarness: varyingModel() });
    for (let turn = 0; turn < 30; turn += 1) expect((await other.run({ message: `turn ${turn}`, conversationId: "conv-2" })).status).toBe("completed");

    const recovered = await runtime({ agentHarness: varyingModel() }).resume(runId, { recovered: true });

    expect(recovered).toMatchObject({ status: "completed", response: { text: "answer 1" } });
    const ofRun = (await state.listConversationMessages("conv-2")).filter((turn) => turn.runId === runId);
    expect(ofRun.map((turn) => [turn.role, turn.content])).toEqual([
      ["user", "the crashed turn"],
      ["assistant", "answer 1"],
    ]);
  });
});
