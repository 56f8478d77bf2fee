import { describe, expect, it } from "vitest";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness, type RuntimeOptions } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

async function runtimeOn(options: Partial<RuntimeOptions> = {}) {
  const dir = agentFolder({ "agent.ts": MINIMAL_AGENT });
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const state = new InMemoryStateAdapter();
  const runtime = new OpenEveRuntime({ ...bundle, state, agentHarness: scriptedHarness({ turns: [{ text: "done" }] }), logger: noopLogger(), ...options });
  return { runtime, state };
}

describe("the delivery a channel's run owes", () => {
  it("is written with run.completed for a run from a channel, by default", async () => {
    const { runtime, state } = await runtimeOn();
    const { runId } = await runtime.run({ message: "hi", channel: { name: "provider" } });
    expect(await state.listDeliveries(runId)).toMatchObject([{ id: `dlv_${runId}`, channel: "provider", status: "pending", payload: { runId, text: "done" } }]);
    await runtime.close();
  });

  it("is not written for a channel owesDelivery says reads its reply from the run, and still is for the others", async () => {
    const asked: string[] = [];
    const { runtime, state } = await runtimeOn({
      owesDelivery: (channel) => {
        asked.push(channel);
        return channel !== "raw";
      },
    });
    const raw = await runtime.run({ message: "hi", channel: { name: "raw" } });
    const provider = await runtime.run({ message: "hi", channel: { name: "provider" } });
    expect(raw.status).toBe("completed");
    expect(await state.listDeliveries(raw.runId)).toEqual([]);
    expect(await state.listDeliveries(provider.runId)).toMatchObject([{ channel: "provider" }]);
    expect(asked).toEqual(["raw", "provider"]);
    // A run from no channel owes nothing and asks nothing.
    const direct = await runtime.run({ message: "hi" });
    expect(await state.listDeliveries(direct.runId)).toEqual([]);
    expect(asked).toEqual(["raw", "provider"]);
    await runtime.close();
  });
});
