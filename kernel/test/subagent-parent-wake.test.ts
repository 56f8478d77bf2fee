import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { noopLogger } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, type RunResult } from "@assemblyline-agents/runtime";
import { agentFolder, toolSource } from "./support/agent-folder.js";

/** A parent with a researcher subagent whose lookup needs approval and which may ask a question. */
function researchAgent(script: object): string {
  const dir = agentFolder({
    "agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ model: "scripted:" + new URL("./script.json", import.meta.url).pathname });
`,
    "subagents/researcher/agent.ts": `import { defineAgent } from "@assemblyline-agents/core";
export default defineAgent({ description: "Looks facts up in the archive." });
`,
    "subagents/researcher/tools/lookup.ts": toolSource({ upFront: true, extra: `needsApproval: approvalRequired("The archive is billed per lookup."),`, execute: `return { fact: "42" };` }),
  });
  writeFileSync(join(dir, "script.json"), JSON.stringify(script));
  return dir;
}

const SPAWN = { toolCalls: [{ name: "spawn_subagent", input: { name: "researcher", task: "look" } }] };
const ASKING = { turns: [SPAWN, { text: "parent done" }], subagents: { researcher: { turns: [{ toolCalls: [{ name: "ask_question", input: { question: "Which region?" } }] }, { text: "child result" }] } } };
const APPROVING = { turns: [SPAWN, { text: "parent done" }], subagents: { researcher: { turns: [{ toolCalls: [{ name: "lookup", input: { value: "x" } }] }, { text: "child result" }] } } };

const isChildEnd = (property: string | symbol, args: unknown[]) =>
  property === "appendEvents" && String(args[0]).startsWith("run_sub_") && (args[1] as Array<{ type: string }>).some((event) => event.type === "run.completed");

/**
 * The parent pauses on its subagent's question or approval; `decide` answers it on a process that
 * dies right after the child's end is written, before it wakes the parent. Returns a second process
 * on the same store.
 */
async function crashBetweenChildEndAndParentWake(script: object, decide: (runtime: OpenEveRuntime, paused: RunResult) => Promise<unknown>) {
  const bundle = await loadRuntimeBundle((await buildAgent(researchAgent(script))).artifactRoot);
  const state = new InMemoryStateAdapter();
  // The store as the dying process sees it: nothing reaches it after a child run's end is written.
  let dead = false;
  const dying = new Proxy(state, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        if (dead) throw new Error("process died");
        const result = await value.apply(target, args);
        if (isChildEnd(property, args)) dead = true;
        return result;
      };
    },
  });
  const first = new OpenEveRuntime({ ...bundle, state: dying, logger: noopLogger(), leaseTtlMs: 50 });
  const paused = await first.run({ message: "go" });
  await decide(first, paused).catch(() => undefined);
  expect((await state.getRun(paused.waitingOn!.runId))?.status).toBe("completed");
  expect((await state.getRun(paused.runId))?.status).toBe(paused.status);
  // The dead process's leases run out.
  await new Promise((resolve) => setTimeout(resolve, 80));
  const second = new OpenEveRuntime({ ...bundle, state, logger: noopLogger(), leaseTtlMs: 50 });
  return { bundle, state, paused, second };
}

describe("a parent whose subagent ended before the parent took its end", () => {
  it.each(["recovery sweep", "subagent recovery a host calls", "resume"] as const)("is woken by the %s after a process died between the child's end and the parent's wake", async (how) => {
    const { state, paused, second } = await crashBetweenChildEndAndParentWake(ASKING, (runtime, waiting) => runtime.answer(waiting.runId, "yes"));
    if (how === "recovery sweep") await second.recoverRuns();
    else if (how === "subagent recovery a host calls") expect(await second.recoverSubagentRuns()).toEqual([]);
    else await second.resume(paused.runId);
    await second.onIdle();
    expect(await second.getRun(paused.runId)).toMatchObject({ status: "completed", response: { text: "parent done" } });
    expect((await state.listEvents(paused.runId)).filter((event) => event.type === "subagent.completed")).toHaveLength(1);
  });

  it.each([
    ["without a call id", false, "AL_ERR_RUN_NOT_RESUMABLE"],
    ["with the question's call id", true, "AL_ERR_APPROVAL_NOT_FOUND"],
  ] as const)("refuses a second answer (%s) to the question its subagent already took, and wakes the parent", async (_, withCallId, code) => {
    const { state, paused, second } = await crashBetweenChildEndAndParentWake(ASKING, (runtime, waiting) => runtime.answer(waiting.runId, "yes"));
    let recorded = false;
    const options = { ...(withCallId ? { callId: paused.question!.callId } : {}), onRecorded: () => (recorded = true) };
    await expect(second.answer(paused.runId, "no, stop", options)).rejects.toMatchObject({
      code,
      message: expect.stringMatching(new RegExp(`question was already answered: subagent researcher \\(run ${paused.waitingOn!.runId}\\).*the run was resumed and is completed now`)),
    });
    expect(recorded).toBe(false);
    expect(await second.getRun(paused.runId)).toMatchObject({ status: "completed", response: { text: "parent done" } });
    // The refused answer is stored nowhere: the only answer is the one the child took.
    const events = [...(await state.listEvents(paused.runId)), ...(await state.listEvents(paused.waitingOn!.runId))];
    expect(events.filter((event) => event.type === "input.received").map((event) => event.data.answer)).toEqual(["yes"]);
  });

  it("refuses approve on a parent whose subagent's call was decided before the crash, naming the ended child, and wakes the parent", async () => {
    const { paused, second } = await crashBetweenChildEndAndParentWake(APPROVING, (runtime, waiting) => runtime.approve(waiting.runId));
    expect(paused.status).toBe("waiting_approval");
    let recorded = false;
    await expect(second.approve(paused.runId, { onRecorded: () => (recorded = true) })).rejects.toMatchObject({
      code: "AL_ERR_RUN_NOT_RESUMABLE",
      message: expect.stringContaining(`subagent researcher (run ${paused.waitingOn!.runId}) had its call decided already and ended (completed); the run was resumed and is completed now`),
    });
    expect(recorded).toBe(false);
    expect(await second.getRun(paused.runId)).toMatchObject({ status: "completed", response: { text: "parent done" } });
  });

  it("refuses deny with the call id on such a parent the same way", async () => {
    const { paused, second } = await crashBetweenChildEndAndParentWake(APPROVING, (runtime, waiting) => runtime.approve(waiting.runId));
    const callId = paused.pendingApprovals![0]!.callId;
    await expect(second.deny(paused.runId, { callId })).rejects.toMatchObject({
      code: "AL_ERR_APPROVAL_NOT_FOUND",
      message: expect.stringContaining(`has no pending approval ${callId}: subagent researcher (run ${paused.waitingOn!.runId}) had its call decided already`),
    });
    expect((await second.getRun(paused.runId)).status).toBe("completed");
  });

  it("refuses the second of two answers a moment apart (after the child took the first, before the parent woke); the first answer's caller gets the resumed parent", async () => {
    const bundle = await loadRuntimeBundle((await buildAgent(researchAgent(ASKING))).artifactRoot);
    const state = new InMemoryStateAdapter();
    let runtime: OpenEveRuntime | undefined;
    let paused: RunResult | undefined;
    let second: Promise<RunResult> | undefined;
    let secondRecorded = false;
    // The second answer is sent the moment the child's end is written: the child has taken the first, the parent sleeps on.
    const watched = new Proxy(state, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          const result = await value.apply(target, args);
          if (!second && isChildEnd(property, args)) {
            second = runtime!.answer(paused!.runId, "eu-west", { callId: paused!.question!.callId, onRecorded: () => (secondRecorded = true) });
            second.catch(() => undefined);
          }
          return result;
        };
      },
    });
    runtime = new OpenEveRuntime({ ...bundle, state: watched, logger: noopLogger() });
    paused = await runtime.run({ message: "go" });
    let firstRecorded = false;
    const first = await runtime.answer(paused.runId, "us-east", { callId: paused.question!.callId, onRecorded: () => (firstRecorded = true) });
    expect(first).toMatchObject({ status: "completed", response: { text: "parent done" } });
    expect(firstRecorded).toBe(true);
    await expect(second).rejects.toMatchObject({ code: "AL_ERR_APPROVAL_NOT_FOUND", message: expect.stringContaining("the question was already answered") });
    expect(secondRecorded).toBe(false);
    const events = [...(await state.listEvents(paused.runId)), ...(await state.listEvents(paused.waitingOn!.runId))];
    expect(events.filter((event) => event.type === "input.received").map((event) => event.data.answer)).toEqual(["us-east"]);
    expect(events.filter((event) => event.type === "subagent.resumed_parent")).toHaveLength(1);
  });

  it("leaves a parent another replica is waking to it: the answer the child took is not refused for it", async () => {
    const bundle = await loadRuntimeBundle((await buildAgent(researchAgent(ASKING))).artifactRoot);
    const state = new InMemoryStateAdapter();
    let parentRunId = "";
    let otherWaking: Promise<RunResult> | undefined;
    let otherHoldsParent!: () => void;
    const otherHolds = new Promise<void>((resolve) => (otherHoldsParent = resolve));
    let letOtherGoOn!: () => void;
    const otherGoesOn = new Promise<void>((resolve) => (letOtherGoOn = resolve));
    // The other replica takes the parent's lease to wake it and is slow to go on.
    const slow = new Proxy(state, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          if (property === "appendEvents" && args[0] === parentRunId && (args[1] as Array<{ type: string }>).some((event) => event.type === "subagent.resumed_parent")) {
            otherHoldsParent();
            await otherGoesOn;
          }
          return value.apply(target, args);
        };
      },
    });
    const other = new OpenEveRuntime({ ...bundle, state: slow, logger: noopLogger() });
    // This replica asks the other to wake the parent the moment the child's end is written, before it wakes it itself.
    const watched = new Proxy(state, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          const result = await value.apply(target, args);
          if (!otherWaking && isChildEnd(property, args)) {
            otherWaking = other.resume(parentRunId);
            await otherHolds;
          }
          return result;
        };
      },
    });
    const runtime = new OpenEveRuntime({ ...bundle, state: watched, logger: noopLogger() });
    const paused = await runtime.run({ message: "go" });
    parentRunId = paused.runId;
    let recorded = false;
    const answered = await runtime.answer(paused.runId, "us-east", { onRecorded: () => (recorded = true) });
    expect(recorded).toBe(true);
    expect(answered.status).toBe("waiting_input");
    letOtherGoOn();
    expect(await otherWaking).toMatchObject({ status: "completed", response: { text: "parent done" } });
    expect((await state.listEvents(paused.runId)).filter((event) => event.type === "subagent.resumed_parent")).toHaveLength(1);
  });

  it("is woken by the recovery sweep however many runs of its subagent ended since, and however many other runs rest", async () => {
    const { state, paused, second } = await crashBetweenChildEndAndParentWake(ASKING, (runtime, waiting) => runtime.answer(waiting.runId, "yes"));
    // Newer traffic: more ended researcher runs than a sweep reads at once, and more parents resting on a question.
    const others = 51;
    for (let index = 0; index < others; index++) {
      const asked = await second.run({ message: `finished ${index}` });
      expect((await second.answer(asked.runId, "yes")).status).toBe("completed");
    }
    for (let index = 0; index < others; index++) expect((await second.run({ message: `waiting ${index}` })).status).toBe("waiting_input");
    // Each sweep reads a bounded share of the resting runs; a few sweeps reach them all.
    for (let sweep = 0; sweep < 3 && (await state.getRun(paused.runId))?.status !== "completed"; sweep++) await second.recoverRuns();
    await second.onIdle();
    expect(await second.getRun(paused.runId)).toMatchObject({ status: "completed", response: { text: "parent done" } });
  });
});
