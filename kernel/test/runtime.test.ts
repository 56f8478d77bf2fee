import { describe, expect, it } from "vitest";
import type { RuntimeLogger } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, RunCapacityError, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

async function bundleFor(files: Record<string, string> = { "agent.ts": MINIMAL_AGENT }) {
  return loadRuntimeBundle((await buildAgent(agentFolder(files))).artifactRoot);
}

function recordingLogger(): RuntimeLogger & { warnings: Array<Record<string, unknown>> } {
  const warnings: Array<Record<string, unknown>> = [];
  return { ...noopLogger(), warn: (fields) => warnings.push(fields), warnings };
}

const hello = scriptedHarness({ turns: [{ text: "hello" }] });

describe("OpenEveRuntime state option", () => {
  it("accepts a full StateAdapter without a degraded warning", async () => {
    const logger = recordingLogger();
    const runtime = new OpenEveRuntime({ ...(await bundleFor()), state: new InMemoryStateAdapter(), agentHarness: hello, logger });
    expect((await runtime.run({ message: "hi" })).response?.text).toBe("hello");
    expect(logger.warnings).toEqual([]);
  });

  it("accepts StateStores with only runs, warning once with the missing facets", async () => {
    const logger = recordingLogger();
    const runs = new InMemoryStateAdapter();
    const runtime = new OpenEveRuntime({ ...(await bundleFor()), state: { runs }, agentHarness: hello, logger });
    const result = await runtime.run({ message: "hi" });
    expect(result.status).toBe("completed");
    expect((await runs.getRun(result.runId))?.status).toBe("completed");
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatchObject({
      event: "state.degraded",
      missing: ["conversations", "schedules", "files", "usage", "sandboxSessions", "memory", "settings", "skills"],
    });
  });

  it("fails the constructor when runs is missing or incomplete", async () => {
    const bundle = await bundleFor();
    expect(() => new OpenEveRuntime({ ...bundle, state: {} as never, logger: noopLogger() })).toThrow(/AL_ERR_STATE_RUNS_REQUIRED/);
    expect(() => new OpenEveRuntime({ ...bundle, state: { runs: { createRun() {} } } as never, logger: noopLogger() })).toThrow(/lacks getRun/);
    // An adapter written to the documented duck type (createRun + appendEvent) is told what RunStore methods it lacks.
    class SingularAdapter {
      createRun() {}
      appendEvent() {}
    }
    expect(() => new OpenEveRuntime({ ...bundle, state: new SingularAdapter() as never, logger: noopLogger() })).toThrow(/state\.runs lacks .*appendEvents/);
  });
});

describe("admission", () => {
  it("throws RunCapacityError with retryAfterMs beyond maxConcurrentRuns + maxQueuedRuns, and onIdle waits for the rest", async () => {
    const bundle = await bundleFor({
      "agent.ts": MINIMAL_AGENT,
      "tools/wait.ts": toolSource({ upFront: true, execute: `await new Promise((resolve) => (globalThis.__release ??= []).push(resolve)); return { ok: true };` }),
    });
    const harness = scriptedHarness({ turns: [{ toolCalls: [{ name: "wait", input: { value: "x" } }] }, { text: "done" }] });
    const runtime = new OpenEveRuntime({ ...bundle, agentHarness: harness, logger: noopLogger(), maxConcurrentRuns: 2, maxQueuedRuns: 1 });
    expect(runtime.hasRunCapacity()).toBe(true);
    const accepted = [runtime.run({ message: "1" }), runtime.run({ message: "2" }), runtime.run({ message: "3" })];
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(runtime.hasRunCapacity()).toBe(false);
    const refused = await runtime.run({ message: "4" }).catch((error) => error);
    expect(refused).toBeInstanceOf(RunCapacityError);
    expect(refused.code).toBe("AL_ERR_RUN_CAPACITY");
    expect(refused.retryAfterMs).toBeGreaterThan(0);

    let idle = false;
    const idlePromise = runtime.onIdle().then(() => (idle = true));
    const release = () => ((globalThis as { __release?: Array<() => void> }).__release ?? []).splice(0).forEach((resolve) => resolve());
    while (!idle) {
      release();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await idlePromise;
    const results = await Promise.all(accepted);
    expect(results.map((result) => result.status)).toEqual(["completed", "completed", "completed"]);
    expect(runtime.hasRunCapacity()).toBe(true);
  });

  it("reads ASSEMBLY_LINE_MAX_CONCURRENT_RUNS and refuses a bad value", async () => {
    const bundle = await bundleFor();
    expect(() => new OpenEveRuntime({ ...bundle, logger: noopLogger(), env: { ASSEMBLY_LINE_MAX_CONCURRENT_RUNS: "zero" } })).toThrow(/ASSEMBLY_LINE_MAX_CONCURRENT_RUNS=zero/);
  });
});

describe("engines", () => {
  it("serves models no route claims with the default Pi engine, which names a model its catalog lacks", async () => {
    const runtime = new OpenEveRuntime({ ...(await bundleFor()), logger: noopLogger() });
    const result = await runtime.run({ message: "hi" });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "AL_ERR_MODEL_UNKNOWN" });
    expect(result.error?.message).toContain("test/model");
  });

  it("logs one state.degraded warning when no state is given", async () => {
    const warnings: Array<Record<string, unknown>> = [];
    const logger = { ...noopLogger(), warn: (fields: Record<string, unknown>) => void warnings.push(fields) };
    new OpenEveRuntime({ ...(await bundleFor()), logger });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ event: "state.degraded", missing: expect.arrayContaining(["runs", "memory", "usage"]) });
  });

  it("routes by provider prefix with modelHarnesses and lets agentHarness override", async () => {
    const bundle = await bundleFor();
    const routed = new OpenEveRuntime({ ...bundle, logger: noopLogger(), modelHarnesses: { test: scriptedHarness({ turns: [{ text: "from route" }] }) } });
    expect((await routed.run({ message: "hi" })).response?.text).toBe("from route");
    const overridden = new OpenEveRuntime({
      ...bundle,
      logger: noopLogger(),
      modelHarnesses: { test: scriptedHarness({ turns: [{ text: "from route" }] }) },
      agentHarness: scriptedHarness({ turns: [{ text: "from override" }] }),
    });
    expect((await overridden.run({ message: "hi" })).response?.text).toBe("from override");
  });

  it("chooses the route from the persisted model spec again when another runtime resumes the run", async () => {
    const bundle = await bundleFor({
      "agent.ts": MINIMAL_AGENT,
      "tools/publish.ts": toolSource({ upFront: true, extra: "needsApproval: true," }),
    });
    const state = new InMemoryStateAdapter();
    const script = { turns: [{ toolCalls: [{ name: "publish", input: { value: "x" } }] }, { text: "published by alt" }] };
    const first = new OpenEveRuntime({ ...bundle, state, logger: noopLogger(), modelHarnesses: { alt: scriptedHarness(script, { name: "alt-engine" }) } });
    const paused = await first.run({ message: "go", model: "alt/model-1" });
    expect(paused.status).toBe("waiting_approval");

    const second = new OpenEveRuntime({
      ...bundle,
      state,
      logger: noopLogger(),
      modelHarnesses: { alt: scriptedHarness(script, { name: "alt-engine" }) },
      defaultHarness: scriptedHarness({ turns: [{ text: "wrong engine" }] }),
    });
    const done = await second.approve(paused.runId);
    expect(done.response?.text).toBe("published by alt");
  });

  it("starts one run for one idempotency key", async () => {
    const runtime = new OpenEveRuntime({ ...(await bundleFor()), logger: noopLogger(), agentHarness: hello });
    const first = await runtime.run({ message: "hi", idempotencyKey: "provider-event-1" });
    const second = await runtime.run({ message: "hi", idempotencyKey: "provider-event-1" });
    expect(second.runId).toBe(first.runId);
    expect(second.status).toBe("completed");
  });
});
