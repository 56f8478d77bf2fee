import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunResult } from "@assemblyline-agents/runtime";
import { startBuilt } from "./support/runtime.js";
import { agentFolder, toolSource } from "./support/agent-folder.js";

/**
 * docs/subagents.md's research_all: one call spawns its subagents together (`Promise.all`), here the ones
 * named in its input. `approver`'s lookup needs an approval, `asker`'s ask asks a question; two children of
 * one script make calls of the same id (call_0_0).
 */
function folder() {
  const script = {
    turns: [{ toolCalls: [{ name: "spawn_all", input: { value: "approver,approver" } }] }, { text: "parent done" }],
    subagents: {
      approver: { turns: [{ toolCalls: [{ name: "lookup", input: { value: "x" } }] }, { text: "found" }] },
      asker: { turns: [{ toolCalls: [{ name: "ask", input: { value: "shop" } }] }, { text: "asked" }] },
    },
  };
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname, instructions: "Coordinate." });
`,
    "tools/spawn_all.ts": toolSource({
      upFront: true,
      execute: `return Promise.all(input.value.split(",").map((name) => ctx.spawnSubagent({ name, task: "Go" })));`,
    }),
    "subagents/approver/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks things up.", instructions: "Research." });
`,
    "subagents/approver/tools/lookup.ts": toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Billed."),` }),
    "subagents/asker/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Asks.", instructions: "Ask." });
`,
    "subagents/asker/tools/ask.ts": toolSource({ upFront: true, execute: `return ctx.askQuestion("Which " + input.value + "?");` }),
  });
  return {
    dir,
    /** The parent's first turn spawns these subagents together. */
    spawning(names: string[]) {
      script.turns[0] = { toolCalls: [{ name: "spawn_all", input: { value: names.join(",") } }] };
      writeFileSync(join(dir, "script.json"), JSON.stringify(script));
      return dir;
    },
  };
}

/** Start a parent that spawns `names` together, and wait until each child has paused and the parent shows it. */
async function pausedParent(names: string[]) {
  const started = await startBuilt(folder().spawning(names));
  const { runtime } = started;
  const paused = await runtime.run({ message: "go" });
  // The spawns run together: the parent pauses with the first child, the other records its pause just after.
  let parent: RunResult = await runtime.getRun(paused.runId);
  for (let tries = 0; (parent.waitingOnAll?.length ?? 0) < names.length && tries < 100; tries += 1) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    parent = await runtime.getRun(paused.runId);
  }
  const children = (parent.waitingOnAll ?? []).map((child) => child.runId);
  return { ...started, parent, children };
}

describe("a parent whose subagents, spawned together, all wait", () => {
  it("shows every child's pending call, each with its run and subagent, and waitingOn as the first of the runs it waits on", async () => {
    const { parent, children, state } = await pausedParent(["approver", "approver"]);
    expect(children).toHaveLength(2);
    expect(new Set(children).size).toBe(2);
    for (const childRunId of children) expect((await state.getRun(childRunId))?.status).toBe("waiting_approval");
    expect(parent).toMatchObject({ status: "waiting_approval", waitingOn: { runId: children[0], subagent: "approver" } });
    expect(parent.waitingOnAll).toEqual(children.map((runId) => ({ runId, subagent: "approver" })));
    expect(parent.pendingApprovals?.map((call) => ({ runId: call.runId, subagent: call.subagent, callId: call.callId, toolName: call.toolName }))).toEqual(
      children.map((runId) => ({ runId, subagent: "approver", callId: "call_0_0", toolName: "lookup" })),
    );
  });

  it("decides, through the parent, the call named by its call id and run: approving one and denying the other each reach their own child", async () => {
    const { runtime, state, parent, children } = await pausedParent(["approver", "approver"]);
    const [first, second] = children as [string, string];
    const afterOne = await runtime.deny(parent.runId, { callId: "call_0_0", runId: second, reason: "not this one" });
    expect(await state.getToolCall(second, "call_0_0")).toMatchObject({ status: "denied" });
    expect(await state.getToolCall(first, "call_0_0")).toMatchObject({ status: "waiting_approval" });
    // The parent still waits on the other child, and shows only its call now.
    expect(afterOne).toMatchObject({ status: "waiting_approval", waitingOn: { runId: first } });
    expect(afterOne.pendingApprovals?.map((call) => call.runId)).toEqual([first]);
    const done = await runtime.approve(parent.runId, { callId: "call_0_0", runId: first });
    expect(await state.getToolCall(first, "call_0_0")).toMatchObject({ status: "completed" });
    expect(done).toMatchObject({ status: "completed", response: { text: "parent done" } });
  });

  it("refuses a call id two children share unless the run is named, and takes the call's approval id alone", async () => {
    const { runtime, state, parent, children } = await pausedParent(["approver", "approver"]);
    const refused = await runtime.approve(parent.runId, { callId: "call_0_0" }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND", message: expect.stringContaining(`run ${parent.runId} waits on 2 subagent runs with a pending approval call_0_0`) });
    for (const childRunId of children) expect((await state.getToolCall(childRunId, "call_0_0"))?.status).toBe("waiting_approval");
    // A run it does not wait on is refused, not read as "any".
    await expect(runtime.approve(parent.runId, { callId: "call_0_0", runId: "run_elsewhere" })).rejects.toMatchObject({
      code: "AL_ERR_APPROVAL_NOT_FOUND",
      message: expect.stringContaining(`run ${parent.runId} waits on no subagent run run_elsewhere with a pending approval`),
    });
    const second = parent.pendingApprovals!.find((call) => call.runId === children[1])!;
    await runtime.approve(parent.runId, { callId: second.approvalId });
    expect(await state.getToolCall(children[1]!, "call_0_0")).toMatchObject({ status: "completed" });
    expect(await state.getToolCall(children[0]!, "call_0_0")).toMatchObject({ status: "waiting_approval" });
  });

  it("approves with no call id the first waiting child's call, one child per approval, until the parent completes", async () => {
    const { runtime, parent, children, state } = await pausedParent(["approver", "approver"]);
    const once = await runtime.approve(parent.runId);
    expect(await state.getToolCall(children[0]!, "call_0_0")).toMatchObject({ status: "completed" });
    expect(once).toMatchObject({ status: "waiting_approval", waitingOn: { runId: children[1] } });
    expect(await runtime.approve(parent.runId)).toMatchObject({ status: "completed" });
  });

  it("shows both children's questions (question the first of them) and answers each in its own child by call id and run", async () => {
    const { runtime, state, parent, children } = await pausedParent(["asker", "asker"]);
    expect(parent).toMatchObject({ status: "waiting_input", question: { runId: children[0], subagent: "asker", callId: "call_0_0" } });
    expect(parent.questions?.map((question) => ({ runId: question.runId, callId: question.callId }))).toEqual(children.map((runId) => ({ runId, callId: "call_0_0" })));
    await expect(runtime.answer(parent.runId, "corner", { callId: "call_0_0" })).rejects.toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND" });
    const afterOne = await runtime.answer(parent.runId, "market", { callId: "call_0_0", runId: children[1] });
    expect(await state.getToolCall(children[1]!, "call_0_0")).toMatchObject({ status: "completed", output: { answer: "market" } });
    expect(afterOne).toMatchObject({ status: "waiting_input", question: { runId: children[0] } });
    expect(afterOne.questions).toHaveLength(1);
    expect(await runtime.answer(parent.runId, "corner", { callId: "call_0_0", runId: children[0] })).toMatchObject({ status: "completed" });
    expect(await state.getToolCall(children[0]!, "call_0_0")).toMatchObject({ status: "completed", output: { answer: "corner" } });
  });

  it("shows a child's approval and another child's question together, and takes the decision and the answer through the parent", async () => {
    const { runtime, parent } = await pausedParent(["approver", "asker"]);
    const approval = parent.pendingApprovals?.find((call) => call.subagent === "approver");
    const question = parent.questions?.find((asked) => asked.subagent === "asker");
    expect(approval).toMatchObject({ callId: "call_0_0", toolName: "lookup" });
    expect(question).toMatchObject({ callId: "call_0_0", question: expect.objectContaining({ question: "Which shop?" }) });
    await runtime.approve(parent.runId, { callId: approval!.callId, runId: approval!.runId! });
    expect(await runtime.answer(parent.runId, "corner", { callId: question!.callId, runId: question!.runId! })).toMatchObject({ status: "completed" });
  });

  it("refuses a second approval once the approved child ended, without saying the parent was resumed: it still waits on the other child's question", async () => {
    const { runtime, parent } = await pausedParent(["approver", "asker"]);
    const approval = parent.pendingApprovals!.find((call) => call.subagent === "approver")!;
    await runtime.approve(parent.runId, { callId: approval.callId, runId: approval.runId! });
    expect((await runtime.getRun(parent.runId)).questions).toHaveLength(1);
    const refused = await runtime.approve(parent.runId).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(refused?.message).toMatch(/AL_ERR_RUN_NOT_RESUMABLE/);
    expect(refused?.message).not.toContain("resumed");
    expect((await runtime.getRun(parent.runId)).questions).toHaveLength(1);
  });
});
