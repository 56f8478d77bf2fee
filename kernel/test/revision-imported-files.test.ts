import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, scriptedHarness } from "@assemblyline-agents/runtime";
import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

/** A publish tool that needs approval and reports the prices it imported, statically and inside execute. */
const publishTool = toolSource({
  upFront: true,
  imports: `import prices from "../data/prices.json";`,
  extra: `needsApproval: approvalRequired("Publishing is visible."),`,
  execute: `const discounts = (await import("../data/discounts.json")).default;
    return { published: input.value, prices, discounts };`,
});

const script = { turns: [{ toolCalls: [{ name: "publish", input: { value: "milk" } }] }, { text: "done" }] };

async function host(dir: string, state: InMemoryStateAdapter) {
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  return new OpenEveRuntime({ ...bundle, state, agentHarness: scriptedHarness(script), logger: noopLogger() });
}

async function pausedRun() {
  const dir = agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/publish.ts": publishTool,
    "data/prices.json": `{ "milk": 1 }`,
    "data/discounts.json": `{ "milk": 0 }`,
  });
  const state = new InMemoryStateAdapter();
  const first = await host(dir, state);
  const paused = await first.run({ message: "publish milk" });
  expect(paused.status).toBe("waiting_approval");
  return { dir, state, runId: paused.runId, revision: first.manifest.agentRevision };
}

const publishedOutput = async (runtime: OpenEveRuntime, runId: string) =>
  ((await runtime.listEvents(runId)).find((event) => event.type === "tool.completed")?.data as { output?: unknown } | undefined)?.output;

describe("a paused run continues on the data files its build imported", () => {
  it("approves on the JSON it paused with after the JSON changed and the folder was rebuilt; new runs read the new JSON", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    writeFileSync(join(dir, "data/prices.json"), `{ "milk": 2 }`);
    writeFileSync(join(dir, "data/discounts.json"), `{ "milk": 1 }`);
    const rebuilt = await host(dir, state);
    expect(rebuilt.manifest.agentRevision).not.toBe(revision);

    expect((await rebuilt.approve(runId)).status).toBe("completed");
    expect(await publishedOutput(rebuilt, runId)).toEqual({ published: "milk", prices: { milk: 1 }, discounts: { milk: 0 } });

    const fresh = await rebuilt.run({ message: "again" });
    await rebuilt.approve(fresh.runId);
    expect(await publishedOutput(rebuilt, fresh.runId)).toEqual({ published: "milk", prices: { milk: 2 }, discounts: { milk: 1 } });
  });

  it("approves on its own build after an unrelated tool was added and the folder was rebuilt", async () => {
    const { dir, state, runId, revision } = await pausedRun();
    writeFileSync(join(dir, "tools/archive.ts"), toolSource({ upFront: true }));
    const rebuilt = await host(dir, state);
    expect(rebuilt.manifest.agentRevision).not.toBe(revision);

    const done = await rebuilt.approve(runId);
    expect(done.status).toBe("completed");
    expect(await publishedOutput(rebuilt, runId)).toEqual({ published: "milk", prices: { milk: 1 }, discounts: { milk: 0 } });
  });
});
