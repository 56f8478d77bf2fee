import { describe, expect, it } from "vitest";
import { scriptedHarness } from "@assemblyline-agents/runtime";
import { CrashOnceBefore } from "./support/crash-once-state.js";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

describe("model.response", () => {
  it("is recorded exactly once per model call when the process dies between the model call and its step's completion", async () => {
    const dir = agentFolder({ "agent.ts": MINIMAL_AGENT, "tools/echo.ts": toolSource({ upFront: true, execute: "return { echoed: input.value };" }) });
    const state = new CrashOnceBefore("durable_step.completed");
    const harness = scriptedHarness({ turns: [{ toolCalls: [{ name: "echo", input: { value: "x" } }] }, { text: "done" }] });
    const { runtime, events } = await startAgent(dir, [], { state, agentHarness: harness });
    await expect(runtime.run({ message: "go" })).rejects.toMatchObject({ code: "AL_ERR_STATE_UNAVAILABLE" });
    const [run] = (await state.listRuns()).runs;
    expect((await events(run!.id)).filter((event) => event.type === "model.response")).toEqual([]);

    const resumed = await runtime.resume(run!.id);
    expect(resumed.status).toBe("completed");
    const recorded = await events(run!.id);
    const responses = recorded.filter((event) => event.type === "model.response");
    expect(responses.map((event) => event.data.turn)).toEqual([0, 1]);
    // Each commits in the same append as its step's completion, right before it.
    for (const response of responses) expect(recorded[response.seq]).toMatchObject({ type: "durable_step.completed", data: { key: `harness:model:${response.data.turn}` } });
  });
});
