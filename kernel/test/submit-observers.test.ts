import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { agentFolder, MINIMAL_AGENT } from "./support/agent-folder.js";
import { startAgent } from "./support/runtime.js";

describe("runtime.submit() and observers", () => {
  it("tells observers of a queued run at once by default", async () => {
    const { runtime, observed, state } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }]);
    const { runId } = await runtime.submit({ message: "hello" });
    expect(observed.map((event) => [event.runId, event.type])).toEqual([[runId, "run.created"]]);
    expect((await state.getRun(runId))!.observedSeq).toBe(1);
  });

  it("with observe: false leaves run.created to the run's first drive, which tells observers of every event once, in order", async () => {
    const { runtime, observed, state, events } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }]);
    const { runId, created } = await runtime.submit({ message: "hello" }, { observe: false });
    expect(created).toBe(true);
    expect(observed).toEqual([]);
    expect((await state.getRun(runId))!).toMatchObject({ status: "queued", observedSeq: 0 });
    expect(await runtime.start(runId)).toMatchObject({ status: "completed", response: { text: "hi" } });
    const stored = await events(runId);
    expect(observed.map((event) => event.seq)).toEqual(stored.map((event) => event.seq));
    expect(observed[0]!.type).toBe("run.created");
    expect((await state.getRun(runId))!.observedSeq).toBe(stored.at(-1)!.seq);
  });
});

describe("runtime.submitAndStart()", () => {
  it("stores the run leased to this process in one write and drives it at once, telling observers of every event once", async () => {
    const state = new CountingState();
    const { runtime, observed, events } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }], { state });
    const started = await runtime.submitAndStart({ message: "hello", idempotencyKey: "k-1" });
    expect(started.created).toBe(true);
    if (!started.created) return;
    // Stored before the drive went anywhere: leased to this process.
    expect(state.createRunOptions).toEqual([{ lease: { owner: runtime.ownerId, ttlMs: 30_000 } }]);
    expect(await started.result).toMatchObject({ runId: started.runId, status: "completed", response: { text: "hi" } });
    // No second write for the lease, no read back of the run or its events.
    expect(state.calls).toEqual({ acquireRunLease: 0, getRun: 0, listEvents: 0 });
    const stored = await events(started.runId);
    expect(observed.map((event) => event.seq)).toEqual(stored.map((event) => event.seq));
    expect((await state.getRun(started.runId))!).toMatchObject({ status: "completed", lease: null });

    // The same key again is a duplicate: not driven, nothing stored.
    const again = await runtime.submitAndStart({ message: "hello", idempotencyKey: "k-1" });
    expect(again).toEqual({ runId: started.runId, created: false });
    expect((await state.listRuns({})).runs).toHaveLength(1);
  });

  it("refuses at capacity before storing anything", async () => {
    const state = new CountingState();
    const { runtime } = await startAgent(agentFolder({ "agent.ts": MINIMAL_AGENT }), [{ text: "hi" }, { text: "hi" }], { state, maxConcurrentRuns: 1, maxQueuedRuns: 0 });
    const first = await runtime.submitAndStart({ message: "one" });
    await expect(runtime.submitAndStart({ message: "two" })).rejects.toMatchObject({ code: "AL_ERR_RUN_CAPACITY" });
    expect((await state.listRuns({})).runs).toHaveLength(1);
    if (first.created) await first.result;
  });
});

/** An in-memory state that counts the reads and lease writes a drive could make, and keeps createRun's options. */
class CountingState extends InMemoryStateAdapter {
  calls = { acquireRunLease: 0, getRun: 0, listEvents: 0 };
  createRunOptions: unknown[] = [];
  override createRun(...args: Parameters<InMemoryStateAdapter["createRun"]>) {
    this.createRunOptions.push(args[1]);
    return super.createRun(...args);
  }
  override acquireRunLease(...args: Parameters<InMemoryStateAdapter["acquireRunLease"]>) {
    this.calls.acquireRunLease += 1;
    return super.acquireRunLease(...args);
  }
  override getRun(...args: Parameters<InMemoryStateAdapter["getRun"]>) {
    this.calls.getRun += 1;
    return super.getRun(...args);
  }
  override listEvents(...args: Parameters<InMemoryStateAdapter["listEvents"]>) {
    this.calls.listEvents += 1;
    return super.listEvents(...args);
  }
}
