import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { describe, expect, it, onTestFinished } from "vitest";
import { toolSource } from "./support/agent-folder.js";
import { agentSource, onlyRunOf, pausedOnDuration, pausingRoot, releasedChild, shared, sharedForTest, slowWorkerFiles, spawnTurn, until } from "./support/subagent-pause.js";
import { startBuilt } from "./support/runtime.js";

/** The worker makes a side effect, waits in `slow` (past its parent's limit), then makes another before it ends. */
const WORKER_SCRIPT = {
  turns: [{ toolCalls: [{ name: "effect", input: { value: "one" } }] }, { toolCalls: [{ name: "slow", input: { value: "two" } }] }, { toolCalls: [{ name: "effect", input: { value: "three" } }] }, { text: "child done" }],
};

const rootWithWorker = () => pausingRoot(slowWorkerFiles("subagents/worker"), { turns: [spawnTurn("worker"), { text: "parent done" }], subagents: { worker: WORKER_SCRIPT } });

/** A store that fails the first write of a subagent run's failure, as a process dying right after the parent's would. */
class FailsFirstChildFailure extends InMemoryStateAdapter {
  failed = false;
  override async appendEvents(...args: Parameters<InMemoryStateAdapter["appendEvents"]>): ReturnType<InMemoryStateAdapter["appendEvents"]> {
    const [runId, events] = args;
    if (!this.failed && runId.startsWith("run_sub_") && events.some((event) => event.type === "run.failed")) {
      this.failed = true;
      throw new Error("the store went away");
    }
    return super.appendEvents(...args);
  }
}

/**
 * A root paused on its maxDurationMs with its worker left part-way, then denied on a store that fails the
 * child's failure once: the parent has failed, the child is left `running` for a recovery sweep; `slow` released.
 */
async function deniedWithChildLeft() {
  const { release } = sharedForTest();
  const state = new FailsFirstChildFailure();
  const { runtime } = await startBuilt(rootWithWorker(), { state });
  const paused = await pausedOnDuration(runtime);
  const workerId = await releasedChild(runtime, state);
  expect((await runtime.deny(paused.runId)).status).toBe("failed");
  expect({ failedOnce: state.failed, child: (await onlyRunOf(state, workerId)).status }).toEqual({ failedOnce: true, child: "running" });
  release();
  return { state, runtime, paused, workerId };
}

describe("denying a parent's maxDurationMs pause", () => {
  it("fails the subagent the pause left part-way, naming the denial; a later recovery sweep drives nothing", async () => {
    const { release } = sharedForTest();
    const { runtime, state } = await startBuilt(rootWithWorker());
    const paused = await pausedOnDuration(runtime);
    const workerId = await releasedChild(runtime, state);
    expect({ child: (await onlyRunOf(state, workerId)).status, effects: shared.__effects }).toEqual({ child: "running", effects: 1 });

    const denied = await runtime.deny(paused.runId, { actor: "ops" });
    expect(denied.status).toBe("failed");
    const child = await onlyRunOf(state, workerId);
    expect({ status: child.status, code: child.error?.code, lease: child.lease }).toEqual({ status: "failed", code: "AL_ERR_SUBAGENT_PARENT_ENDED", lease: null });
    expect(child.error?.message).toContain(`when run ${paused.runId} paused on its budget, and that pause was denied`);

    // Were the child still left, the sweep would drive it on past `slow` to its second effect.
    release();
    expect(await runtime.recoverRuns()).toEqual([]);
    expect({ child: (await onlyRunOf(state, workerId)).status, effects: shared.__effects }).toEqual({ child: "failed", effects: 1 });
  });

  it("fails a nested subagent too, each level down", async () => {
    const { release } = sharedForTest();
    const dir = pausingRoot(
      { "subagents/lead/agent.ts": agentSource(`description: "Delegates.", instructions: "Delegate."`), ...slowWorkerFiles("subagents/lead/subagents/worker") },
      { turns: [spawnTurn("lead"), { text: "parent done" }], subagents: { lead: { turns: [spawnTurn("worker"), { text: "lead done" }], subagents: { worker: WORKER_SCRIPT } } } },
    );
    const { runtime, state } = await startBuilt(dir);
    const paused = await pausedOnDuration(runtime);
    const id = runtime.manifest.agent.id;
    await until(async () => (await onlyRunOf(state, `${id}/lead`)).lease === null && (await onlyRunOf(state, `${id}/lead/worker`)).lease === null);

    expect((await runtime.deny(paused.runId)).status).toBe("failed");
    const [lead, worker] = [await onlyRunOf(state, `${id}/lead`), await onlyRunOf(state, `${id}/lead/worker`)];
    expect([lead.status, lead.error?.code, worker.status, worker.error?.code]).toEqual(["failed", "AL_ERR_SUBAGENT_PARENT_ENDED", "failed", "AL_ERR_SUBAGENT_PARENT_ENDED"]);
    expect(worker.error?.message).toContain(`when run ${paused.runId} paused on its budget, and that pause was denied`);

    release();
    expect(await runtime.recoverRuns()).toEqual([]);
    expect(shared.__effects).toBe(1);
  });

  it("fails a child the pause stopped before it started, which no event of the parent names", async () => {
    sharedForTest();
    let childStored!: () => void;
    const storing = new Promise<void>((resolve) => (childStored = resolve));
    /** A store that holds the child's creation until the test lets it through: the pause comes in between. */
    class SlowToCreateChildren extends InMemoryStateAdapter {
      override async createRun(...args: Parameters<InMemoryStateAdapter["createRun"]>): ReturnType<InMemoryStateAdapter["createRun"]> {
        if (args[0].input.parent) await storing;
        return super.createRun(...args);
      }
    }
    const state = new SlowToCreateChildren();
    const { runtime } = await startBuilt(rootWithWorker(), { state });
    const paused = await pausedOnDuration(runtime);
    childStored();
    const workerId = `${runtime.manifest.agent.id}/worker`;
    await until(async () => (await state.listRuns({ agentId: workerId })).runs[0]?.lease === null);
    expect((await onlyRunOf(state, workerId)).status).toBe("queued");
    expect((await state.listEvents(paused.runId)).map((event) => event.type)).not.toContain("subagent.started");

    expect((await runtime.deny(paused.runId)).status).toBe("failed");
    const child = await onlyRunOf(state, workerId);
    expect({ status: child.status, code: child.error?.code }).toEqual({ status: "failed", code: "AL_ERR_SUBAGENT_PARENT_ENDED" });
    expect(await runtime.recoverRuns()).toEqual([]);
    expect(shared.__effects).toBe(0);
  });

  it("leaves the child to the recovery sweep when the denial stops between the parent's failure and the child's, and the sweep fails it instead of driving it", async () => {
    const { state, runtime, paused, workerId } = await deniedWithChildLeft();
    const recovered = await runtime.recoverRuns();
    const child = await onlyRunOf(state, workerId);
    expect(recovered.map((run) => [run.runId, run.status])).toEqual([[child.id, "failed"]]);
    expect({ status: child.status, code: child.error?.code, lease: child.lease, effects: shared.__effects }).toEqual({ status: "failed", code: "AL_ERR_SUBAGENT_PARENT_ENDED", lease: null, effects: 1 });
    expect(child.error?.message).toContain(`its parent run ${paused.runId} failed on its denied budget pause since`);
    expect(await runtime.recoverRuns()).toEqual([]);
  });

  it("has recoverSubagentRuns (a host's sweep that resumes runs itself) fail such a child too, once its record has settled", async () => {
    const { state, runtime, paused, workerId } = await deniedWithChildLeft();
    // Written a moment ago: a drive may be about to take it.
    expect(await runtime.recoverSubagentRuns({ settledForMs: 60_000 })).toEqual([]);
    expect((await onlyRunOf(state, workerId)).status).toBe("running");
    const left = await onlyRunOf(state, workerId);
    expect(await runtime.recoverSubagentRuns()).toEqual([left.id]);
    const child = await onlyRunOf(state, workerId);
    expect({ status: child.status, code: child.error?.code, lease: child.lease, effects: shared.__effects }).toEqual({ status: "failed", code: "AL_ERR_SUBAGENT_PARENT_ENDED", lease: null, effects: 1 });
    expect(child.error?.message).toContain(`its parent run ${paused.runId} failed on its denied budget pause since`);
    expect(await runtime.recoverSubagentRuns()).toEqual([]);
  });

  it("fails a subagent that waits for an approval, so approving it afterwards does nothing", async () => {
    const { release } = sharedForTest();
    const GATED = toolSource({ upFront: true, extra: `needsApproval: approvalRequired("Check first."),`, execute: `globalThis.__effects = (globalThis.__effects ?? 0) + 1; return { done: input.value };` });
    const dir = pausingRoot(
      { ...slowWorkerFiles("subagents/worker"), "subagents/worker/tools/gated.ts": GATED },
      {
        turns: [spawnTurn("worker"), { text: "parent done" }],
        subagents: { worker: { turns: [{ toolCalls: [{ name: "effect", input: { value: "one" } }] }, { toolCalls: [{ name: "slow", input: { value: "two" } }] }, { toolCalls: [{ name: "gated", input: { value: "three" } }] }, { text: "child done" }] } },
      },
    );
    const { runtime, state } = await startBuilt(dir);
    const paused = await pausedOnDuration(runtime);
    const workerId = await releasedChild(runtime, state);
    // A recovery sweep drives the left child on while its parent waits, until the child waits for an approval of its own.
    release();
    expect((await runtime.recoverRuns()).map((run) => run.status)).toEqual(["waiting_approval"]);

    expect((await runtime.deny(paused.runId)).status).toBe("failed");
    const child = await onlyRunOf(state, workerId);
    expect({ status: child.status, code: child.error?.code, lease: child.lease }).toEqual({ status: "failed", code: "AL_ERR_SUBAGENT_PARENT_ENDED", lease: null });
    await expect(runtime.approve(child.id)).rejects.toMatchObject({ code: "AL_ERR_RUN_NOT_RESUMABLE" });
    expect({ child: (await onlyRunOf(state, workerId)).status, effects: shared.__effects }).toEqual({ child: "failed", effects: 1 });
  });

  it("fails a nested subagent no drive holds below a child another process holds", async () => {
    sharedForTest();
    const dir = pausingRoot(
      { "subagents/lead/agent.ts": agentSource(`description: "Delegates.", instructions: "Delegate."`), ...slowWorkerFiles("subagents/lead/subagents/worker") },
      { turns: [spawnTurn("lead"), { text: "parent done" }], subagents: { lead: { turns: [spawnTurn("worker"), { text: "lead done" }], subagents: { worker: WORKER_SCRIPT } } } },
    );
    const { runtime, state } = await startBuilt(dir);
    const paused = await pausedOnDuration(runtime);
    const id = runtime.manifest.agent.id;
    await until(async () => (await onlyRunOf(state, `${id}/lead`)).lease === null && (await onlyRunOf(state, `${id}/lead/worker`)).lease === null);
    const leadId = (await onlyRunOf(state, `${id}/lead`)).id;
    const lease = await state.acquireRunLease(leadId, "other-replica", 60_000);
    onTestFinished(() => state.releaseRunLease(leadId, "other-replica", lease?.token));

    expect((await runtime.deny(paused.runId)).status).toBe("failed");
    const [lead, worker] = [await onlyRunOf(state, `${id}/lead`), await onlyRunOf(state, `${id}/lead/worker`)];
    expect([lead.status, lead.lease?.owner, worker.status, worker.error?.code]).toEqual(["running", "other-replica", "failed", "AL_ERR_SUBAGENT_PARENT_ENDED"]);
  });

  it("has the recovery sweep fail a nested subagent whose parent still runs but whose grandparent's pause was denied", async () => {
    const { release } = sharedForTest();
    /** A store that refuses subagent runs' failures while `refusing`, as a process dying after the root's failure would leave them. */
    class RefusesChildFailures extends InMemoryStateAdapter {
      refusing = true;
      override async appendEvents(...args: Parameters<InMemoryStateAdapter["appendEvents"]>): ReturnType<InMemoryStateAdapter["appendEvents"]> {
        const [runId, events] = args;
        if (this.refusing && runId.startsWith("run_sub_") && events.some((event) => event.type === "run.failed")) throw new Error("the store went away");
        return super.appendEvents(...args);
      }
    }
    const dir = pausingRoot(
      { "subagents/lead/agent.ts": agentSource(`description: "Delegates.", instructions: "Delegate."`), ...slowWorkerFiles("subagents/lead/subagents/worker") },
      { turns: [spawnTurn("lead"), { text: "parent done" }], subagents: { lead: { turns: [spawnTurn("worker"), { text: "lead done" }], subagents: { worker: WORKER_SCRIPT } } } },
    );
    const state = new RefusesChildFailures();
    const { runtime } = await startBuilt(dir, { state });
    const paused = await pausedOnDuration(runtime);
    const id = runtime.manifest.agent.id;
    await until(async () => (await onlyRunOf(state, `${id}/lead`)).lease === null && (await onlyRunOf(state, `${id}/lead/worker`)).lease === null);
    // The lead is held by another process throughout, so the sweep claims the worker while its parent still runs.
    const leadId = (await onlyRunOf(state, `${id}/lead`)).id;
    const lease = await state.acquireRunLease(leadId, "other-replica", 60_000);
    onTestFinished(() => state.releaseRunLease(leadId, "other-replica", lease?.token));
    expect((await runtime.deny(paused.runId)).status).toBe("failed");
    expect([(await onlyRunOf(state, `${id}/lead`)).status, (await onlyRunOf(state, `${id}/lead/worker`)).status]).toEqual(["running", "running"]);

    state.refusing = false;
    release();
    const recovered = await runtime.recoverRuns();
    const worker = await onlyRunOf(state, `${id}/lead/worker`);
    expect(recovered.map((run) => [run.runId, run.status])).toEqual([[worker.id, "failed"]]);
    expect({ status: worker.status, code: worker.error?.code, effects: shared.__effects }).toEqual({ status: "failed", code: "AL_ERR_SUBAGENT_PARENT_ENDED", effects: 1 });
    expect(worker.error?.message).toContain(`run ${paused.runId}, above it, failed on its denied budget pause since`);
  });

  describe("with a subagent that works in its parent's sandbox (workspace: \"shared\")", () => {
    const sharedWorkspaceRoot = () =>
      pausingRoot(
        {
          "subagents/lead/agent.ts": agentSource(`description: "Delegates.", instructions: "Delegate.", workspace: "isolated"`),
          ...slowWorkerFiles("subagents/lead/subagents/worker"),
          "subagents/lead/subagents/worker/agent.ts": agentSource(`description: "Works slowly.", instructions: "Work.", workspace: "shared"`),
        },
        { turns: [spawnTurn("lead"), { text: "parent done" }], subagents: { lead: { turns: [spawnTurn("worker"), { text: "lead done" }], subagents: { worker: WORKER_SCRIPT } } } },
      );
    /** A sandbox adapter that only records what is released: these runs' tools never acquire one. */
    const recordingSandbox = (released: string[]) => ({
      name: "recording",
      acquire: async () => {
        throw new Error("no sandbox is acquired in this test");
      },
      release: async (key: string) => {
        released.push(key);
      },
    });

    async function pausedWithLeftLeadAndWorker() {
      const released: string[] = [];
      const { runtime, state } = await startBuilt(sharedWorkspaceRoot(), { sandbox: recordingSandbox(released) });
      const paused = await pausedOnDuration(runtime);
      const id = runtime.manifest.agent.id;
      await until(async () => (await onlyRunOf(state, `${id}/lead`)).lease === null && (await onlyRunOf(state, `${id}/lead/worker`)).lease === null);
      const [lead, worker] = [await onlyRunOf(state, `${id}/lead`), await onlyRunOf(state, `${id}/lead/worker`)];
      expect(worker.input.parent?.sandboxRunId).toBe(lead.id);
      return { runtime, state, paused, lead, worker, released };
    }

    it("keeps the failed child's sandbox while the shared grandchild working in it is driven by another process", async () => {
      sharedForTest();
      const { runtime, state, paused, lead, worker, released } = await pausedWithLeftLeadAndWorker();
      const lease = await state.acquireRunLease(worker.id, "other-replica", 60_000);
      onTestFinished(() => state.releaseRunLease(worker.id, "other-replica", lease?.token));

      expect((await runtime.deny(paused.runId)).status).toBe("failed");
      expect([(await state.getRun(lead.id))?.status, (await state.getRun(worker.id))?.status]).toEqual(["failed", "running"]);
      expect(released).not.toContain(lead.id);
    });

    it("releases the failed child's sandbox once the shared grandchild is failed too", async () => {
      sharedForTest();
      const { runtime, state, paused, lead, worker, released } = await pausedWithLeftLeadAndWorker();

      expect((await runtime.deny(paused.runId)).status).toBe("failed");
      expect([(await state.getRun(lead.id))?.status, (await state.getRun(worker.id))?.status]).toEqual(["failed", "failed"]);
      expect(released).toEqual([lead.id]);
    });
  });

  it("leaves a child another process is driving to that process", async () => {
    sharedForTest();
    const { runtime, state } = await startBuilt(rootWithWorker());
    const paused = await pausedOnDuration(runtime);
    const workerId = await releasedChild(runtime, state);
    // Another replica's recovery sweep holds the child now.
    const childId = (await onlyRunOf(state, workerId)).id;
    const lease = await state.acquireRunLease(childId, "other-replica", 60_000);
    onTestFinished(() => state.releaseRunLease(childId, "other-replica", lease?.token));

    expect((await runtime.deny(paused.runId)).status).toBe("failed");
    const child = await onlyRunOf(state, workerId);
    expect({ status: child.status, holder: child.lease?.owner }).toEqual({ status: "running", holder: "other-replica" });
  });

  it("leaves a child that has ended since completed", async () => {
    const { release } = sharedForTest();
    const { runtime, state } = await startBuilt(rootWithWorker());
    const paused = await pausedOnDuration(runtime);
    const workerId = await releasedChild(runtime, state);
    // A recovery sweep drives the left child to its end while its parent still waits for the decision.
    release();
    expect((await runtime.recoverRuns()).map((run) => run.status)).toEqual(["completed"]);

    expect((await runtime.deny(paused.runId)).status).toBe("failed");
    const child = await onlyRunOf(state, workerId);
    expect({ status: child.status, output: child.output, error: child.error, effects: shared.__effects }).toEqual({ status: "completed", output: { text: "child done" }, error: null, effects: 2 });
  });
});
