import { beforeAll, describe, expect, it } from "vitest";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { fixtureBundle, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

describe("host recovery", () => {
  it("marks a run it resumes after its owner stopped as recovered", async () => {
    const state = new InMemoryStateAdapter();
    const { run } = await state.createRun({
      id: "run_orphaned",
      agentId: bundle.manifest.agent.id,
      agentRevision: bundle.manifest.agentRevision,
      modelSpec: bundle.manifest.agent.model,
      input: { message: "echo: left behind", metadata: {} },
      status: "running",
    });
    // Its owner started it and died: no lease, no checkpoint.
    await state.appendEvents(run.id, [{ type: "run.started", data: { modelSpec: bundle.manifest.agent.model, instructions: "", defaultTools: null } }]);
    const host = await startHost(bundle, { state });
    try {
      await waitFor(async () => ((await state.getRun(run.id))?.status === "completed" ? true : undefined), 20_000, "the orphaned run to complete");
      const resumed = (await state.listEvents(run.id)).filter((event) => event.type === "run.resumed");
      expect(resumed.map((event) => event.data.recovered)).toEqual([true]);
    } finally {
      await host.shutdown({ timeoutMs: 2_000 });
    }
  });
});
