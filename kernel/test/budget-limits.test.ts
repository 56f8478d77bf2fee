import { buildAgent, InMemoryStateAdapter, loadRuntimeBundle, noopLogger, OpenEveRuntime, type RuntimeOptions } from "@assemblyline-agents/runtime";
import type { AgentHarness, ModelToolCall, RunEvent } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { agentFolder, toolSource } from "./support/agent-folder.js";

const agentWith = (budgets: string) =>
  agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "test/model", instructions: "Fan out.", budgets: ${budgets} });
`,
    // Each call takes a moment, so calls made together are in flight together.
    "tools/echo.ts": toolSource({ upFront: true, execute: "await new Promise((resolve) => setTimeout(resolve, 5)); return { echoed: input.value };" }),
  });

/**
 * An engine that, like one answering a model's parallel tool calls, runs every
 * call of a response at once; `models` model calls are made at once too.
 */
function parallelEngine(options: { calls: number; models?: number }): AgentHarness {
  return {
    name: "parallel",
    async runTurn(_input, ctx) {
      const models = await Promise.allSettled(
        Array.from({ length: options.models ?? 1 }, (_, index) => ctx.modelCall(`model:${index}`, async () => ({ index }))),
      );
      const refusedModel = models.find((outcome) => outcome.status === "rejected");
      if (refusedModel) throw refusedModel.reason;
      const calls: ModelToolCall[] = Array.from({ length: options.calls }, (_, index) => ({ id: `call_${index}`, name: "echo", input: { value: String(index) } }));
      const outcomes = await Promise.allSettled(calls.map((call) => ctx.callTool(call)));
      const refused = outcomes.find((outcome) => outcome.status === "rejected");
      if (refused) throw refused.reason;
      return { status: "completed", response: { text: "done" } };
    },
  };
}

async function runtimeFor(dir: string, engine: AgentHarness, options: Partial<RuntimeOptions> = {}) {
  const { artifactRoot } = await buildAgent(dir);
  return new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state: new InMemoryStateAdapter(), agentHarness: engine, logger: noopLogger(), ...options });
}

const count = (events: RunEvent[], type: string) => events.filter((event) => event.type === type).length;

describe("budgets under concurrent calls", () => {
  it("runs no more tool calls than maxToolCalls when the engine makes them all at once", async () => {
    const runtime = await runtimeFor(agentWith("{ maxToolCalls: 3 }"), parallelEngine({ calls: 5 }));
    const result = await runtime.run({ message: "go" });
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("AL_ERR_BUDGET_EXCEEDED");
    const events = await runtime.listEvents(result.runId);
    expect(count(events, "tool.called")).toBe(3);
    expect(events.find((event) => event.type === "budget.exceeded")?.data).toEqual({ budget: "maxToolCalls", limit: 3, used: 3, action: "fail" });
    await runtime.close();
  });

  it("makes no more model calls than maxTurns when the engine makes them all at once", async () => {
    const runtime = await runtimeFor(agentWith("{ maxTurns: 2 }"), parallelEngine({ calls: 0, models: 4 }));
    const result = await runtime.run({ message: "go" });
    expect(result.error?.code).toBe("AL_ERR_BUDGET_EXCEEDED");
    const events = await runtime.listEvents(result.runId);
    expect(count(events, "durable_step.completed")).toBeLessThanOrEqual(2);
    expect(events.find((event) => event.type === "budget.exceeded")?.data).toEqual({ budget: "maxTurns", limit: 2, used: 2, action: "fail" });
    await runtime.close();
  });

  it("with onExceeded pause, approving runs the refused parallel calls, each once", async () => {
    const state = new InMemoryStateAdapter();
    const dir = agentWith('{ maxToolCalls: 3, onExceeded: "pause" }');
    const { artifactRoot } = await buildAgent(dir);
    const start = async () => new OpenEveRuntime({ ...(await loadRuntimeBundle(artifactRoot)), state, agentHarness: parallelEngine({ calls: 5 }), logger: noopLogger() });
    const first = await start();
    const paused = await first.run({ message: "go" });
    expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxToolCalls", limit: 3, used: 3 } });
    await first.close();
    const second = await start();
    expect((await second.approve(paused.runId)).status).toBe("completed");
    const completed = (await state.listEvents(paused.runId)).filter((event) => event.type === "tool.completed").map((event) => event.data.callId);
    expect(completed.sort()).toEqual(["call_0", "call_1", "call_2", "call_3", "call_4"]);
    await second.close();
  });
});

describe("budget values", () => {
  it("refuses a count budget that is not a whole number, at build and from the host, naming it", async () => {
    await expect(buildAgent(agentWith("{ maxTurns: 2.5 }"))).rejects.toMatchObject({
      code: "AL_ERR_BUDGET_INVALID",
      message: expect.stringContaining("maxTurns is 2.5"),
    });
    await expect(buildAgent(agentWith("{ maxConversationTokensPerDay: 1000.5 }"))).rejects.toMatchObject({ code: "AL_ERR_BUDGET_INVALID", message: expect.stringContaining("maxConversationTokensPerDay") });
    await expect(runtimeFor(agentWith("{ maxTurns: 5 }"), parallelEngine({ calls: 0 }), { budgets: { maxToolCalls: 0.5 } })).rejects.toMatchObject({
      code: "AL_ERR_BUDGET_INVALID",
      message: expect.stringContaining("maxToolCalls is 0.5"),
    });
  });

  it("keeps fractional limits where they measure money or time", async () => {
    const runtime = await runtimeFor(agentWith("{ maxCostUsd: 0.25, maxDurationMs: 60000.5 }"), parallelEngine({ calls: 1 }));
    expect((await runtime.run({ message: "go" })).status).toBe("completed");
    await runtime.close();
  });
});
