import { describe, expect, it } from "vitest";
import type { OpenEveRuntime } from "@assemblyline-agents/runtime";
import { startBuilt } from "./support/runtime.js";
import { agentFolder } from "./support/agent-folder.js";

const ROOT = (budgets: string) => `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ model: "test/model", budgets: ${budgets} });\n`;
const WORKER = `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ description: "Does delegated work." });\n`;

type Ctx = {
  callTool(call: object): Promise<unknown>;
  modelCall(key: string, fn: () => Promise<unknown>): Promise<unknown>;
  recordUsage(record: object): Promise<void>;
};

/**
 * A root that spawns `spawns` subagents at once (parallel tool calls of one response); each subagent
 * makes model calls of 10 tokens and $0.01 until its budget stops it (at most 30).
 * `nested`: each subagent in turn spawns two of its own at once, which do the spending.
 */
function spendingHarness(spawns: number, nested = false) {
  const spend = async (input: { runId: string }, ctx: Ctx) => {
    for (let call = 0; call < 30; call += 1) {
      await ctx.modelCall(`m${call}`, async () => {
        await ctx.recordUsage({ id: `${input.runId}:m${call}`, provider: "test", model: "model", inputTokens: 5, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.01 });
        return null;
      });
    }
  };
  const spawnAtOnce = (ctx: Ctx, prefix: string, count: number, name: string) =>
    Promise.all(Array.from({ length: count }, (_, index) => ctx.callTool({ id: `${prefix}_${index}`, name: "spawn_subagent", input: { name, task: `part ${index}` } })));
  return {
    name: "spender",
    async runTurn(input: { runId: string; agentRevision: string; subagent?: string }, ctx: Ctx) {
      let outcomes: unknown[] = [];
      if (input.subagent === undefined) outcomes = await spawnAtOnce(ctx, "call_spawn", spawns, "worker");
      else if (nested && input.subagent === "worker") outcomes = await spawnAtOnce(ctx, "call_sub", 2, "helper");
      else await spend(input, ctx);
      // A child paused on its budget pauses its parent too, until a human decides.
      if (outcomes.some((outcome) => (outcome as { status: string }).status === "paused")) {
        return { status: "paused", continuation: { version: 1, harness: "spender", agentRevision: input.agentRevision, data: null } };
      }
      return { status: "completed", response: { text: "done" } };
    },
  };
}

/** Every run under `runId` (all depths), by its subagent.started events. */
async function runsUnder(runtime: OpenEveRuntime, runId: string): Promise<string[]> {
  const children = (await runtime.listEvents(runId)).filter((event) => event.type === "subagent.started").map((event) => event.data.childRunId as string);
  return [...children, ...(await Promise.all(children.map((child) => runsUnder(runtime, child)))).flat()];
}

async function tokensUnder(runtime: OpenEveRuntime, runId: string): Promise<number> {
  const runs = [runId, ...(await runsUnder(runtime, runId))];
  const records = (await Promise.all(runs.map((id) => runtime.state.usage.listUsage({ runId: id })))).flat();
  return records.reduce((total, record) => total + record.inputTokens + record.outputTokens, 0);
}

describe("subagents spawned at the same time", () => {
  it("share what their parent had left: together they stop at its token budget instead of each spending all of it", async () => {
    const dir = agentFolder({ "agent.ts": ROOT("{ maxTokens: 100 }"), "subagents/worker/agent.ts": WORKER });
    const { runtime } = await startBuilt(dir, { agentHarness: spendingHarness(3) as never });
    const root = await runtime.run({ message: "go" });
    const children = await runsUnder(runtime, root.runId);
    expect(children).toHaveLength(3);
    // Each started with the whole 100 left; a call is refused once the three together reached it.
    for (const id of children) expect((await runtime.state.runs.getRun(id))!.input.parent!.budgetLeft).toEqual({ maxTokens: 100 });
    const spent = await tokensUnder(runtime, root.runId);
    expect(spent).toBeGreaterThanOrEqual(100);
    // At most one call (10 tokens) each past it: the calls that were checked while the others' were in flight.
    expect(spent).toBeLessThanOrEqual(100 + 2 * 10);
    const reasons = await Promise.all(children.map(async (id) => (await runtime.getRun(id)).error?.code));
    expect(reasons).toEqual(["AL_ERR_BUDGET_EXCEEDED", "AL_ERR_BUDGET_EXCEEDED", "AL_ERR_BUDGET_EXCEEDED"]);
  });

  it("hold the cost budget the same way, and the ceilings above them when their parents were spawned at the same time too", async () => {
    const dir = agentFolder({
      "agent.ts": ROOT("{ maxCostUsd: 0.2 }"),
      "subagents/worker/agent.ts": WORKER,
      "subagents/worker/subagents/helper/agent.ts": WORKER,
    });
    const { runtime } = await startBuilt(dir, { agentHarness: spendingHarness(2, true) as never });
    const root = await runtime.run({ message: "go" });
    const under = await runsUnder(runtime, root.runId);
    expect(under).toHaveLength(6);
    const runs = [root.runId, ...under];
    const cost = (await Promise.all(runs.map((id) => runtime.state.usage.listUsage({ runId: id })))).flat().reduce((total, record) => total + record.costUsd, 0);
    // Four helpers spend at once, two under each worker: at most one call ($0.01) each past the root's $0.20.
    expect(cost).toBeGreaterThanOrEqual(0.2 - 1e-9);
    expect(cost).toBeLessThanOrEqual(0.2 + 3 * 0.01 + 1e-9);
  });

  it("lets a child spend all that was left when it runs alone", async () => {
    const dir = agentFolder({ "agent.ts": ROOT("{ maxTokens: 100 }"), "subagents/worker/agent.ts": WORKER });
    const { runtime } = await startBuilt(dir, { agentHarness: spendingHarness(1) as never });
    const root = await runtime.run({ message: "go" });
    expect(await tokensUnder(runtime, root.runId)).toBe(100);
  });

  it("go on past the shared ceiling by what a human grants one of them when it pauses there", async () => {
    const pausing = WORKER.replace("delegated work.\"", "delegated work.\", budgets: { onExceeded: \"pause\" }");
    const dir = agentFolder({ "agent.ts": ROOT("{ maxTokens: 100 }"), "subagents/worker/agent.ts": pausing });
    const { runtime } = await startBuilt(dir, { agentHarness: spendingHarness(2) as never });
    const root = await runtime.run({ message: "go" });
    expect(root.status).toBe("waiting_approval");
    const [first] = await runsUnder(runtime, root.runId);
    const paused = await runtime.getRun(first!);
    expect(paused.status).toBe("waiting_approval");
    expect(paused.pendingBudget).toMatchObject({ budget: "maxTokens", limit: 100 });
    const before = await tokensUnder(runtime, root.runId);
    // Approving grows its ceiling by its limit from what the two had spent: it spends about 100 more, then pauses again.
    const again = await runtime.approve(first!);
    expect(again.pendingBudget).toMatchObject({ budget: "maxTokens", limit: paused.pendingBudget!.used + 100 });
    const after = await tokensUnder(runtime, root.runId);
    expect(after - before).toBeGreaterThanOrEqual(100);
    expect(after - before).toBeLessThanOrEqual(110);
  });
});
