import { describe, expect, it } from "vitest";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

const gatedAgent = (hook = "") =>
  agentFolder({
    "agent.ts": MINIMAL_AGENT,
    "tools/publish.ts": toolSource({
      upFront: true,
      extra: `needsApproval: true,`,
      execute: `globalThis.__published = (globalThis.__published ?? 0) + 1; return { published: true };`,
    }),
    ...(hook ? { "hooks/approver.ts": hook } : {}),
  });
const published = () => (globalThis as { __published?: number }).__published ?? 0;

describe("decisions and execution never interleave", () => {
  it("holds an approval that arrives while the run is still pausing until the pause is recorded, then applies it", async () => {
    (globalThis as { __published?: number }).__published = 0;
    const dir = gatedAgent(`import { defineHook } from "@assemblyline-agents/core";
export default defineHook({ events: { "approval.requested"(event) { globalThis.__onRequested?.(event.runId); } } });`);
    const { runtime, types } = await startAgent(dir, [{ toolCalls: [{ name: "publish", input: { value: "x" } }] }, { text: "done" }]);
    const early: Array<Promise<unknown>> = [];
    (globalThis as { __onRequested?: (runId: string) => void }).__onRequested = (runId) => {
      early.push(runtime.approve(runId).then(() => "approved", (error: { code?: string }) => error.code));
    };
    const paused = await runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_approval");
    expect(await Promise.all(early)).toEqual(["approved"]);
    (globalThis as { __onRequested?: unknown }).__onRequested = undefined;
    const recorded = await types(paused.runId);
    // The decision never lands inside the turn that paused: it follows the pause's record.
    expect(recorded.indexOf("approval.granted")).toBeGreaterThan(recorded.indexOf("run.waiting_approval"));
    expect(recorded.at(-1)).toBe("run.completed");
    expect(published()).toBe(1);
  });

  it("reports a decision as recorded before the run goes on, and a refused one never", async () => {
    (globalThis as { __published?: number }).__published = 0;
    const { runtime, types } = await startAgent(gatedAgent(), [{ toolCalls: [{ name: "publish", input: { value: "x" } }] }, { text: "done" }]);
    const paused = await runtime.run({ message: "go" });
    // How many times the approved call had run when the approval was reported recorded.
    const publishedWhenRecorded: number[] = [];
    const done = await runtime.approve(paused.runId, { onRecorded: () => void publishedWhenRecorded.push(published()) });
    expect(done.status).toBe("completed");
    expect(publishedWhenRecorded).toEqual([0]);
    expect(published()).toBe(1);
    expect(await types(paused.runId)).toContain("approval.granted");
    let refusedRecorded = false;
    await expect(runtime.deny(paused.runId, { onRecorded: () => (refusedRecorded = true) })).rejects.toMatchObject({ code: "AL_ERR_RUN_NOT_RESUMABLE" });
    await expect(runtime.answer(paused.runId, "yes", { onRecorded: () => (refusedRecorded = true) })).rejects.toMatchObject({ code: "AL_ERR_RUN_NOT_RESUMABLE" });
    expect(refusedRecorded).toBe(false);
  });

  it("executes an approved call once when approve and resume race", async () => {
    (globalThis as { __published?: number }).__published = 0;
    const { runtime, types } = await startAgent(gatedAgent(), [{ toolCalls: [{ name: "publish", input: { value: "x" } }] }, { text: "done" }]);
    const paused = await runtime.run({ message: "go" });
    const outcomes = await Promise.allSettled([runtime.approve(paused.runId), runtime.resume(paused.runId), runtime.approve(paused.runId)]);
    expect(outcomes.filter((outcome) => outcome.status === "fulfilled" && outcome.value.status === "completed").length).toBeGreaterThanOrEqual(1);
    expect(published()).toBe(1);
    const recorded = await types(paused.runId);
    expect(recorded.filter((type) => type === "approval.granted")).toHaveLength(1);
    expect(recorded.filter((type) => type === "run.completed")).toHaveLength(1);
    expect((await runtime.getRun(paused.runId)).status).toBe("completed");
  });

  it("decides only the call an approval without a call id was sent for: the same approval sent twice never approves the next call", async () => {
    (globalThis as { __published?: number }).__published = 0;
    const publish = (value: string) => ({ toolCalls: [{ name: "publish", input: { value } }] });
    const { runtime, state } = await startAgent(gatedAgent(), [publish("a"), publish("b"), { text: "done" }]);
    const paused = await runtime.run({ message: "go" });
    // A double click: the second approval waits for the first one's drive, which pauses on the next call.
    const twice = await Promise.allSettled([runtime.approve(paused.runId), runtime.approve(paused.runId)]);
    // Whichever is driven first decides the call; the other is refused.
    const [decided, refused] = twice[0].status === "fulfilled" ? twice : [twice[1], twice[0]];
    expect(decided).toMatchObject({ status: "fulfilled", value: { status: "waiting_approval" } });
    expect(refused).toMatchObject({ status: "rejected", reason: { code: "AL_ERR_APPROVAL_NOT_FOUND", message: expect.stringContaining("already decided") } });
    expect(published()).toBe(1);
    const waiting = (await state.listToolCalls(paused.runId)).filter((call) => call.status === "waiting_approval");
    expect(waiting.map((call) => call.input)).toEqual([{ value: "b" }]);
  });

  it("refuses to decide a run paused by another build it has no copy of, without writing anything", async () => {
    const { runtime, state, bundle } = await startAgent(gatedAgent(), [{ toolCalls: [{ name: "publish", input: { value: "x" } }] }, { text: "done" }]);
    const paused = await runtime.run({ message: "go" });
    const { OpenEveRuntime, noopLogger } = await import("@assemblyline-agents/runtime");
    // Without an artifact root the host cannot load the kept build the run belongs to.
    const otherBuild = new OpenEveRuntime({ ...bundle, artifactRoot: undefined, manifest: { ...bundle.manifest, agentRevision: "rev_other" }, state, logger: noopLogger() });
    const before = (await state.getRun(paused.runId))!.lastSeq;
    await expect(otherBuild.approve(paused.runId)).rejects.toThrow(/AL_ERR_CONTINUATION_VERSION/);
    expect((await state.getRun(paused.runId))!.lastSeq).toBe(before);
    expect((await runtime.approve(paused.runId)).status).toBe("completed");
  });
});

describe("a lost lease", () => {
  it("stops this process writing the run once another owner holds its lease", async () => {
    const dir = agentFolder({
      "agent.ts": MINIMAL_AGENT,
      "tools/slow.ts": toolSource({ upFront: true, execute: `await new Promise((resolve) => (globalThis.__releaseSlow = resolve)); return { done: true };` }),
    });
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (fields: Record<string, unknown>) => void warnings.push(String(fields.event)) };
    const { runtime, state, types } = await startAgent(dir, [{ toolCalls: [{ name: "slow", input: { value: "x" } }] }, { text: "done" }], { leaseTtlMs: 150, logger });
    const running = runtime.run({ message: "go" }).then(
      () => "finished",
      (error: { code?: string }) => error.code,
    );
    while (!(globalThis as { __releaseSlow?: () => void }).__releaseSlow) await new Promise((resolve) => setTimeout(resolve, 10));
    const [run] = (await state.listRuns()).runs;
    // Another replica whose clock says the lease expired takes the run over.
    expect(await state.acquireRunLease(run!.id, "other-replica", 60_000, new Date(Date.now() + 3_600_000))).not.toBeNull();
    // The heartbeat notices on its next beat.
    while (!warnings.includes("run.lease_lost")) await new Promise((resolve) => setTimeout(resolve, 20));
    (globalThis as { __releaseSlow?: () => void }).__releaseSlow!();
    expect(await running).toBe("AL_ERR_RUN_LEASE_LOST");
    const recorded = await types(run!.id);
    expect(recorded).not.toContain("tool.completed");
    expect(recorded).not.toContain("run.failed");
    expect((await state.getRun(run!.id))!.lease?.owner).toBe("other-replica");
  });
});
