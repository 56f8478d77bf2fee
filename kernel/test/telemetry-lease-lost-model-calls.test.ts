import { afterEach, describe, expect, it } from "vitest";
import type { AgentHarness, TelemetrySpan } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness } from "@assemblyline-agents/runtime";
import { MINIMAL_AGENT, agentFolder } from "./support/agent-folder.js";

/*
 * Replica A loses a run's lease to replica B during a model call. The call was
 * made (and billed) by A, but A never records its result: its chat span ends
 * with the error, and B makes the call again under its own span.
 */

const runtimes: OpenEveRuntime[] = [];
let open: () => void = () => undefined;
afterEach(async () => {
  open();
  for (const runtime of runtimes.splice(0)) await runtime.close().catch(() => undefined);
});

/** The scripted model, reporting usage, whose calls wait for `gate` (when set) after they start. */
function gatedModel(calls: { started: number; gate?: Promise<void> }): AgentHarness {
  const inner = scriptedHarness({ turns: [{ text: "done" }] });
  return {
    name: inner.name,
    runTurn: (input, ctx) =>
      inner.runTurn(input, {
        ...ctx,
        modelCall: (key, fn, options) => ctx.modelCall(key, async () => (calls.started++, await calls.gate, fn()), options),
        emit: (type, data) => ctx.emit(type, type === "model.response" ? { ...data, provider: "openai", model: "gpt-test", usage: { inputTokens: 100, outputTokens: 10 } } : data),
      }),
  };
}

async function replicas(leaseTtlMsOfA: number) {
  const dir = agentFolder({ "agent.ts": MINIMAL_AGENT });
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const state = new InMemoryStateAdapter();
  const calls = { started: 0, gate: new Promise<void>((resolve) => (open = resolve)) as Promise<void> | undefined };
  const replica = (ownerId: string) => {
    const spans: TelemetrySpan[] = [];
    const runtime = new OpenEveRuntime({ ...bundle, state, ownerId, leaseTtlMs: ownerId === "replica-a" ? leaseTtlMsOfA : 30_000, agentHarness: gatedModel(calls), logger: noopLogger(), telemetry: { export: (span) => void spans.push(span) } });
    runtimes.push(runtime);
    return { runtime, spans };
  };
  /** A starts a run; B takes it over while A's model call waits. */
  const loseOnA = async (a: OpenEveRuntime) => {
    const outcome = a.run({ message: "go" }).then((result) => result, (error: unknown) => error);
    await expect.poll(() => calls.started).toBe(1);
    // Still as created: its start is held for its first write, with the call's result.
    const run = (await state.listRuns({})).runs.find((candidate) => candidate.lease?.owner === "replica-a")!;
    expect(await state.acquireRunLease(run.id, "replica-b", 60_000, new Date(Date.now() + 60_000))).toMatchObject({ owner: "replica-b" });
    return { runId: run.id, outcome };
  };
  return { replica, loseOnA, calls };
}

const chats = (spans: TelemetrySpan[]) => spans.filter((span) => span.attributes["gen_ai.operation.name"] === "chat");

describe("a model call whose lease is lost while it runs", () => {
  it("ends its chat span at once with AL_ERR_RUN_LEASE_LOST, and the late result adds none", async () => {
    const { replica, loseOnA, calls } = await replicas(300);
    const a = replica("replica-a");
    const { runId, outcome } = await loseOnA(a.runtime);
    // A's heartbeat (every 100 ms) finds B's lease while the call still waits.
    await expect.poll(() => chats(a.spans).length, { timeout: 3_000 }).toBe(1);
    const [abandoned] = chats(a.spans);
    expect(abandoned).toMatchObject({ name: "chat model", kind: "client", status: { code: "error", message: expect.stringContaining("to another replica") } });
    expect(abandoned!.attributes).toMatchObject({ "error.type": "AL_ERR_RUN_LEASE_LOST", "assembly_line.run.id": runId, "gen_ai.request.model": "model" });
    expect(abandoned!.endTimeMs).toBeGreaterThanOrEqual(abandoned!.startTimeMs);

    open();
    expect(await outcome).toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });
    expect(chats(a.spans)).toHaveLength(1);

    // B makes the call again, under a span of its own in the same trace.
    calls.gate = undefined;
    const b = replica("replica-b");
    expect((await b.runtime.resume(runId)).status).toBe("completed");
    const [again] = chats(b.spans);
    expect(again).toMatchObject({ status: { code: "ok" }, traceId: abandoned!.traceId, parentSpanId: abandoned!.parentSpanId });
    expect(again!.spanId).not.toBe(abandoned!.spanId);
  });

  it("keeps the usage of a call that returned before the lost lease was found, whose result was never written", async () => {
    // A long lease: its heartbeat does not look before the run's next write finds B's lease.
    const { replica, loseOnA } = await replicas(30_000);
    const a = replica("replica-a");
    const { outcome } = await loseOnA(a.runtime);
    open();
    expect(await outcome).toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });
    const [abandoned] = chats(a.spans);
    expect(chats(a.spans)).toHaveLength(1);
    expect(abandoned).toMatchObject({ status: { code: "error" } });
    expect(abandoned!.attributes).toMatchObject({ "error.type": "AL_ERR_RUN_LEASE_LOST", "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10, "gen_ai.response.model": "gpt-test" });
  });
});
