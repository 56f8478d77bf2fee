import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startBuilt } from "./support/runtime.js";
import { agentFolder, toolSource } from "./support/agent-folder.js";

const g = globalThis as { __release?: Promise<void> };

async function until(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a paused parent is woken only by the end of a subagent it waits on", () => {
  it("stays paused for a human's decision on the budget when the subagent ends, instead of being resumed (and failing)", async () => {
    const script = {
      turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "worker", task: "do it" } }] }, { text: "parent done" }],
      subagents: { worker: { turns: [{ toolCalls: [{ name: "slow", input: { value: "one" } }] }, { text: "child done" }] } },
    };
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname, instructions: "Coordinate.", budgets: { maxDurationMs: 400, onExceeded: "pause" } });
`,
      "subagents/worker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Works slowly.", instructions: "Work." });
`,
      "subagents/worker/tools/slow.ts": toolSource({ upFront: true, execute: `await globalThis.__release; return { done: input.value };` }),
    });
    writeFileSync(join(dir, "script.json"), JSON.stringify(script));
    let release!: () => void;
    g.__release = new Promise<void>((resolve) => (release = resolve));
    const { runtime, state } = await startBuilt(dir);
    const paused = await runtime.run({ message: "go" });
    // The parent's 400 ms ran out while its child was still working.
    expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxDurationMs" } });

    // The child, left resumable when the parent's turn stopped, is driven to its end by a recovery sweep.
    release();
    await runtime.recoverRuns();
    const childOf = async () => (await state.listRuns({ agentId: `${runtime.manifest.agent.id}/worker` })).runs[0];
    await until(async () => ["completed", "failed"].includes((await childOf())?.status ?? ""));
    // Time for a wake, had there been one.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const parentNow = await runtime.getRun(paused.runId);
    const types = (await state.listEvents(paused.runId)).map((event) => event.type);
    expect({ parent: parentNow.status, pendingBudget: parentNow.pendingBudget?.budget, resumedByChild: types.includes("subagent.resumed_parent") }).toEqual({
      parent: "waiting_approval",
      pendingBudget: "maxDurationMs",
      resumedByChild: false,
    });
  });

  it("goes on when its maxDurationMs pause is approved: the spawn the limit stopped runs again and drives its stopped child on to its end", async () => {
    const script = {
      turns: [{ toolCalls: [{ name: "spawn_subagent", input: { name: "worker", task: "do it" } }] }, { text: "parent done" }],
      subagents: { worker: { turns: [{ toolCalls: [{ name: "slow", input: { value: "one" } }] }, { text: "child done" }] } },
    };
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname, instructions: "Coordinate.", budgets: { maxDurationMs: 400, onExceeded: "pause" } });
`,
      "subagents/worker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Works slowly.", instructions: "Work." });
`,
      "subagents/worker/tools/slow.ts": toolSource({ upFront: true, execute: `await globalThis.__release; return { done: input.value };` }),
    });
    writeFileSync(join(dir, "script.json"), JSON.stringify(script));
    let release!: () => void;
    g.__release = new Promise<void>((resolve) => (release = resolve));
    const { runtime, state } = await startBuilt(dir);
    const paused = await runtime.run({ message: "go" });
    expect(paused).toMatchObject({ status: "waiting_approval", pendingBudget: { budget: "maxDurationMs" } });
    // The limit stopped the spawn mid-way: left for the approved replay, as a crash leaves a call.
    expect(await state.getToolCall(paused.runId, "call_0_0")).toMatchObject({ toolName: "spawn_subagent", status: "requested" });

    // The child's tool would end a moment after the human grows the budget.
    setTimeout(release, 100);
    const approved = await runtime.approve(paused.runId);
    await until(async () => !["running", "waiting_approval"].includes((await runtime.getRun(paused.runId)).status));
    const parentNow = await runtime.getRun(paused.runId);
    expect({ approved: approved.status, parent: parentNow.status, reply: parentNow.response?.text }).toEqual({ approved: "completed", parent: "completed", reply: "parent done" });
    // The child stopped with its parent's turn, left resumable; the replayed spawn found it (no second child) and drove it on.
    const children = (await state.listRuns({ agentId: `${runtime.manifest.agent.id}/worker` })).runs;
    expect(children.map((child) => child.status)).toEqual(["completed"]);
    const spawn = await state.getToolCall(paused.runId, "call_0_0");
    expect(spawn).toMatchObject({ status: "completed", modelOutput: { subagent: "worker", runId: children[0]!.id, output: "child done" } });
  });

  it("stays paused on one subagent's approval when another subagent it spawned beside it (and never waited on) ends", async () => {
    const script = {
      turns: [{ toolCalls: [{ name: "fan_out", input: { value: "x" } }] }, { text: "parent done" }],
      subagents: {
        worker: { turns: [{ toolCalls: [{ name: "slow", input: { value: "one" } }] }, { text: "worker done" }] },
        checker: { turns: [{ toolCalls: [{ name: "check", input: { value: "x" } }] }, { text: "checked" }] },
      },
    };
    const dir = agentFolder({
      "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname, instructions: "Coordinate." });
`,
      "tools/fan_out.ts": toolSource({
        upFront: true,
        execute: `const spawned = await Promise.all([ctx.spawnSubagent({ name: "worker", task: "work" }), ctx.spawnSubagent({ name: "checker", task: "check" })]);
      return spawned.map((one) => one.output);`,
      }),
      "subagents/worker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Works slowly.", instructions: "Work." });
`,
      "subagents/worker/tools/slow.ts": toolSource({ upFront: true, execute: `await globalThis.__release; return { done: input.value };` }),
      "subagents/checker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Checks with a human first.", instructions: "Check." });
`,
      "subagents/checker/tools/check.ts": toolSource({ upFront: true, extra: `needsApproval: approvalRequired("A human signs each check off."),`, execute: `return { checked: input.value };` }),
    });
    writeFileSync(join(dir, "script.json"), JSON.stringify(script));
    let release!: () => void;
    g.__release = new Promise<void>((resolve) => (release = resolve));
    const { runtime, state } = await startBuilt(dir);
    const paused = await runtime.run({ message: "go" });
    expect(paused).toMatchObject({ status: "waiting_approval", waitingOn: { subagent: "checker" }, pendingApprovals: [expect.objectContaining({ toolName: "check" })] });

    // The worker ends while the checker's call still waits for a human.
    release();
    const worker = async () => (await state.listRuns({ agentId: `${runtime.manifest.agent.id}/worker` })).runs[0];
    await until(async () => ["completed", "failed"].includes((await worker())?.status ?? ""));
    await new Promise((resolve) => setTimeout(resolve, 300));

    const parentNow = await runtime.getRun(paused.runId);
    const types = (await state.listEvents(paused.runId)).map((event) => event.type);
    expect({ parent: parentNow.status, waitingOn: parentNow.waitingOn?.subagent, resumedByChild: types.includes("subagent.resumed_parent") }).toEqual({
      parent: "waiting_approval",
      waitingOn: "checker",
      resumedByChild: false,
    });
    // The human's decision is what resumes it, through the checker's end.
    await runtime.approve(paused.runId);
    const resumed = (await state.listEvents(paused.runId)).filter((event) => event.type === "subagent.resumed_parent");
    expect(resumed.map((event) => event.data.childRunId)).toEqual([paused.waitingOn!.runId]);
    expect((await runtime.getRun(paused.runId)).status).not.toMatch(/^waiting_/);
  });
});
