import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import type { AgentHarness, ModelToolCall } from "@assemblyline-agents/core";
import { describe, expect, it, onTestFinished } from "vitest";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { EFFECT, SLOW, agentSource, onlyRunOf, pausedOnDuration, pausingRoot, releasedChild, shared, sharedForTest, slowWorkerFiles, spawnTurn, until } from "./support/subagent-pause.js";
import { startAgent, startBuilt } from "./support/runtime.js";

/** The worker makes its side effect, then waits in `slow` (past its parent's limit) before it ends. */
const WORKER_SCRIPT = { turns: [{ toolCalls: [{ name: "effect", input: { value: "one" } }] }, { toolCalls: [{ name: "slow", input: { value: "two" } }] }, { text: "child done" }] };

/**
 * An engine that gives up on a stopped call by throwing, where the scripted one ends its turn: the root spawns
 * `worker`, which makes its side effect, then waits in `slow`.
 */
const throwingEngine: AgentHarness = {
  name: "throwing",
  async runTurn(input, ctx) {
    await ctx.modelCall("model:0", async () => ({ ok: true }));
    const calls: ModelToolCall[] = input.subagent
      ? [
          { id: "call_effect", name: "effect", input: { value: "one" } },
          { id: "call_slow", name: "slow", input: { value: "two" } },
        ]
      : [{ id: "call_spawn", name: "spawn_subagent", input: { name: "worker", task: "do it" } }];
    let last: unknown = null;
    for (const call of calls) {
      const outcome = await ctx.callTool(call);
      if (outcome.status === "paused") return { status: "paused", continuation: { version: 1, harness: "throwing", agentRevision: input.agentRevision, data: {} } };
      if (outcome.status === "failed") throw new Error(outcome.output.error);
      last = outcome.output;
    }
    return { status: "completed", response: { text: JSON.stringify(last) } };
  },
};

describe("a subagent stopped by its parent's maxDurationMs pause", () => {
  it("is left resumable, and approving the parent drives it on: the parent's spawn gets its output and its side effect happens once", async () => {
    const { release } = sharedForTest();
    const dir = pausingRoot(
      slowWorkerFiles("subagents/worker"),
      { turns: [spawnTurn("worker"), { text: "parent done" }], subagents: { worker: WORKER_SCRIPT } },
      600,
    );
    const { runtime, state } = await startBuilt(dir);
    const paused = await pausedOnDuration(runtime);

    // Stopped with the parent's turn, not failed: left as a crash leaves a run, its lease released once its drive stops.
    const workerId = await releasedChild(runtime, state);
    const stopped = await onlyRunOf(state, workerId);
    expect({ status: stopped.status, effects: shared.__effects }).toEqual({ status: "running", effects: 1 });

    release();
    const approved = await runtime.approve(paused.runId);
    expect({ status: approved.status, reply: approved.response?.text }).toEqual({ status: "completed", reply: "parent done" });
    // The replayed spawn found the stopped child (no second one) and drove it on from where it stood.
    const child = await onlyRunOf(state, workerId);
    expect({ child: child.status, effects: shared.__effects }).toEqual({ child: "completed", effects: 1 });
    expect(await state.getToolCall(paused.runId, "call_0_0")).toMatchObject({ status: "completed", modelOutput: { subagent: "worker", runId: child.id, output: "child done" } });
  });

  it("does not count the time the child stood stopped in the maxDurationMs it inherited", async () => {
    const { release } = sharedForTest();
    const dir = pausingRoot(
      slowWorkerFiles("subagents/worker"),
      { turns: [spawnTurn("worker"), { text: "parent done" }], subagents: { worker: WORKER_SCRIPT } },
      300,
    );
    const { runtime, state } = await startBuilt(dir);
    const paused = await pausedOnDuration(runtime);
    // The human decides after the child's 300 ms (its parent's, inherited) would have run out, had its stopped time counted.
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    release();
    expect((await runtime.approve(paused.runId)).status).toBe("completed");
    const child = await onlyRunOf(state, `${runtime.manifest.agent.id}/worker`);
    expect({ child: child.status, error: child.error?.message, effects: shared.__effects }).toEqual({ child: "completed", error: undefined, effects: 1 });
  });

  it("is left resumable as well under an engine that throws when its call is stopped", async () => {
    const { release } = sharedForTest();
    const dir = agentFolder({
      "agent.ts": agentSource(`model: "test/model", instructions: "Coordinate.", budgets: { maxDurationMs: 600, onExceeded: "pause" }`),
      ...slowWorkerFiles("subagents/worker"),
    });
    const { runtime, state } = await startAgent(dir, [], { agentHarness: throwingEngine });
    const paused = await pausedOnDuration(runtime);
    const workerId = await releasedChild(runtime, state);
    expect((await onlyRunOf(state, workerId)).status).toBe("running");

    release();
    const approved = await runtime.approve(paused.runId);
    const child = await onlyRunOf(state, workerId);
    expect({ status: approved.status, reply: approved.response?.text, child: child.status, effects: shared.__effects }).toEqual({
      status: "completed",
      reply: JSON.stringify({ subagent: "worker", runId: child.id, output: JSON.stringify({ done: "two" }) }),
      child: "completed",
      effects: 1,
    });
  });

  it("leaves a child its parent's pause stopped before it started queued, for the approved replay to start", async () => {
    const { release } = sharedForTest();
    let childStored!: () => void;
    const storing = new Promise<void>((resolve) => (childStored = resolve));
    /** A store that holds the child's creation until the test lets it through: the pause comes in between. */
    class SlowToCreateChildren extends InMemoryStateAdapter {
      override async createRun(...args: Parameters<InMemoryStateAdapter["createRun"]>): ReturnType<InMemoryStateAdapter["createRun"]> {
        if (args[0].input.parent) await storing;
        return super.createRun(...args);
      }
    }
    const dir = pausingRoot(
      slowWorkerFiles("subagents/worker"),
      { turns: [spawnTurn("worker"), { text: "parent done" }], subagents: { worker: WORKER_SCRIPT } },
      300,
    );
    const state = new SlowToCreateChildren();
    const { runtime } = await startBuilt(dir, { state });
    const paused = await pausedOnDuration(runtime);

    childStored();
    const workerId = `${runtime.manifest.agent.id}/worker`;
    await until(async () => (await state.listRuns({ agentId: workerId })).runs[0]?.lease === null);
    expect({ child: (await onlyRunOf(state, workerId)).status, effects: shared.__effects }).toEqual({ child: "queued", effects: 0 });

    release();
    expect((await runtime.approve(paused.runId)).status).toBe("completed");
    const child = await onlyRunOf(state, workerId);
    expect({ child: child.status, effects: shared.__effects }).toEqual({ child: "completed", effects: 1 });
    expect(await state.getToolCall(paused.runId, "call_0_0")).toMatchObject({ status: "completed", modelOutput: { subagent: "worker", runId: child.id, output: "child done" } });
  });

  it("leaves a nested child resumable too, each level down, and the approval drives both on", async () => {
    const { release } = sharedForTest();
    const dir = pausingRoot(
      {
        "subagents/lead/agent.ts": agentSource(`description: "Delegates.", instructions: "Delegate."`),
        ...slowWorkerFiles("subagents/lead/subagents/worker"),
      },
      { turns: [spawnTurn("lead"), { text: "parent done" }], subagents: { lead: { turns: [spawnTurn("worker"), { text: "lead done" }], subagents: { worker: WORKER_SCRIPT } } } },
      600,
    );
    const { runtime, state } = await startBuilt(dir);
    const paused = await pausedOnDuration(runtime);
    const id = runtime.manifest.agent.id;
    await until(async () => (await onlyRunOf(state, `${id}/lead`)).lease === null && (await onlyRunOf(state, `${id}/lead/worker`)).lease === null);
    expect([(await onlyRunOf(state, `${id}/lead`)).status, (await onlyRunOf(state, `${id}/lead/worker`)).status]).toEqual(["running", "running"]);

    release();
    expect((await runtime.approve(paused.runId)).status).toBe("completed");
    const [lead, worker] = [await onlyRunOf(state, `${id}/lead`), await onlyRunOf(state, `${id}/lead/worker`)];
    expect({ lead: lead.status, worker: worker.status, effects: shared.__effects }).toEqual({ lead: "completed", worker: "completed", effects: 1 });
    expect(await state.getToolCall(paused.runId, "call_0_0")).toMatchObject({ status: "completed", modelOutput: { subagent: "lead", runId: lead.id, output: "lead done" } });
  });

  it("fails a child spawned in the background by a call that has returned, which no replay would drive on", async () => {
    const { release } = sharedForTest();
    onTestFinished(release);
    const BACKGROUND = toolSource({ upFront: true, execute: `ctx.spawnSubagent({ name: "worker", task: "do it" }).catch(() => undefined); return { started: input.value };` });
    const dir = pausingRoot(
      { "tools/background.ts": BACKGROUND, "tools/slow.ts": SLOW, ...slowWorkerFiles("subagents/worker") },
      // The parent's time runs out in its own `slow`, after the call that spawned the worker returned.
      { turns: [{ toolCalls: [{ name: "background", input: { value: "worker" } }] }, { toolCalls: [{ name: "slow", input: { value: "parent" } }] }, { text: "parent done" }], subagents: { worker: WORKER_SCRIPT } },
      600,
    );
    const { runtime, state } = await startBuilt(dir);
    const paused = await pausedOnDuration(runtime);
    const workerId = await releasedChild(runtime, state);
    const stopped = await onlyRunOf(state, workerId);
    expect({ status: stopped.status, code: stopped.error?.code, effects: shared.__effects }).toEqual({ status: "failed", code: "AL_ERR_BUDGET_EXCEEDED", effects: 1 });

    release();
    expect((await runtime.approve(paused.runId)).status).toBe("completed");
    expect(await runtime.recoverRuns()).toEqual([]);
    expect({ child: (await onlyRunOf(state, workerId)).status, effects: shared.__effects }).toEqual({ child: "failed", effects: 1 });
  });
});

describe("a run another runtime drives under a tool's ctx.signal when that tool's run pauses on maxDurationMs", () => {
  it("fails with the pause instead of being left running, so approving the pause runs the inner work once", async () => {
    const { release } = sharedForTest();
    onTestFinished(release);
    // The inner agent waits in `slow`, then makes its side effect: only a run driven past `slow` makes it.
    const innerDir = pausingRoot({ "tools/effect.ts": EFFECT, "tools/slow.ts": SLOW }, { turns: [{ toolCalls: [{ name: "slow", input: { value: "one" } }] }, { toolCalls: [{ name: "effect", input: { value: "two" } }] }, { text: "inner done" }] }, 60_000);
    const inner = await startBuilt(innerDir);
    onTestFinished(() => inner.runtime.close());
    const hosted = globalThis as { __inner?: typeof inner.runtime };
    hosted.__inner = inner.runtime;
    onTestFinished(() => {
      delete hosted.__inner;
    });
    const NESTED = toolSource({ upFront: true, execute: `const result = await globalThis.__inner.run({ message: input.value, signal: ctx.signal }); return { inner: result.status };` });
    const dir = pausingRoot({ "tools/nested.ts": NESTED }, { turns: [{ toolCalls: [{ name: "nested", input: { value: "go" } }] }, { text: "outer done" }] }, 600);
    const { runtime } = await startBuilt(dir);
    onTestFinished(() => runtime.close());

    const paused = await runtime.run({ message: "go" });
    expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxDurationMs" } });
    const innerId = inner.runtime.manifest.agent.id;
    await until(async () => (await onlyRunOf(inner.state, innerId)).lease === null);
    const stopped = await onlyRunOf(inner.state, innerId);
    expect({ status: stopped.status, code: stopped.error?.code }).toEqual({ status: "failed", code: "AL_ERR_BUDGET_EXCEEDED" });

    release();
    const approved = await runtime.approve(paused.runId);
    expect({ status: approved.status, reply: approved.response?.text }).toEqual({ status: "completed", reply: "outer done" });
    // The inner runtime's sweep finds nothing left to drive: the replayed call's inner run is the only one that went on.
    expect(await inner.runtime.recoverRuns()).toEqual([]);
    const innerRuns = (await inner.state.listRuns({ agentId: innerId })).runs.map((run) => run.status).sort();
    expect({ innerRuns, effects: shared.__effects }).toEqual({ innerRuns: ["completed", "failed"], effects: 1 });
  });
});
