import { describeStateConformance } from "@assemblyline-agents/core/testkit";
import { isStateAdapter, type JsonValue, type ToolCallRecord } from "@assemblyline-agents/core";
import { describe, expect, it } from "vitest";
import { InMemoryStateAdapter } from "../dist/state/in-memory-state.js";

describeStateConformance("InMemoryStateAdapter", () => ({ state: new InMemoryStateAdapter() }), {
  facets: ["runs", "conversations", "schedules", "files", "usage", "sandboxSessions", "memory", "settings", "skills"],
});

// A StateStores bundle claiming two facets: the helper runs exactly those kits.
describeStateConformance("InMemoryStateAdapter as a StateStores bundle", () => {
  const state = new InMemoryStateAdapter();
  return { state: { runs: state, memory: state } };
});

describe("InMemoryStateAdapter", () => {
  it("implements the whole StateAdapter", () => {
    expect(isStateAdapter(new InMemoryStateAdapter())).toBe(true);
  });

  it("keeps the state of separate instances apart", async () => {
    const a = new InMemoryStateAdapter();
    const b = new InMemoryStateAdapter();
    await a.writeMemory("x", "1");
    expect(await b.readMemory("x")).toBeUndefined();
  });
});

describe("InMemoryStateAdapter rows kept as JSON", () => {
  const newRun = (id: string) => ({ id, agentId: "agent", agentRevision: "rev-1", modelSpec: "scripted/test", input: { message: "hi", metadata: {} } });
  const call = (runId: string, input: unknown) =>
    ({
      runId, callId: "c1", toolName: "echo", input, inputDigest: "d", status: "requested", output: null, modelOutput: null,
      error: null, approvalId: null, question: null, createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z",
    }) as ToolCallRecord;
  const asJson = (value: unknown) => value as JsonValue;

  it("reads events, tool calls and steps back as JSON gives them, as the durable stores do", async () => {
    const state = new InMemoryStateAdapter();
    const { run } = await state.createRun(newRun("run-json"));
    const at = new Date(Date.UTC(2026, 0, 2));
    await state.appendEvents(run.id, [{ type: "test.write", data: { at: asJson(at), gone: asJson(undefined), kept: [1, { n: 2 }] } }], {
      toolCall: call(run.id, { at }),
      step: { runId: run.id, key: "s1", result: asJson({ at, gone: undefined }), metadata: {}, createdAt: "2026-01-01T00:00:00.000Z" },
    });

    const [created, written] = await state.listEvents(run.id);
    expect(created).toMatchObject({ id: `${run.id}:1`, runId: run.id, seq: 1, type: "run.created", data: { input: { message: "hi" } } });
    expect(written).toEqual({
      id: `${run.id}:2`, runId: run.id, seq: 2, type: "test.write",
      data: { at: "2026-01-02T00:00:00.000Z", kept: [1, { n: 2 }] }, createdAt: written!.createdAt,
    });
    expect(written!.data).not.toHaveProperty("gone");
    expect((await state.getToolCall(run.id, "c1"))?.input).toEqual({ at: "2026-01-02T00:00:00.000Z" });
    expect((await state.getStep(run.id, "s1"))?.result).toEqual({ at: "2026-01-02T00:00:00.000Z" });
    expect(await state.listEvents(run.id, { afterSeq: 1, limit: 5 })).toEqual([written]);
  });

  it("refuses a value JSON cannot hold with AL_ERR_STATE_INPUT_INVALID and writes nothing", async () => {
    const state = new InMemoryStateAdapter();
    const { run } = await state.createRun(newRun("run-bigint"));
    const refusals = [
      state.appendEvents(run.id, [{ type: "test.write", data: { n: asJson(1n) } }]),
      state.appendEvents(run.id, [{ type: "test.write" }], { toolCall: call(run.id, { n: 1n }) }),
      state.appendEvents(run.id, [{ type: "test.write" }], { step: { runId: run.id, key: "s1", result: asJson({ n: 1n }), metadata: {}, createdAt: "2026-01-01T00:00:00.000Z" } }),
    ];
    for (const refusal of refusals) await expect(refusal).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID" });

    expect(await state.listEvents(run.id)).toHaveLength(1);
    expect(await state.getRun(run.id)).toMatchObject({ lastSeq: 1 });
    expect(await state.listToolCalls(run.id)).toEqual([]);
    expect(await state.getStep(run.id, "s1")).toBeUndefined();
  });
});
