import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentHarness, HarnessTurnResult, ModelToolCall, RunRecord } from "@assemblyline-agents/core";
import { beforeEach, describe, expect, it } from "vitest";
import type { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent, startBuilt } from "./support/runtime.js";

/** What the worker's `slow` tool shares with the test: how often it ran, when it first started, and what it waits for. */
type Shared = { __slowCalls?: number; __slowStarted?: () => void; __slowStartedOnce?: Promise<void>; __release?: Promise<void> };
const shared = globalThis as Shared;

let release: () => void;
let slowStarted: Promise<void>;
beforeEach(() => {
  shared.__slowCalls = 0;
  shared.__release = new Promise<void>((resolve) => (release = resolve));
  slowStarted = shared.__slowStartedOnce = new Promise<void>((resolve) => (shared.__slowStarted = resolve));
});

const SLOW = toolSource({
  upFront: true,
  execute: `globalThis.__slowCalls = (globalThis.__slowCalls ?? 0) + 1; globalThis.__slowStarted?.(); await globalThis.__release; return { done: input.value };`,
});
const agent = (fields: string) => `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ ${fields} });\n`;
const WORKER = agent(`description: "Works slowly.", instructions: "Work."`);

/** An agent whose subagent `worker` has the tool `slow`, on the scripted model `script`. */
function scripted(script: object, files: Record<string, string> = {}, rootFields = "") {
  const dir = agentFolder({
    "agent.ts": agent(`model: "scripted:" + new URL("./script.json", import.meta.url).pathname, instructions: "Coordinate."${rootFields}`),
    "subagents/worker/agent.ts": WORKER,
    "subagents/worker/tools/slow.ts": SLOW,
    ...files,
  });
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  return dir;
}

const SPAWN = { name: "spawn_subagent", input: { name: "worker", task: "do it" } };
/** A worker that calls `slow` twice: a second call means it went on after its first returned. */
const WORKS_TWICE = { turns: [{ toolCalls: [{ name: "slow", input: { value: "one" } }] }, { toolCalls: [{ name: "slow", input: { value: "two" } }] }, { text: "child done" }] };

async function runsOf(state: InMemoryStateAdapter, agentId: string): Promise<RunRecord[]> {
  return (await state.listRuns({ agentId })).runs;
}

/** Let the child's first slow call return, and give whatever still runs time to act on it. */
async function releaseAndSettle(): Promise<void> {
  release();
  await new Promise((resolve) => setTimeout(resolve, 300));
}

/** The parent's events from its end on: nothing may follow it. */
async function fromEnd(state: InMemoryStateAdapter, runId: string): Promise<string[]> {
  const types = (await state.listEvents(runId)).map((event) => event.type);
  return types.slice(types.findIndex((type) => type === "run.failed" || type === "run.completed"));
}

/**
 * An engine that makes a model's parallel tool calls at once: the root spawns `worker` while it makes `beside`;
 * the worker calls `slow` twice, then ends.
 */
function parallelEngine(beside: ModelToolCall): AgentHarness {
  const paused = (agentRevision: string): HarnessTurnResult => ({ status: "paused", continuation: { version: 1, harness: "parallel", agentRevision, data: {} } });
  return {
    name: "parallel",
    async runTurn(input, ctx) {
      await ctx.modelCall("model:0", async () => ({ ok: true }));
      if (input.subagent) {
        for (const value of ["one", "two"]) {
          const outcome = await ctx.callTool({ id: `call_slow_${value}`, name: "slow", input: { value } });
          if (outcome.status !== "completed") return { status: "completed", response: { text: "child stopped" } };
        }
        return { status: "completed", response: { text: "child done" } };
      }
      const outcomes = await Promise.all([ctx.callTool({ id: "call_spawn", name: "spawn_subagent", input: { name: "worker", task: "do it" } }), ctx.callTool(beside)]);
      if (outcomes.some((outcome) => outcome.status === "paused")) return paused(input.agentRevision);
      return { status: "completed", response: { text: JSON.stringify(outcomes.map((outcome) => (outcome.status === "paused" ? null : outcome.output))) } };
    },
  };
}

describe("a subagent stops when its parent stops", () => {
  it("fails the running child with the cancel's reason when the parent's caller aborts, and adds nothing to the parent's log after the stopped call", async () => {
    const { runtime, state } = await startBuilt(scripted({ turns: [{ toolCalls: [SPAWN] }, { text: "parent done" }], subagents: { worker: WORKS_TWICE } }));
    const controller = new AbortController();
    const running = runtime.run({ message: "go", signal: controller.signal });
    await slowStarted;
    controller.abort(new Error("user cancelled"));
    const parent = await running;
    expect(parent.status).toBe("failed");
    // The child's tool returns only now: the child must not go on with its work.
    await releaseAndSettle();
    const [child] = await runsOf(state, `${runtime.manifest.agent.id}/worker`);
    expect({ status: child!.status, error: child!.error?.message, slowCalls: shared.__slowCalls }).toEqual({ status: "failed", error: "user cancelled", slowCalls: 1 });
    // The spawning call is recorded stopped, then the run's end: the spawn adds nothing after its call stopped.
    const types = (await state.listEvents(parent.runId)).map((event) => event.type);
    expect(types.slice(types.indexOf("tool.execution_failed"))).toEqual(["tool.execution_failed", "run.failed"]);
  });

  it("fails the child when the parent's maxDurationMs runs out, though the child's own time (it started later) has not", async () => {
    const WAIT = toolSource({ upFront: true, execute: `await new Promise((resolve) => setTimeout(resolve, 300)); return { waited: true };` });
    const dir = scripted(
      { turns: [{ toolCalls: [{ name: "wait", input: { value: "x" } }] }, { toolCalls: [SPAWN] }, { text: "parent done" }], subagents: { worker: WORKS_TWICE } },
      { "tools/wait.ts": WAIT },
      ", budgets: { maxDurationMs: 800 }",
    );
    const { runtime, state } = await startBuilt(dir);
    const parent = await runtime.run({ message: "go" });
    expect(parent).toMatchObject({ status: "failed", error: { code: "AL_ERR_BUDGET_EXCEEDED" } });
    // The child inherited 800 ms from its start, some 300 ms after the parent's: it would still be working.
    await releaseAndSettle();
    const [child] = await runsOf(state, `${runtime.manifest.agent.id}/worker`);
    expect({ status: child!.status, code: child!.error?.code, slowCalls: shared.__slowCalls }).toEqual({ status: "failed", code: "AL_ERR_BUDGET_EXCEEDED", slowCalls: 1 });
    expect(await fromEnd(state, parent.runId)).toEqual(["run.failed"]);
  });

  it("fails the child when a tool call beside the spawn fails", async () => {
    const BOOM = toolSource({ upFront: true, execute: `await globalThis.__slowStartedOnce; throw new Error("boom");` });
    const dir = agentFolder({ "agent.ts": agent(`model: "test/model", instructions: "Coordinate."`), "tools/boom.ts": BOOM, "subagents/worker/agent.ts": WORKER, "subagents/worker/tools/slow.ts": SLOW });
    const { runtime, state } = await startAgent(dir, [], { agentHarness: parallelEngine({ id: "call_boom", name: "boom", input: { value: "x" } }) });
    const parent = await runtime.run({ message: "go" });
    expect(parent).toMatchObject({ status: "failed", error: { message: expect.stringContaining("boom") } });
    await releaseAndSettle();
    const [child] = await runsOf(state, `${runtime.manifest.agent.id}/worker`);
    expect({ status: child!.status, error: child!.error?.message, slowCalls: shared.__slowCalls }).toEqual({ status: "failed", error: expect.stringContaining("boom"), slowCalls: 1 });
    expect(await fromEnd(state, parent.runId)).toEqual(["run.failed"]);
  });

  it("stops a nested child too: the cancel goes down each level", async () => {
    const dir = agentFolder({
      "agent.ts": agent(`model: "scripted:" + new URL("./script.json", import.meta.url).pathname, instructions: "Coordinate."`),
      "subagents/lead/agent.ts": agent(`description: "Delegates.", instructions: "Delegate."`),
      "subagents/lead/subagents/worker/agent.ts": WORKER,
      "subagents/lead/subagents/worker/tools/slow.ts": SLOW,
    });
    const script = {
      turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "lead", task: "get it done" } }] }, { text: "parent done" }],
      subagents: { lead: { turns: [{ toolCalls: [SPAWN] }, { text: "lead done" }], subagents: { worker: WORKS_TWICE } } },
    };
    writeFileSync(join(dir, "script.json"), JSON.stringify(script));
    const { runtime, state } = await startBuilt(dir);
    const controller = new AbortController();
    const running = runtime.run({ message: "go", signal: controller.signal });
    await slowStarted;
    controller.abort(new Error("user cancelled"));
    expect((await running).status).toBe("failed");
    await releaseAndSettle();
    const id = runtime.manifest.agent.id;
    const [lead] = await runsOf(state, `${id}/lead`);
    const [worker] = await runsOf(state, `${id}/lead/worker`);
    expect({ lead: lead!.status, worker: worker!.status, workerError: worker!.error?.message, slowCalls: shared.__slowCalls }).toEqual({
      lead: "failed",
      worker: "failed",
      workerError: "user cancelled",
      slowCalls: 1,
    });
  });

  it("lets the child finish when the parent only pauses (a question asked beside the spawn)", async () => {
    const dir = agentFolder({ "agent.ts": agent(`model: "test/model", instructions: "Coordinate."`), "subagents/worker/agent.ts": WORKER, "subagents/worker/tools/slow.ts": SLOW });
    const { runtime, state } = await startAgent(dir, [], { agentHarness: parallelEngine({ id: "call_ask", name: "ask_question", input: { question: "Which env?" } }) });
    const running = runtime.run({ message: "go" });
    await slowStarted;
    release();
    const parent = await running;
    expect(parent.status).toBe("waiting_input");
    const [child] = await runsOf(state, `${runtime.manifest.agent.id}/worker`);
    expect({ status: child!.status, slowCalls: shared.__slowCalls }).toEqual({ status: "completed", slowCalls: 2 });
    const done = await runtime.answer(parent.runId, "production");
    expect(done.status).toBe("completed");
    expect(JSON.parse(done.response!.text)).toEqual([{ subagent: "worker", runId: child!.id, output: "child done" }, { answer: "production" }]);
  });

  it("writes nothing to the parent's log once the parent has ended, for a spawn its tool did not wait for", async () => {
    // The tool returns once the child works, without waiting for its end: the parent completes first.
    const DETACH = toolSource({
      upFront: true,
      execute: `ctx.spawnSubagent({ name: "worker", task: "later" }).catch(() => undefined); await globalThis.__slowStartedOnce; return { started: true };`,
    });
    const { runtime, state } = await startBuilt(
      scripted({ turns: [{ toolCalls: [{ name: "detach", input: { value: "x" } }] }, { text: "parent done" }], subagents: { worker: WORKS_TWICE } }, { "tools/detach.ts": DETACH }),
    );
    const parent = await runtime.run({ message: "go" });
    expect(parent.status).toBe("completed");
    await releaseAndSettle();
    const [child] = await runsOf(state, `${runtime.manifest.agent.id}/worker`);
    expect(child!.status).toBe("completed");
    expect(await fromEnd(state, parent.runId)).toEqual(["run.completed"]);
  });
});
