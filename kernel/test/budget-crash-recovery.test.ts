import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime } from "@assemblyline-agents/runtime";
import { AssemblyLineError, type AgentHarness } from "@assemblyline-agents/core";
import { describe, expect, it, onTestFinished } from "vitest";
import { agentFolder, toolSource } from "./support/agent-folder.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The store as a process that dies sees it: from `crash()` on, nothing it sends arrives (its lease is no
 * longer renewed and lapses), while the store itself lives on for the next process.
 */
function dyingProcessView(state: InMemoryStateAdapter): { state: InMemoryStateAdapter; crash: () => void } {
  let dead = false;
  const view = new Proxy(state, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (dead) return Promise.reject(new AssemblyLineError("AL_ERR_STATE_UNAVAILABLE", "this process is dead"));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { state: view, crash: () => (dead = true) };
}

describe("maxDurationMs across crashes", () => {
  it.each([
    ["a recovery sweep (recoverRuns)", "sweep"],
    ["a host resuming it (resume, recovered)", "resume"],
  ] as const)("counts the work a crash cut (up to its lease's lapse) as active, so a run its process dies under still reaches the budget: taken over by %s", async (_name, takeover) => {
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "Work.", budgets: { maxDurationMs: 1000 } });
`,
      "tools/echo.ts": toolSource({ upFront: true }),
    });
    const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
    const state = new InMemoryStateAdapter();
    const doomed = dyingProcessView(state);
    let working!: () => void;
    const atWork = new Promise<void>((resolve) => (working = resolve));
    // The first process's first model call and tool call are recorded; its second model call runs until the
    // process dies (and, unheard, until its budget stops it).
    const stalls: AgentHarness = {
      name: "stalls",
      async runTurn(_input, ctx) {
        await ctx.modelCall("model:0", () => ({}));
        await ctx.callTool({ id: "call_0", name: "echo", input: { value: "x" } });
        await ctx.modelCall("model:1", () => {
          working();
          return new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }));
        });
        return { status: "completed", response: { text: "never" } };
      },
    };
    const first = new OpenEveRuntime({ ...bundle, state: doomed.state, agentHarness: stalls, logger: noopLogger(), leaseTtlMs: 300, ownerId: "first-process" });
    // Its budget stops the stalled call; what it then records never arrives, so its drive fails.
    const settled = first.run({ message: "go" }).then(
      () => undefined,
      () => undefined,
    );
    onTestFinished(async () => {
      await settled;
      await first.close().catch(() => undefined);
    });
    await atWork;
    await sleep(900);
    doomed.crash();
    // Long dead: its lease lapsed at most 300 ms after the crash, the rest is time the run stood still.
    await sleep(2_000);

    // The next process's model call takes 300 ms: 900 ms of work before the crash and 300 after pass 1000.
    const finishes: AgentHarness = {
      name: "finishes",
      async runTurn(_input, ctx) {
        await ctx.modelCall("model:0", () => ({}));
        await ctx.callTool({ id: "call_0", name: "echo", input: { value: "x" } });
        await ctx.modelCall("model:1", () => sleep(300).then(() => ({})));
        await ctx.modelCall("model:2", () => ({}));
        return { status: "completed", response: { text: "done" } };
      },
    };
    const second = new OpenEveRuntime({ ...bundle, state, agentHarness: finishes, logger: noopLogger(), leaseTtlMs: 300, ownerId: "second-process" });
    onTestFinished(() => second.close());
    const [run] = (await state.listRuns({})).runs;
    const recovered = takeover === "sweep" ? (await second.recoverRuns())[0] : await second.resume(run!.id, { recovered: true });
    expect(recovered).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
    const events = await state.listEvents(recovered!.runId);
    const resumed = events.find((event) => event.type === "run.resumed");
    expect(resumed?.data).toMatchObject({ owner: "second-process", recovered: true });
    // The lapse is after the crash and before the recovery took the run.
    expect(Date.parse(resumed!.data.leaseLapsedAt as string)).toBeLessThanOrEqual(Date.parse(resumed!.createdAt));
    expect(events.find((event) => event.type === "budget.exceeded")?.data).toMatchObject({ budget: "maxDurationMs", limit: 1000 });
  });
});
