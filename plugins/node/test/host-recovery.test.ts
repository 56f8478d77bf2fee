import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { LocalSandboxAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { fixtureBundle, startHost, tempDir, waitFor } from "./support/host.js";

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

  it("releases at boot the sandbox of a run that finished while its process stopped before releasing it", async () => {
    const state = new InMemoryStateAdapter();
    const input = { message: "echo: done", metadata: {} };
    const { run } = await state.createRun({ id: "run_finished_unreleased", agentId: bundle.manifest.agent.id, agentRevision: bundle.manifest.agentRevision, modelSpec: bundle.manifest.agent.model, input, status: "running" });
    await state.appendEvents(run.id, [{ type: "run.completed", data: { output: "done" } }], { run: { status: "completed" } });
    const root = tempDir("al-host-sandboxes-");
    const sandbox = new LocalSandboxAdapter({ root });
    await (await sandbox.acquire(run.id)).writeFile("/workspace/left.txt", "left behind");
    expect(existsSync(join(root, run.id))).toBe(true);

    const host = await startHost(bundle, { state, sandbox });
    try {
      await waitFor(async () => (existsSync(join(root, run.id)) ? undefined : true), 20_000, "the finished run's sandbox to be released");
      expect(host.logger.events("recovery.sandboxes_released").map((entry) => entry.fields.runIds)).toEqual([[run.id]]);
    } finally {
      await host.shutdown({ timeoutMs: 2_000 });
    }
  });
});
