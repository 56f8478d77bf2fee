import { afterEach, describe, expect, it } from "vitest";
import type { AgentHarness, TelemetrySpan } from "@assemblyline-agents/core";
import { InMemoryStateAdapter, OpenEveRuntime, buildAgent, loadRuntimeBundle, noopLogger, scriptedHarness, type ScriptedTurn } from "@assemblyline-agents/runtime";
import type { Tracer } from "../src/telemetry/tracer.js";
import { MINIMAL_AGENT, agentFolder, toolSource } from "./support/agent-folder.js";

/*
 * Two replicas on one state store: replica A loses a run's lease while a tool
 * runs (replica B takes the run over), B continues it. Each replica has its own
 * sink, as each process exports its own spans.
 */

const gate = globalThis as unknown as { __slowStarted?: number; __slowGate?: Promise<void> };
const runtimes: OpenEveRuntime[] = [];
/** Opens the slow tool's gate; also after a failed assertion, so closing the runtimes does not wait on it. */
let open: () => void = () => undefined;
afterEach(async () => {
  open();
  for (const runtime of runtimes.splice(0)) await runtime.close().catch(() => undefined);
  delete gate.__slowStarted;
  delete gate.__slowGate;
});

/** The runtime's tracer: what this process keeps per run between events. */
const tracerOf = (runtime: OpenEveRuntime) => (runtime as unknown as { tracer: Tracer }).tracer;

/** Adds the usage a real engine reports to each model.response the scripted engine records. */
function withUsage(inner: AgentHarness): AgentHarness {
  return {
    name: inner.name,
    runTurn: (input, ctx) =>
      inner.runTurn(input, { ...ctx, emit: (type, data) => ctx.emit(type, type === "model.response" ? { ...data, provider: "openai", usage: { inputTokens: 100, outputTokens: 10 } } : data) }),
  };
}

const slowTurns: ScriptedTurn[] = [{ toolCalls: [{ name: "slow", input: { value: "a" }, id: "call_slow" }] }, { text: "done" }];

async function replicas(turns: ScriptedTurn[]) {
  const dir = agentFolder({
    "agent.ts": MINIMAL_AGENT,
    // Ignores its abort signal: it returns when the test opens the gate, whoever holds the run by then.
    "tools/slow.ts": toolSource({ upFront: true, execute: "globalThis.__slowStarted = (globalThis.__slowStarted ?? 0) + 1; await globalThis.__slowGate; return { echoed: input.value };" }),
    "tools/publish.ts": toolSource({ upFront: true, extra: 'needsApproval: approvalRequired("Publishing is externally visible."),' }),
  });
  const bundle = await loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  const state = new InMemoryStateAdapter();
  const replica = (ownerId: string) => {
    const spans: TelemetrySpan[] = [];
    // A short lease on A: its heartbeat (every 100 ms) finds the takeover soon.
    const runtime = new OpenEveRuntime({ ...bundle, state, ownerId, leaseTtlMs: ownerId === "replica-a" ? 300 : 30_000, agentHarness: withUsage(scriptedHarness({ turns })), logger: noopLogger(), telemetry: { export: (span) => void spans.push(span) } });
    runtimes.push(runtime);
    return { runtime, spans };
  };
  /** Start a run on A and let B take it over while the slow tool runs; resolves with A's drive outcome still pending. */
  const loseOnA = async (a: OpenEveRuntime) => {
    const before = gate.__slowStarted ?? 0;
    const outcome = a.run({ message: "go" }).then(
      (result) => result,
      (error: unknown) => error,
    );
    await expect.poll(() => gate.__slowStarted ?? 0).toBe(before + 1);
    const running = (await state.listRuns({ status: ["running"] })).runs;
    const run = running.find((candidate) => candidate.lease?.owner === "replica-a")!;
    // B takes the run as if A's lease had expired (its clock a minute on).
    expect(await state.acquireRunLease(run.id, "replica-b", 60_000, new Date(Date.now() + 60_000))).toMatchObject({ owner: "replica-b" });
    return { runId: run.id, outcome };
  };
  return { replica, loseOnA };
}

const named = (spans: TelemetrySpan[], name: string) => spans.filter((span) => span.name === name);

describe("a replica that loses a run's lease", () => {
  it("ends the tool call it left open with AL_ERR_RUN_LEASE_LOST at once, exports nothing of the run after, and keeps nothing of it", async () => {
    gate.__slowGate = new Promise<void>((resolve) => (open = resolve));
    const { replica, loseOnA } = await replicas(slowTurns);
    const a = replica("replica-a");
    const { runId, outcome } = await loseOnA(a.runtime);

    // The tool is still running on A, ignoring its abort: its span ends anyway, with the error.
    await expect.poll(() => named(a.spans, "execute_tool slow").length, { timeout: 3_000 }).toBe(1);
    const [abandoned] = named(a.spans, "execute_tool slow");
    expect(abandoned).toMatchObject({ status: { code: "error", message: expect.stringContaining("to another replica") } });
    expect(abandoned!.attributes).toMatchObject({ "error.type": "AL_ERR_RUN_LEASE_LOST", "gen_ai.tool.call.id": "call_slow", "assembly_line.run.id": runId });
    expect(abandoned!.endTimeMs).toBeGreaterThanOrEqual(abandoned!.startTimeMs);
    expect(tracerOf(a.runtime).runsKnown).toBe(0);

    open();
    expect(await outcome).toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });
    // The tool's late result is A's no longer: no span of it, and no root span of a run A no longer drives.
    expect(a.spans.map((span) => span.name)).toEqual(["chat model", "step harness:model:0", "execute_tool slow"]);
    expect(tracerOf(a.runtime).runsKnown).toBe(0);

    // B continues the run, runs the call again, and exports the call's own span.
    const b = replica("replica-b");
    expect((await b.runtime.resume(runId)).status).toBe("completed");
    const [completed] = named(b.spans, "execute_tool slow");
    expect(completed).toMatchObject({ status: { code: "ok" }, traceId: abandoned!.traceId, parentSpanId: abandoned!.parentSpanId });
    expect(completed!.spanId).not.toBe(abandoned!.spanId);
    expect(named(b.spans, `invoke_agent ${b.runtime.manifest.agent.name}`)).toHaveLength(1);
  });

  it("ends only the calls still open: a question answered before the loss ended with its answer, not with the error", async () => {
    gate.__slowGate = new Promise<void>((resolve) => (open = resolve));
    const turns: ScriptedTurn[] = [
      { toolCalls: [{ name: "ask_question", input: { question: "Which value?" }, id: "call_ask" }] },
      { toolCalls: [{ name: "slow", input: { value: "a" }, id: "call_slow" }] },
      { text: "done" },
    ];
    const { replica } = await replicas(turns);
    const a = replica("replica-a");
    const paused = await a.runtime.run({ message: "go" });
    expect(paused.status).toBe("waiting_input");
    // A receives the answer and drives on into the slow tool; B takes the run over while it runs.
    const outcome = a.runtime.answer(paused.runId, "a").then(
      (result) => result,
      (error: unknown) => error,
    );
    await expect.poll(() => gate.__slowStarted ?? 0).toBe(1);
    expect(await a.runtime.state.runs.acquireRunLease(paused.runId, "replica-b", 60_000, new Date(Date.now() + 60_000))).toMatchObject({ owner: "replica-b" });
    await expect.poll(() => named(a.spans, "execute_tool slow").length, { timeout: 3_000 }).toBe(1);
    open();
    expect(await outcome).toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });

    const lost = a.spans.filter((span) => span.attributes["assembly_line.tool.outcome"] === "lease_lost");
    expect(lost.map((span) => span.attributes["gen_ai.tool.call.id"])).toEqual(["call_slow"]);
    expect(named(a.spans, "execute_tool ask_question").map((span) => [span.attributes["assembly_line.tool.outcome"], span.status.code])).toEqual([["completed", "ok"]]);
  });

  it("keeps nothing per lost run, however many it loses", async () => {
    const { replica, loseOnA } = await replicas([{ toolCalls: [{ name: "slow", input: { value: "a" } }] }, { toolCalls: [{ name: "slow", input: { value: "b" } }] }, { text: "done" }]);
    const a = replica("replica-a");
    for (let lost = 1; lost <= 3; lost += 1) {
      gate.__slowGate = new Promise<void>((resolve) => (open = resolve));
      const { outcome } = await loseOnA(a.runtime);
      open();
      expect(await outcome).toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });
      expect(tracerOf(a.runtime).runsKnown).toBe(0);
    }
    expect(a.spans.filter((span) => span.attributes["error.type"] === "AL_ERR_RUN_LEASE_LOST")).toHaveLength(3);
  });

  it("traces a run that comes back to it from the run's journal, not from what it knew before losing it", async () => {
    gate.__slowGate = new Promise<void>((resolve) => (open = resolve));
    const turns: ScriptedTurn[] = [
      { toolCalls: [{ name: "slow", input: { value: "a" }, id: "call_slow" }] },
      { toolCalls: [{ name: "publish", input: { value: "p" }, id: "call_publish" }] },
      { text: "published" },
    ];
    const { replica, loseOnA } = await replicas(turns);
    const a = replica("replica-a");
    const { runId, outcome } = await loseOnA(a.runtime);
    open();
    expect(await outcome).toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });

    // B runs the second model call and pauses on publish's approval; the approval reaches A.
    const b = replica("replica-b");
    expect((await b.runtime.resume(runId)).status).toBe("waiting_approval");
    expect((await a.runtime.approve(runId)).status).toBe("completed");

    const root = named(a.spans, `invoke_agent ${a.runtime.manifest.agent.name}`)[0]!;
    // Three model calls, one of them B's.
    expect(root.attributes).toMatchObject({ "gen_ai.usage.input_tokens": 300, "gen_ai.usage.output_tokens": 30 });
    const publish = named(a.spans, "execute_tool publish")[0]!;
    expect(publish.attributes["assembly_line.tool.approval"]).toBe("granted");
    // It began when B recorded the call, before the pause, not when A last saw the run.
    const called = (await a.runtime.listEvents(runId)).find((event) => event.type === "tool.called" && event.data.callId === "call_publish")!;
    expect(publish.startTimeMs).toBe(Date.parse(called.createdAt));
  });
});
