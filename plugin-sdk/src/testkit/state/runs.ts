import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../json.js";
import { RUN_STATUSES, type NewRun, type RunStateChange, type RunStore, type ToolCallRecord } from "../../state/index.js";
import { stateInputRefusal } from "./refusal.js";
import { clockAt, uniqueId, useSubject, type StateKitFactory } from "./subject.js";

function newRun(overrides: Partial<NewRun> = {}): NewRun {
  return {
    id: uniqueId("run"),
    agentId: "kit-agent",
    agentRevision: "rev-1",
    modelSpec: "scripted/kit",
    input: { message: "hello", metadata: { source: "kit" } },
    ...overrides,
  };
}

function toolCall(runId: string, callId: string, overrides: Partial<ToolCallRecord> = {}): ToolCallRecord {
  const at = new Date().toISOString();
  return {
    runId,
    callId,
    toolName: "echo",
    input: { text: "hi" },
    inputDigest: "digest",
    status: "requested",
    output: null,
    modelOutput: null,
    error: null,
    approvalId: null,
    question: null,
    createdAt: at,
    updatedAt: at,
    ...overrides,
  };
}

function expectContiguous(seqs: number[]): void {
  expect(seqs).toEqual(seqs.map((_, index) => index + 1));
}

/**
 * The `runs` facet (RunStore): runs, the event log, tool calls, steps,
 * checkpoints, leases, recovery claims and the delivery queue.
 */
export function describeRunStoreConformance(name: string, factory: StateKitFactory<RunStore>): void {
  describe(`${name}: RunStore conformance`, () => {
    const store = useSubject(factory);

    describe("createRun", () => {
      it("creates a queued run and records run.created as seq 1", async () => {
        const input = newRun({ conversationId: "conv-1" });
        const { run, created } = await store().createRun(input);
        expect(created).toBe(true);
        expect(run).toMatchObject({
          id: input.id,
          agentId: "kit-agent",
          agentRevision: "rev-1",
          conversationId: "conv-1",
          status: "queued",
          modelSpec: "scripted/kit",
          input: { message: "hello", metadata: { source: "kit" } },
          output: null,
          error: null,
          lastSeq: 1,
          observedSeq: 0,
          lease: null,
        });
        expect(Number.isNaN(Date.parse(run.createdAt))).toBe(false);
        const events = await store().listEvents(input.id);
        expect(events).toHaveLength(1);
        expect(events[0]).toMatchObject({ id: `${input.id}:1`, runId: input.id, seq: 1, type: "run.created" });
        expect(await store().getRun(input.id)).toEqual(run);
      });

      it("keeps the status it was created with and defaults conversationId to null", async () => {
        const { run } = await store().createRun(newRun({ status: "running" }));
        expect(run.status).toBe("running");
        expect(run.conversationId).toBeNull();
      });

      it("returns the first run for a repeated idempotencyKey without creating another", async () => {
        const key = uniqueId("provider-event");
        const first = await store().createRun(newRun({ idempotencyKey: key }));
        const second = await store().createRun(newRun({ idempotencyKey: key, input: { message: "again", metadata: {} } }));
        expect(second.created).toBe(false);
        expect(second.run).toEqual(first.run);
        expect(await store().listEvents(first.run.id)).toHaveLength(1);
      });

      it("creates exactly one run when 20 callers race with the same idempotencyKey", async () => {
        const key = uniqueId("provider-event");
        const attempts = Array.from({ length: 20 }, () => newRun({ idempotencyKey: key }));
        const results = await Promise.all(attempts.map((attempt) => store().createRun(attempt)));
        expect(results.filter((result) => result.created)).toHaveLength(1);
        const ids = new Set(results.map((result) => result.run.id));
        expect(ids.size).toBe(1);
        const [winner] = [...ids];
        const losers = attempts.filter((attempt) => attempt.id !== winner);
        for (const loser of losers) expect(await store().getRun(loser.id)).toBeUndefined();
        expect(await store().listEvents(winner!)).toHaveLength(1);
      });

      it("returns the run.created event it recorded, as listEvents gives it", async () => {
        const { run, created, createdEvent } = await store().createRun(newRun());
        expect(created).toBe(true);
        expect(createdEvent).toEqual((await store().listEvents(run.id))[0]);
        const again = await store().createRun(newRun({ id: run.id }));
        expect(again.createdEvent).toBeUndefined();
      });

      it("leases a run it creates to the creator in the same write, with a token later takes exceed", async () => {
        const { run } = await store().createRun(newRun(), { lease: { owner: "creator", ttlMs: 60_000 } });
        expect(run.lease).toMatchObject({ owner: "creator", token: expect.any(Number) });
        expect(Date.parse(run.lease!.expiresAt) - Date.now()).toBeGreaterThan(50_000);
        expect((await store().getRun(run.id))?.lease).toEqual(run.lease);
        // The lease fences writes and keeps others out, as a taken one does.
        expect(await store().acquireRunLease(run.id, "other", 60_000)).toBeNull();
        await store().appendEvents(run.id, [{ type: "a" }], undefined, { fence: run.lease! });
        await expect(store().appendEvents(run.id, [{ type: "b" }], undefined, { fence: { owner: "creator", token: run.lease!.token + 1 } })).rejects.toMatchObject({
          code: "AL_ERR_RUN_LEASE_LOST",
        });
        await store().releaseRunLease(run.id, "creator", run.lease!.token);
        const next = await store().acquireRunLease(run.id, "other", 60_000);
        expect(next!.token).toBeGreaterThan(run.lease!.token);
      });

      it("leaves an existing run's lease alone when asked to create it leased again", async () => {
        const key = uniqueId("provider-event");
        const first = await store().createRun(newRun({ idempotencyKey: key }));
        const second = await store().createRun(newRun({ idempotencyKey: key }), { lease: { owner: "late", ttlMs: 60_000 } });
        expect(second.created).toBe(false);
        expect(second.run.lease).toBeNull();
        expect((await store().getRun(first.run.id))?.lease).toBeNull();
      });

      it("returns undefined for a run that does not exist", async () => {
        expect(await store().getRun(uniqueId("missing"))).toBeUndefined();
      });
    });

    describe("appendEvents", () => {
      it("assigns contiguous seqs after lastSeq with ids of the form runId:seq", async () => {
        const { run } = await store().createRun(newRun());
        const appended = await store().appendEvents(run.id, [
          { type: "run.started" },
          { type: "model.response", data: { text: "hi", tokens: [1, 2] } },
        ]);
        expect(appended.map((event) => event.seq)).toEqual([2, 3]);
        expect(appended.map((event) => event.id)).toEqual([`${run.id}:2`, `${run.id}:3`]);
        expect(appended[0]).toMatchObject({ runId: run.id, type: "run.started", data: {} });
        expect(appended[1]?.data).toEqual({ text: "hi", tokens: [1, 2] });
        expect(Number.isNaN(Date.parse(appended[1]!.createdAt))).toBe(false);
        expect((await store().getRun(run.id))?.lastSeq).toBe(3);
        expect(await store().listEvents(run.id)).toEqual([...(await store().listEvents(run.id, { limit: 1 })), ...appended]);
      });

      it("keeps each append's time on its own events", async () => {
        const { run } = await store().createRun(newRun());
        const first = await store().appendEvents(run.id, [{ type: "run.started" }, { type: "model.response" }]);
        await new Promise((resolve) => setTimeout(resolve, 5));
        const second = await store().appendEvents(run.id, [{ type: "run.completed" }]);
        expect(first[0]!.createdAt).toBe(first[1]!.createdAt);
        expect(Date.parse(second[0]!.createdAt)).toBeGreaterThan(Date.parse(first[0]!.createdAt));
        const listed = await store().listEvents(run.id);
        expect(listed.map((event) => event.createdAt)).toEqual([run.createdAt, first[0]!.createdAt, first[1]!.createdAt, second[0]!.createdAt]);
      });

      it("keeps seq contiguous when 50 writers append at once", async () => {
        const { run } = await store().createRun(newRun());
        const writes = Array.from({ length: 50 }, (_, writer) =>
          store().appendEvents(
            run.id,
            writer % 2 === 0
              ? [{ type: "kit.write", data: { writer } }]
              : [{ type: "kit.write", data: { writer, part: 1 } }, { type: "kit.write", data: { writer, part: 2 } }],
          ),
        );
        const results = await Promise.all(writes);
        const events = await store().listEvents(run.id);
        expect(events).toHaveLength(1 + 25 + 50);
        expectContiguous(events.map((event) => event.seq));
        expect(new Set(events.map((event) => event.id)).size).toBe(events.length);
        for (const batch of results) {
          // One call's events are consecutive: no other writer interleaves inside a batch.
          for (let index = 1; index < batch.length; index += 1) expect(batch[index]!.seq).toBe(batch[index - 1]!.seq + 1);
        }
        expect((await store().getRun(run.id))?.lastSeq).toBe(events.length);
      });

      it("refuses with AL_ERR_EVENT_SEQ when expectedLastSeq is stale and writes nothing", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, [{ type: "run.started" }], undefined, { expectedLastSeq: 1 });
        await expect(
          store().appendEvents(run.id, [{ type: "run.completed" }], { run: { status: "completed", output: "late" } }, {
            expectedLastSeq: 1,
          }),
        ).rejects.toMatchObject({ name: "AssemblyLineError", code: "AL_ERR_EVENT_SEQ" });
        const after = await store().getRun(run.id);
        expect(after).toMatchObject({ lastSeq: 2, status: "queued", output: null });
        expect((await store().listEvents(run.id)).map((event) => event.type)).toEqual(["run.created", "run.started"]);
      });

      it("refuses an expectedLastSeq that is not a whole number >= 0 as input, not as a seq mismatch, appending nothing", async () => {
        const { run } = await store().createRun(newRun());
        for (const expectedLastSeq of [1.5, -1, Number.NaN]) {
          await expect(store().appendEvents(run.id, [{ type: "kit.write" }], undefined, { expectedLastSeq })).rejects.toMatchObject(
            stateInputRefusal(`appendEvents(run "${run.id}"): options.expectedLastSeq must be a whole number >= 0, got ${expectedLastSeq}`),
          );
        }
        expect((await store().getRun(run.id))?.lastSeq).toBe(1);
      });

      it("lets exactly one of 10 racing writers with the same expectedLastSeq win", async () => {
        const { run } = await store().createRun(newRun());
        const outcomes = await Promise.allSettled(
          Array.from({ length: 10 }, (_, writer) =>
            store().appendEvents(run.id, [{ type: "kit.write", data: { writer } }], { run: { output: writer } }, {
              expectedLastSeq: 1,
            }),
          ),
        );
        const won = outcomes.filter((outcome) => outcome.status === "fulfilled");
        expect(won).toHaveLength(1);
        for (const outcome of outcomes) {
          if (outcome.status === "rejected") expect(outcome.reason).toMatchObject({ code: "AL_ERR_EVENT_SEQ" });
        }
        const events = await store().listEvents(run.id);
        expect(events).toHaveLength(2);
        expect((await store().getRun(run.id))?.output).toBe(events[1]?.data.writer);
      });

      it("refuses an append to an unknown run with AL_ERR_RUN_NOT_FOUND", async () => {
        await expect(store().appendEvents(uniqueId("missing"), [{ type: "run.started" }])).rejects.toMatchObject({
          name: "AssemblyLineError",
          code: "AL_ERR_RUN_NOT_FOUND",
        });
      });

      it("applies the state change together with its events", async () => {
        const { run } = await store().createRun(newRun());
        const change: RunStateChange = {
          run: { status: "completed", output: { answer: 42 }, error: null, modelSpec: "scripted/other", conversationId: "conv-9" },
          toolCall: toolCall(run.id, "call-1", { status: "completed", output: { ok: true }, modelOutput: "ok" }),
          step: { runId: run.id, key: "step-1", result: { value: 1 }, metadata: { kind: "model" }, createdAt: new Date().toISOString() },
          checkpoint: { runId: run.id, continuation: { v: 1, cursor: "abc" }, createdAt: new Date().toISOString() },
          delivery: { id: uniqueId("delivery"), channel: "http", conversationId: "conv-9", payload: { text: "done" } },
        };
        const [event] = await store().appendEvents(run.id, [{ type: "run.completed" }], change);
        expect(event?.seq).toBe(2);
        expect(await store().getRun(run.id)).toMatchObject({
          status: "completed",
          output: { answer: 42 },
          error: null,
          modelSpec: "scripted/other",
          conversationId: "conv-9",
          lastSeq: 2,
        });
        expect(await store().getToolCall(run.id, "call-1")).toMatchObject({ runId: run.id, callId: "call-1", status: "completed", output: { ok: true }, modelOutput: "ok" });
        expect(await store().getStep(run.id, "step-1")).toMatchObject({ runId: run.id, key: "step-1", result: { value: 1 }, metadata: { kind: "model" } });
        expect(await store().getCheckpoint(run.id)).toMatchObject({ continuation: { v: 1, cursor: "abc" } });
        const deliveries = await store().listDeliveries(run.id);
        expect(deliveries).toHaveLength(1);
        expect(deliveries[0]).toMatchObject({
          id: change.delivery!.id,
          runId: run.id,
          channel: "http",
          conversationId: "conv-9",
          payload: { text: "done" },
          status: "pending",
          attempts: 0,
          lastError: null,
          lease: null,
        });
      });

      it("leaves absent fields of a change alone", async () => {
        const { run } = await store().createRun(newRun({ conversationId: "conv-1" }));
        await store().appendEvents(run.id, [{ type: "run.failed" }], { run: { status: "failed", error: { code: "X", message: "boom" } } });
        expect(await store().getRun(run.id)).toMatchObject({
          status: "failed",
          error: { code: "X", message: "boom" },
          conversationId: "conv-1",
          modelSpec: "scripted/kit",
          output: null,
        });
      });

      it("writes a step key once and keeps the first result", async () => {
        const { run } = await store().createRun(newRun());
        const step = (result: number) => ({
          step: { runId: run.id, key: "model:1", result, metadata: {}, createdAt: new Date().toISOString() },
        });
        await store().appendEvents(run.id, [{ type: "durable_step.completed" }], step(1));
        await store().appendEvents(run.id, [{ type: "durable_step.completed" }], step(2));
        expect((await store().getStep(run.id, "model:1"))?.result).toBe(1);
        expect((await store().getRun(run.id))?.lastSeq).toBe(3);
      });

      it("upserts tool calls by callId and lists them", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, [{ type: "tool.called" }], { toolCall: toolCall(run.id, "a") });
        await store().appendEvents(run.id, [{ type: "tool.called" }], { toolCall: toolCall(run.id, "b") });
        await store().appendEvents(run.id, [{ type: "tool.completed" }], {
          toolCall: toolCall(run.id, "a", { status: "completed", output: [1, 2, 3] }),
        });
        const calls = await store().listToolCalls(run.id);
        expect(calls.map((call) => call.callId).sort()).toEqual(["a", "b"]);
        expect(calls.map((call) => call.runId)).toEqual([run.id, run.id]);
        expect(await store().getToolCall(run.id, "a")).toMatchObject({ status: "completed", output: [1, 2, 3] });
        expect(await store().getToolCall(run.id, "missing")).toBeUndefined();
      });

      it("clears the checkpoint when the change sets it to null", async () => {
        const { run } = await store().createRun(newRun());
        const checkpoint = { runId: run.id, continuation: { v: 1 }, createdAt: new Date().toISOString() };
        await store().appendEvents(run.id, [{ type: "run.waiting_approval" }], { checkpoint });
        expect(await store().getCheckpoint(run.id)).toMatchObject({ continuation: { v: 1 } });
        await store().appendEvents(run.id, [{ type: "run.resumed" }], { checkpoint: null });
        expect(await store().getCheckpoint(run.id)).toBeUndefined();
      });
    });

    describe("listEvents and markObserved", () => {
      it("lists events after afterSeq, up to limit, in seq order", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, Array.from({ length: 9 }, (_, index) => ({ type: "kit.write", data: { index } })));
        expect((await store().listEvents(run.id, { afterSeq: 4 })).map((event) => event.seq)).toEqual([5, 6, 7, 8, 9, 10]);
        expect((await store().listEvents(run.id, { afterSeq: 4, limit: 2 })).map((event) => event.seq)).toEqual([5, 6]);
        expect(await store().listEvents(run.id, { afterSeq: 10 })).toEqual([]);
      });

      it("refuses a listEvents limit that is not a whole number >= 0, instead of listing part of the events", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, [{ type: "a" }, { type: "b" }]);
        for (const limit of [1.5, -1, Number.NaN]) {
          await expect(store().listEvents(run.id, { limit })).rejects.toMatchObject(stateInputRefusal(`listEvents(run "${run.id}") got limit ${limit}, which is not a whole number of entries`));
        }
        expect(await store().listEvents(run.id, { limit: 0 })).toEqual([]);
        expect((await store().listEvents(run.id, { limit: 2 })).map((event) => event.seq)).toEqual([1, 2]);
      });

      it("refuses an afterSeq that is not a whole number >= 0 as bad input, instead of failing in the store", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, [{ type: "a" }, { type: "b" }]);
        for (const afterSeq of [Number.NaN, 1.5, -1]) {
          await expect(store().listEvents(run.id, { afterSeq })).rejects.toMatchObject(stateInputRefusal(`listEvents(run "${run.id}"): options.afterSeq must be a whole number >= 0, got ${afterSeq}`));
        }
        expect(await store().listEvents(run.id, { afterSeq: 0 })).toEqual(await store().listEvents(run.id));
        expect(await store().listEvents(run.id, { afterSeq: Number.MAX_SAFE_INTEGER })).toEqual([]);
      });

      it("moves observedSeq forward and never backwards", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, [{ type: "a" }, { type: "b" }, { type: "c" }]);
        await store().markObserved(run.id, 3);
        await store().markObserved(run.id, 2);
        expect((await store().getRun(run.id))?.observedSeq).toBe(3);
        await store().markObserved(run.id, 4);
        expect((await store().getRun(run.id))?.observedSeq).toBe(4);
      });

      it("moves observedSeq with an append that carries it, forward only, in the same write", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, [{ type: "a" }, { type: "b" }]);
        await store().appendEvents(run.id, [{ type: "c" }], { run: { status: "running" } }, { observedSeq: 3 });
        expect(await store().getRun(run.id)).toMatchObject({ observedSeq: 3, lastSeq: 4, status: "running" });
        await store().appendEvents(run.id, [{ type: "d" }], undefined, { observedSeq: 2 });
        expect((await store().getRun(run.id))?.observedSeq).toBe(3);
        await store().appendEvents(run.id, [], undefined, { observedSeq: 5 });
        expect((await store().getRun(run.id))?.observedSeq).toBe(5);
        // A refused append moves nothing.
        await expect(store().appendEvents(run.id, [{ type: "e" }], undefined, { expectedLastSeq: 1, observedSeq: 6 })).rejects.toMatchObject({ code: "AL_ERR_EVENT_SEQ" });
        expect((await store().getRun(run.id))?.observedSeq).toBe(5);
      });

      it("refuses an observer position past the run's log (AL_ERR_STATE_INPUT_INVALID), in markObserved, an append and a release, changing nothing", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, [{ type: "a" }]);
        const lease = await store().acquireRunLease(run.id, "replica-a", 60_000, clockAt(0));
        const refused = (field: string) => ({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining(field) });
        await expect(store().markObserved(run.id, 50)).rejects.toMatchObject(refused("seq"));
        // The append's own events count: up to 4 after appending two to a log at 2, not 5.
        await expect(store().appendEvents(run.id, [{ type: "b" }, { type: "c" }], undefined, { observedSeq: 5 })).rejects.toMatchObject(refused("options.observedSeq"));
        await expect(store().appendEvents(run.id, [], { run: { status: "running" } }, { observedSeq: 1000 })).rejects.toMatchObject(refused("options.observedSeq"));
        await expect(store().releaseRunLease(run.id, "replica-a", lease!.token, { observedSeq: 3 })).rejects.toMatchObject(refused("options.observedSeq"));
        expect(await store().getRun(run.id)).toMatchObject({ lastSeq: 2, observedSeq: 0, status: "queued", lease: { owner: "replica-a", token: lease!.token } });
        expect((await store().listEvents(run.id)).map((event) => event.seq)).toEqual([1, 2]);
        // Up to the log's end is taken: the later events are still observed.
        await store().appendEvents(run.id, [{ type: "b" }, { type: "c" }], undefined, { observedSeq: 4 });
        await store().markObserved(run.id, 4);
        await store().appendEvents(run.id, [{ type: "d" }]);
        expect((await store().listRuns({ observersBehind: true })).runs.map((listed) => listed.id)).toContain(run.id);
        await store().releaseRunLease(run.id, "replica-a", lease!.token, { observedSeq: 5 });
        expect(await store().getRun(run.id)).toMatchObject({ lastSeq: 5, observedSeq: 5, lease: null });
      });

      it("refuses an observer position that is not a whole number >= 0 (AL_ERR_STATE_INPUT_INVALID), in markObserved, an append and a release, changing nothing", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, [{ type: "a" }, { type: "b" }]);
        const lease = await store().acquireRunLease(run.id, "replica-a", 60_000, clockAt(0));
        const refused = (field: string) => ({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining(`${field} must be a whole number >= 0`) });
        for (const seq of [1.5, -1, Number.NaN]) {
          await expect(store().markObserved(run.id, seq), `markObserved(${seq})`).rejects.toMatchObject(refused("seq"));
          await expect(store().appendEvents(run.id, [{ type: "c" }], undefined, { observedSeq: seq })).rejects.toMatchObject(refused("options.observedSeq"));
          await expect(store().releaseRunLease(run.id, "replica-a", lease!.token, { observedSeq: seq })).rejects.toMatchObject(refused("options.observedSeq"));
        }
        expect(await store().getRun(run.id)).toMatchObject({ lastSeq: 3, observedSeq: 0, lease: { owner: "replica-a", token: lease!.token } });
      });
    });

    describe("listRuns", () => {
      it("lists runs newest first and filters by status, agent and conversation", async () => {
        const agentId = uniqueId("agent");
        const a = (await store().createRun(newRun({ agentId, conversationId: "c1" }))).run;
        const b = (await store().createRun(newRun({ agentId, conversationId: "c2", status: "running" }))).run;
        const c = (await store().createRun(newRun({ agentId, conversationId: "c1" }))).run;
        await store().appendEvents(c.id, [{ type: "run.completed" }], { run: { status: "completed" } });
        await store().createRun(newRun({ agentId: uniqueId("other-agent") }));

        const ids = async (filter: Parameters<RunStore["listRuns"]>[0]) =>
          (await store().listRuns({ agentId, ...filter })).runs.map((run) => run.id);
        expect(await ids({})).toEqual([c.id, b.id, a.id]);
        expect(await ids({ status: "queued" })).toEqual([a.id]);
        expect(await ids({ status: ["running", "completed"] })).toEqual([c.id, b.id]);
        expect(await ids({ conversationId: "c1" })).toEqual([c.id, a.id]);
        expect((await store().listRuns({ agentId })).runs[0]).toMatchObject({ id: c.id, status: "completed", lastSeq: 2 });
      });

      it("lists only the runs whose observers are behind their events, with the other filters and the cursor", async () => {
        const agentId = uniqueId("agent");
        const seen = (await store().createRun(newRun({ agentId }))).run;
        await store().markObserved(seen.id, seen.lastSeq);
        const running = (await store().createRun(newRun({ agentId, status: "running" }))).run;
        await store().appendEvents(running.id, [{ type: "a" }, { type: "b" }]);
        await store().markObserved(running.id, 2);
        const done = (await store().createRun(newRun({ agentId }))).run;
        await store().appendEvents(done.id, [{ type: "run.completed" }], { run: { status: "completed" } }, { observedSeq: 2 });
        const doneUnseen = (await store().createRun(newRun({ agentId }))).run;
        await store().appendEvents(doneUnseen.id, [{ type: "run.completed" }], { run: { status: "completed" } }, { observedSeq: 1 });

        const ids = async (filter: Parameters<RunStore["listRuns"]>[0]) =>
          (await store().listRuns({ agentId, observersBehind: true, ...filter })).runs.map((run) => run.id);
        expect(await ids({})).toEqual([doneUnseen.id, running.id]);
        expect(await ids({ status: "completed" })).toEqual([doneUnseen.id]);
        expect(await ids({ status: ["queued", "running"] })).toEqual([running.id]);
        const first = await store().listRuns({ agentId, observersBehind: true, limit: 1 });
        expect(first.runs.map((run) => run.id)).toEqual([doneUnseen.id]);
        const second = await store().listRuns({ agentId, observersBehind: true, limit: 1, cursor: first.nextCursor! });
        expect(second.runs.map((run) => run.id)).toEqual([running.id]);
        // Once observers caught up, the run is no longer listed.
        await store().markObserved(doneUnseen.id, 2);
        expect(await ids({})).toEqual([running.id]);
        expect(await ids({ observersBehind: false })).toEqual([doneUnseen.id, done.id, running.id, seen.id]);
      });

      it("pages through every run exactly once with the opaque cursor", async () => {
        const agentId = uniqueId("agent");
        const created: string[] = [];
        for (let index = 0; index < 7; index += 1) created.push((await store().createRun(newRun({ agentId }))).run.id);
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await store().listRuns({ agentId, limit: 3, ...(cursor ? { cursor } : {}) });
          expect(page.runs.length).toBeLessThanOrEqual(3);
          seen.push(...page.runs.map((run) => run.id));
          cursor = page.nextCursor ?? undefined;
          pages += 1;
        } while (cursor && pages < 10);
        expect(seen).toEqual([...created].reverse());
        expect(pages).toBe(3);
      });

      it("returns no cursor when the page holds the last run", async () => {
        const agentId = uniqueId("agent");
        await store().createRun(newRun({ agentId }));
        expect(await store().listRuns({ agentId, limit: 1 })).toMatchObject({ nextCursor: null });
      });

      it("takes a fractional limit as the whole runs below it, at least one", async () => {
        const agentId = uniqueId("agent");
        for (let index = 0; index < 3; index += 1) await store().createRun(newRun({ agentId }));
        expect((await store().listRuns({ agentId, limit: 2.5 })).runs).toHaveLength(2);
        expect((await store().listRuns({ agentId, limit: 0.5 })).runs).toHaveLength(1);
      });

      it("refuses a limit that is no finite number and a status no run has, instead of a default page or an empty one", async () => {
        await store().createRun(newRun());
        const statuses = RUN_STATUSES.join(", ");
        await expect(store().listRuns({ limit: Number.NaN })).rejects.toMatchObject(stateInputRefusal("listRuns: filter.limit must be a number of runs per page (left out: the store's default), got NaN"));
        await expect(store().listRuns({ limit: Number.POSITIVE_INFINITY })).rejects.toMatchObject(stateInputRefusal("listRuns: filter.limit must be a number of runs per page (left out: the store's default), got Infinity"));
        await expect(store().listRuns({ status: "bogus" as never })).rejects.toMatchObject(stateInputRefusal(`listRuns: filter.status[0] must be one of ${statuses}, got "bogus"`));
        await expect(store().listRuns({ status: ["queued", "bogus" as never] })).rejects.toMatchObject(stateInputRefusal(`listRuns: filter.status[1] must be one of ${statuses}, got "bogus"`));
      });
    });

    describe("bad input", () => {
      const refused = (field: string) => ({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining(field) });

      it("refuses a run with a status no run has or an empty idempotency key, creating nothing", async () => {
        const bogus = newRun({ status: "bogus" as never });
        await expect(store().createRun(bogus)).rejects.toMatchObject(refused("run.status"));
        expect(await store().getRun(bogus.id)).toBeUndefined();
        const keyless = newRun({ idempotencyKey: "" });
        await expect(store().createRun(keyless)).rejects.toMatchObject(refused("run.idempotencyKey"));
        expect(await store().getRun(keyless.id)).toBeUndefined();
      });

      it("refuses a run with an empty id, agent or revision, or an input that is not { message, metadata } (AL_ERR_STATE_INPUT_INVALID naming the field), creating nothing", async () => {
        const rows: Array<[string, Partial<NewRun>]> = [
          ["run.id", { id: "" }],
          ["run.agentId", { agentId: "" }],
          ["run.agentRevision", { agentRevision: "" }],
          ["run.modelSpec", { modelSpec: 1 as never }],
          ["run.conversationId", { conversationId: 7 as never }],
          ["run.input", { input: "hi" as never }],
          ["run.input.message", { input: { message: 1, metadata: {} } as never }],
          ["run.input.metadata", { input: { message: "hi" } as never }],
        ];
        for (const [field, change] of rows) {
          const bad = newRun(change);
          await expect(store().createRun(bad), `createRun with ${field}`).rejects.toMatchObject(refused(`${field} must be`));
          if (bad.id !== "") expect(await store().getRun(bad.id)).toBeUndefined();
        }
        expect(await store().getRun("")).toBeUndefined();
      });

      it("refuses a lease length that is negative, NaN or missing, in every call that takes one, changing nothing", async () => {
        for (const ttlMs of [-1, Number.NaN, undefined]) {
          const fresh = newRun();
          await expect(store().createRun(fresh, { lease: { owner: "a", ttlMs: ttlMs as number } })).rejects.toMatchObject(refused("ttlMs"));
          expect(await store().getRun(fresh.id)).toBeUndefined();
          const { run } = await store().createRun(newRun());
          await expect(store().acquireRunLease(run.id, "a", ttlMs as number)).rejects.toMatchObject(refused("ttlMs"));
          const lease = await store().acquireRunLease(run.id, "a", 60_000);
          await expect(store().renewRunLease(run.id, { owner: "a", token: lease!.token }, ttlMs as number)).rejects.toMatchObject(refused("ttlMs"));
          expect((await store().getRun(run.id))?.lease).toEqual(lease);
          await expect(store().claimRecoverableRuns({ owner: "b", ttlMs: ttlMs as number })).rejects.toMatchObject(refused("ttlMs"));
          await expect(store().claimDeliveries({ owner: "b", ttlMs: ttlMs as number })).rejects.toMatchObject(refused("ttlMs"));
        }
      });

      it("refuses a lease for an empty owner in acquireRunLease, createRun and the claims of runs and deliveries, leasing nothing", async () => {
        const { run } = await store().createRun(newRun());
        await expect(store().acquireRunLease(run.id, "", 60_000)).rejects.toMatchObject(stateInputRefusal(`acquireRunLease(run "${run.id}"): owner must be a non-empty string, got ""`));
        const leased = newRun();
        await expect(store().createRun(leased, { lease: { owner: "", ttlMs: 60_000 } })).rejects.toMatchObject(stateInputRefusal('createRun: options.lease.owner must be a non-empty string, got ""'));
        expect(await store().getRun(leased.id)).toBeUndefined();
        for (const claim of ["claimRecoverableRuns", "claimDeliveries"] as const) {
          await expect(store()[claim]({ owner: "", ttlMs: 60_000 })).rejects.toMatchObject(stateInputRefusal(`${claim}: options.owner must be a non-empty string, got ""`));
        }
        expect((await store().getRun(run.id))?.lease).toBeNull();
      });

      it("refuses an event with an empty type or data that is not an object, appending nothing", async () => {
        const { run } = await store().createRun(newRun());
        await expect(store().appendEvents(run.id, [{ type: "kit.ok" }, { type: "" }])).rejects.toMatchObject(refused("events[1].type"));
        for (const data of [[1], "text", null]) {
          await expect(store().appendEvents(run.id, [{ type: "kit.data", data: data as never }])).rejects.toMatchObject(refused("events[0].data"));
        }
        expect((await store().listEvents(run.id)).map((event) => event.type)).toEqual(["run.created"]);
      });
    });

    describe("run leases", () => {
      it("gives the lease to one owner until it expires", async () => {
        const { run } = await store().createRun(newRun());
        const first = await store().acquireRunLease(run.id, "replica-a", 1_000, clockAt(0));
        expect(first).toMatchObject({ owner: "replica-a", expiresAt: clockAt(1_000).toISOString() });
        expect(await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(500))).toBeNull();
        expect((await store().getRun(run.id))?.lease).toEqual({ owner: "replica-a", expiresAt: clockAt(1_000).toISOString(), token: first!.token });
        expect(await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(1_000))).not.toBeNull();
        expect(await store().acquireRunLease(run.id, "replica-a", 1_000, clockAt(1_500))).toBeNull();
        expect((await store().getRun(run.id))?.lease?.owner).toBe("replica-b");
      });

      it("issues a higher fencing token with every take, across owners and releases", async () => {
        const { run } = await store().createRun(newRun());
        const tokens: number[] = [];
        const a = await store().acquireRunLease(run.id, "replica-a", 1_000, clockAt(0));
        tokens.push(a!.token);
        const b = await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(2_000));
        tokens.push(b!.token);
        await store().releaseRunLease(run.id, "replica-b", b!.token);
        const again = await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(2_001));
        tokens.push(again!.token);
        const [claimed] = (await store().claimRecoverableRuns({ owner: "recoverer", ttlMs: 1_000, now: clockAt(9_000) })).filter((r) => r.id === run.id);
        tokens.push(claimed!.lease!.token);
        for (let index = 1; index < tokens.length; index += 1) expect(tokens[index]).toBeGreaterThan(tokens[index - 1]!);
        expect((await store().getRun(run.id))?.lease?.token).toBe(tokens.at(-1));
      });

      it("reports the lease a take replaced, as it stood, and none for a run never leased or released", async () => {
        const { run } = await store().createRun(newRun({ status: "running" }));
        const first = await store().acquireRunLease(run.id, "replica-a", 1_000, clockAt(0));
        expect(first?.replaced).toBeUndefined();
        const taken = await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(5_000));
        expect(taken?.replaced).toEqual({ owner: "replica-a", expiresAt: clockAt(1_000).toISOString() });
        expect((await store().getRun(run.id))?.lease).toEqual({ owner: "replica-b", expiresAt: clockAt(6_000).toISOString(), token: taken!.token });
        await store().releaseRunLease(run.id, "replica-b", taken!.token);
        expect((await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(6_000)))?.replaced).toBeUndefined();
      });

      it("renews the lease for its holder, keeping the token", async () => {
        const { run } = await store().createRun(newRun());
        const lease = await store().acquireRunLease(run.id, "replica-a", 1_000, clockAt(0));
        const renewed = await store().renewRunLease(run.id, lease!, 1_000, clockAt(800));
        expect(renewed).toEqual({ owner: "replica-a", expiresAt: clockAt(1_800).toISOString(), token: lease!.token });
        expect(await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(1_500))).toBeNull();
        expect((await store().getRun(run.id))?.lease?.expiresAt).toBe(clockAt(1_800).toISOString());
      });

      it("never renews a lease that was taken over or released", async () => {
        const { run } = await store().createRun(newRun());
        const a = await store().acquireRunLease(run.id, "replica-a", 1_000, clockAt(0));
        const b = await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(1_000));
        expect(await store().renewRunLease(run.id, a!, 1_000, clockAt(1_100))).toBeNull();
        expect((await store().getRun(run.id))?.lease).toMatchObject({ owner: "replica-b", token: b!.token });
        await store().releaseRunLease(run.id, "replica-b", b!.token);
        expect(await store().renewRunLease(run.id, b!, 1_000, clockAt(1_200))).toBeNull();
        expect(await store().renewRunLease(run.id, a!, 1_000, clockAt(1_200))).toBeNull();
        expect((await store().getRun(run.id))?.lease).toBeNull();
      });

      it("takes and renews no lease for a completed or failed run", async () => {
        for (const status of ["completed", "failed"] as const) {
          const { run } = await store().createRun(newRun());
          const lease = await store().acquireRunLease(run.id, "replica-a", 60_000, clockAt(0));
          await store().appendEvents(run.id, [{ type: `run.${status}` }], { run: { status } }, { fence: lease! });
          expect(await store().renewRunLease(run.id, lease!, 60_000, clockAt(1))).toBeNull();
          await store().releaseRunLease(run.id, "replica-a", lease!.token);
          expect(await store().acquireRunLease(run.id, "replica-b", 60_000, clockAt(2))).toBeNull();
          expect((await store().getRun(run.id))?.lease).toBeNull();
        }
      });

      it("releases only for the holder", async () => {
        const { run } = await store().createRun(newRun());
        const lease = await store().acquireRunLease(run.id, "replica-a", 60_000, clockAt(0));
        await store().releaseRunLease(run.id, "replica-b");
        await store().releaseRunLease(run.id, "replica-a", lease!.token + 1);
        expect(await store().acquireRunLease(run.id, "replica-b", 60_000, clockAt(1))).toBeNull();
        await store().releaseRunLease(run.id, "replica-a", lease!.token);
        expect((await store().getRun(run.id))?.lease).toBeNull();
        expect(await store().acquireRunLease(run.id, "replica-b", 60_000, clockAt(2))).not.toBeNull();
      });

      it("moves observedSeq with a release that carries it, forward only, holder or not", async () => {
        const { run } = await store().createRun(newRun());
        await store().appendEvents(run.id, [{ type: "a" }, { type: "b" }]);
        const lease = await store().acquireRunLease(run.id, "replica-a", 60_000, clockAt(0));
        await store().releaseRunLease(run.id, "replica-a", lease!.token, { observedSeq: 2 });
        expect(await store().getRun(run.id)).toMatchObject({ observedSeq: 2, lease: null });
        await store().releaseRunLease(run.id, "replica-a", lease!.token, { observedSeq: 1 });
        expect((await store().getRun(run.id))?.observedSeq).toBe(2);
        // Another owner's lease stays; the position still moves (observers here did see those events).
        const other = await store().acquireRunLease(run.id, "replica-b", 60_000, clockAt(1));
        await store().releaseRunLease(run.id, "replica-a", lease!.token, { observedSeq: 3 });
        expect(await store().getRun(run.id)).toMatchObject({ observedSeq: 3, lease: { owner: "replica-b", token: other!.token } });
      });

      it("grants a contested lease to exactly one of 10 racing owners", async () => {
        const { run } = await store().createRun(newRun());
        const granted = await Promise.all(
          Array.from({ length: 10 }, (_, owner) => store().acquireRunLease(run.id, `replica-${owner}`, 60_000, clockAt(0))),
        );
        expect(granted.filter(Boolean)).toHaveLength(1);
      });
    });

    describe("fencing", () => {
      it("commits a fenced write only while the writer's token is the run's", async () => {
        const { run } = await store().createRun(newRun());
        const lease = await store().acquireRunLease(run.id, "replica-a", 60_000, clockAt(0));
        const [event] = await store().appendEvents(run.id, [{ type: "kit.fenced" }], undefined, { fence: lease! });
        expect(event?.seq).toBe(2);
        await expect(store().appendEvents(run.id, [{ type: "kit.forged" }], undefined, { fence: { ...lease!, token: lease!.token + 1 } })).rejects.toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });
        await expect(store().appendEvents(run.id, [{ type: "kit.forged" }], undefined, { fence: { ...lease!, owner: "replica-z" } })).rejects.toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });
        expect((await store().getRun(run.id))?.lastSeq).toBe(2);
      });

      it("refuses every write of a zombie holder after another replica took over and finished the run", async () => {
        const { run } = await store().createRun(newRun());
        // Replica A takes the run, records a tool call as requested, then stalls past its lease.
        const a = await store().acquireRunLease(run.id, "replica-a", 1_000, clockAt(0));
        await store().appendEvents(run.id, [{ type: "tool.requested" }], { run: { status: "running" }, toolCall: toolCall(run.id, "c1") }, { fence: a! });
        // Replica B takes over, completes the call and the run, and releases.
        const b = await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(5_000));
        expect(b!.token).toBeGreaterThan(a!.token);
        await store().appendEvents(run.id, [{ type: "tool.completed" }], { toolCall: toolCall(run.id, "c1", { status: "completed", output: { by: "b" } }) }, { fence: b! });
        await store().appendEvents(run.id, [{ type: "run.completed" }], { run: { status: "completed", output: { text: "b" } }, checkpoint: null }, { fence: b! });
        await store().releaseRunLease(run.id, "replica-b", b!.token);
        const before = await store().listEvents(run.id);

        // Replica A wakes: its heartbeat cannot re-take the released lease, and none of its writes land.
        expect(await store().renewRunLease(run.id, a!, 1_000, clockAt(6_000))).toBeNull();
        expect(await store().acquireRunLease(run.id, "replica-a", 1_000, clockAt(6_000))).toBeNull();
        const writes: Array<[string, RunStateChange]> = [
          ["tool.completed", { toolCall: toolCall(run.id, "c1", { status: "completed", output: { by: "a" } }) }],
          ["durable_step.completed", { step: { runId: run.id, key: "k", result: "a", metadata: {}, createdAt: new Date().toISOString() } }],
          ["run.waiting_approval", { checkpoint: { runId: run.id, continuation: { by: "a" }, createdAt: new Date().toISOString() } }],
          ["run.completed", { run: { status: "completed", output: { text: "a" } }, delivery: { id: uniqueId("dlv"), channel: "kit", payload: {} } }],
        ];
        for (const [type, change] of writes) {
          await expect(store().appendEvents(run.id, [{ type }], change, { fence: a! })).rejects.toMatchObject({ code: "AL_ERR_RUN_LEASE_LOST" });
        }
        expect(await store().listEvents(run.id)).toEqual(before);
        expect(await store().getRun(run.id)).toMatchObject({ status: "completed", output: { text: "b" }, lastSeq: before.length, lease: null });
        expect(await store().getToolCall(run.id, "c1")).toMatchObject({ status: "completed", output: { by: "b" } });
        expect(await store().getStep(run.id, "k")).toBeUndefined();
        expect(await store().getCheckpoint(run.id)).toBeUndefined();
        expect(await store().listDeliveries(run.id)).toEqual([]);
      });

      it("lets exactly one of two racing holders write after a takeover", async () => {
        const { run } = await store().createRun(newRun());
        const a = await store().acquireRunLease(run.id, "replica-a", 1_000, clockAt(0));
        const b = await store().acquireRunLease(run.id, "replica-b", 1_000, clockAt(1_000));
        const outcomes = await Promise.allSettled(
          Array.from({ length: 6 }, (_, index) => store().appendEvents(run.id, [{ type: "kit.race" }], undefined, { fence: index % 2 === 0 ? a! : b! })),
        );
        expect(outcomes.map((outcome) => outcome.status)).toEqual(["rejected", "fulfilled", "rejected", "fulfilled", "rejected", "fulfilled"]);
        expect((await store().getRun(run.id))?.lastSeq).toBe(4);
      });
    });

    describe("claimRecoverableRuns", () => {
      it("leases queued and running runs that have no live lease, and skips the rest", async () => {
        const agentId = uniqueId("agent");
        const queued = (await store().createRun(newRun({ agentId }))).run;
        const running = (await store().createRun(newRun({ agentId, status: "running" }))).run;
        const leased = (await store().createRun(newRun({ agentId, status: "running" }))).run;
        const waiting = (await store().createRun(newRun({ agentId, status: "waiting_approval" }))).run;
        const done = (await store().createRun(newRun({ agentId }))).run;
        await store().appendEvents(done.id, [{ type: "run.completed" }], { run: { status: "completed" } });
        await store().acquireRunLease(leased.id, "live-replica", 60_000, clockAt(0));

        const claimed = await store().claimRecoverableRuns({ owner: "recoverer", ttlMs: 30_000, now: clockAt(1_000) });
        const mine = claimed.filter((run) => run.agentId === agentId);
        expect(mine.map((run) => run.id).sort()).toEqual([queued.id, running.id].sort());
        for (const run of mine) expect(run.lease).toMatchObject({ owner: "recoverer", expiresAt: clockAt(31_000).toISOString() });
        for (const run of mine) expect(run.lease?.token).toBeGreaterThan(0);
        expect((await store().getRun(queued.id))?.lease?.owner).toBe("recoverer");
        expect((await store().getRun(waiting.id))?.lease).toBeNull();
      });

      it("reports the lease each claim replaced, as it stood, and none for a run that had none", async () => {
        const agentId = uniqueId("agent");
        const crashed = (await store().createRun(newRun({ agentId, status: "running" }))).run;
        await store().acquireRunLease(crashed.id, "crashed-replica", 1_000, clockAt(0));
        const unleased = (await store().createRun(newRun({ agentId }))).run;
        const claimed = await store().claimRecoverableRuns({ owner: "recoverer", ttlMs: 1_000, now: clockAt(5_000), agentId });
        expect(claimed.find((run) => run.id === crashed.id)?.replacedLease).toEqual({ owner: "crashed-replica", expiresAt: clockAt(1_000).toISOString() });
        expect(claimed.find((run) => run.id === unleased.id)).toBeDefined();
        expect(claimed.find((run) => run.id === unleased.id)?.replacedLease).toBeUndefined();
        // Reported by the claim only, never stored with the run.
        expect(await store().getRun(crashed.id)).not.toHaveProperty("replacedLease");
      });

      it("does not hand a claimed run to a second claimer until the lease expires", async () => {
        const { run } = await store().createRun(newRun());
        const first = await store().claimRecoverableRuns({ owner: "a", ttlMs: 1_000, now: clockAt(0) });
        expect(first.map((claimed) => claimed.id)).toContain(run.id);
        const second = await store().claimRecoverableRuns({ owner: "b", ttlMs: 1_000, now: clockAt(999) });
        expect(second.map((claimed) => claimed.id)).not.toContain(run.id);
        const third = await store().claimRecoverableRuns({ owner: "b", ttlMs: 1_000, now: clockAt(1_000) });
        expect(third.map((claimed) => claimed.id)).toContain(run.id);
        expect(await store().acquireRunLease(run.id, "a", 1_000, clockAt(1_500))).toBeNull();
      });

      it("with agentId, leases only the runs of that agent and its subagents, never another agent's", async () => {
        // "_" and "%" in the id: a LIKE pattern made of it would match other agents' ids too.
        const agent = `${uniqueId("agent")}_%`;
        const other = agent.replace("_%", "xy");
        const own = (await store().createRun(newRun({ agentId: agent }))).run;
        const child = (await store().createRun(newRun({ agentId: `${agent}/researcher`, status: "running" }))).run;
        const grandchild = (await store().createRun(newRun({ agentId: `${agent}/researcher/checker` }))).run;
        // An id that starts with the agent's without the "/" of a subagent is another agent's.
        const prefixed = (await store().createRun(newRun({ agentId: `${agent}-eu`, status: "running" }))).run;
        const foreign = (await store().createRun(newRun({ agentId: other }))).run;
        const foreignChild = (await store().createRun(newRun({ agentId: `${other}/researcher` }))).run;

        const claimed = await store().claimRecoverableRuns({ owner: "recoverer", ttlMs: 30_000, now: clockAt(1_000), agentId: agent });
        expect(claimed.map((run) => run.id).sort()).toEqual([own.id, child.id, grandchild.id].sort());
        for (const run of [prefixed, foreign, foreignChild]) expect((await store().getRun(run.id))?.lease, run.agentId).toBeNull();

        const theirs = await store().claimRecoverableRuns({ owner: "their-recoverer", ttlMs: 30_000, now: clockAt(1_000), agentId: `${agent}-eu` });
        expect(theirs.map((run) => run.id)).toEqual([prefixed.id]);
      });

      it("with agentId, skips other agents' runs before the limit", async () => {
        const agent = uniqueId("agent");
        for (let index = 0; index < 3; index += 1) await store().createRun(newRun({ agentId: uniqueId("other-agent") }));
        const mine = [(await store().createRun(newRun({ agentId: agent }))).run.id, (await store().createRun(newRun({ agentId: `${agent}/helper` }))).run.id];
        const claimed = await store().claimRecoverableRuns({ owner: "recoverer", ttlMs: 30_000, limit: 2, now: clockAt(0), agentId: agent });
        expect(claimed.map((run) => run.id).sort()).toEqual([...mine].sort());
      });

      it("claims each run once across 5 concurrent claimers and honours limit", async () => {
        const agentId = uniqueId("agent");
        const ids: string[] = [];
        for (let index = 0; index < 10; index += 1) ids.push((await store().createRun(newRun({ agentId }))).run.id);
        const claims = await Promise.all(
          Array.from({ length: 5 }, (_, owner) =>
            store().claimRecoverableRuns({ owner: `claimer-${owner}`, ttlMs: 60_000, limit: 3, now: clockAt(0) }),
          ),
        );
        for (const claim of claims) expect(claim.length).toBeLessThanOrEqual(3);
        const claimedIds = claims.flat().map((run) => run.id).filter((id) => ids.includes(id));
        expect(new Set(claimedIds).size).toBe(claimedIds.length);
        expect(claimedIds.sort()).toEqual([...ids].sort());
        for (const [owner, claim] of claims.entries()) {
          for (const run of claim) expect((await store().getRun(run.id))?.lease?.owner).toBe(`claimer-${owner}`);
        }
      });
    });

    describe("deliveries", () => {
      async function runWithDelivery(payload: unknown = { text: "hi" }, agentId?: string) {
        const { run } = await store().createRun(newRun(agentId === undefined ? {} : { agentId }));
        const id = uniqueId("delivery");
        await store().appendEvents(run.id, [{ type: "run.completed" }], {
          run: { status: "completed" },
          delivery: { id, channel: "http", payload: payload as never },
        });
        return { run, id };
      }
      const soon = () => new Date(Date.now() + 1_000);

      it("leases an available delivery to one claimer and completes it", async () => {
        const { id } = await runWithDelivery();
        const now = soon();
        const claimed = (await store().claimDeliveries({ owner: "worker-a", ttlMs: 30_000, now })).filter((d) => d.id === id);
        expect(claimed).toHaveLength(1);
        expect(claimed[0]?.lease).toEqual({ owner: "worker-a", expiresAt: new Date(now.getTime() + 30_000).toISOString() });
        expect(claimed[0]?.attempts).toBe(1);
        const again = await store().claimDeliveries({ owner: "worker-b", ttlMs: 30_000, now });
        expect(again.map((d) => d.id)).not.toContain(id);
        await store().completeDelivery(id, "worker-a");
        const [delivery] = (await store().listDeliveries(claimed[0]!.runId)).filter((d) => d.id === id);
        expect(delivery).toMatchObject({ status: "delivered", attempts: 1, lease: null });
        const later = await store().claimDeliveries({ owner: "worker-b", ttlMs: 30_000, now: new Date(now.getTime() + 60_000) });
        expect(later.map((d) => d.id)).not.toContain(id);
      });

      it("hands a delivery to another worker after its lease expires", async () => {
        const { id } = await runWithDelivery();
        const now = soon();
        await store().claimDeliveries({ owner: "worker-a", ttlMs: 1_000, now });
        const taken = await store().claimDeliveries({ owner: "worker-b", ttlMs: 1_000, now: new Date(now.getTime() + 1_000) });
        expect(taken.find((d) => d.id === id)?.lease?.owner).toBe("worker-b");
      });

      it("counts an attempt at each claim, in the claim's write: a claimer that died without an outcome used one up", async () => {
        const { run, id } = await runWithDelivery();
        const now = soon();
        // worker-a and worker-b claim it and die while sending: neither completes nor fails it.
        const first = (await store().claimDeliveries({ owner: "worker-a", ttlMs: 1_000, now })).find((d) => d.id === id);
        expect(first?.attempts).toBe(1);
        expect((await store().listDeliveries(run.id))[0]).toMatchObject({ status: "pending", attempts: 1, lastError: null });
        const notYet = await store().claimDeliveries({ owner: "worker-x", ttlMs: 1_000, now: new Date(now.getTime() + 999) });
        expect(notYet.map((d) => d.id)).not.toContain(id);
        const second = (await store().claimDeliveries({ owner: "worker-b", ttlMs: 1_000, now: new Date(now.getTime() + 1_000) })).find((d) => d.id === id);
        expect(second?.attempts).toBe(2);
        const third = (await store().claimDeliveries({ owner: "worker-c", ttlMs: 30_000, now: new Date(now.getTime() + 2_000) })).find((d) => d.id === id);
        expect(third).toMatchObject({ attempts: 3, lease: { owner: "worker-c" } });
        // A late outcome from a dead claimer's lease counts nothing; the holder's outcome adds none to its claim's count.
        await store().failDelivery(id, "worker-a", "late", new Date(now.getTime() + 3_000));
        await store().completeDelivery(id, "worker-c");
        expect((await store().listDeliveries(run.id))[0]).toMatchObject({ status: "delivered", attempts: 3, lastError: null, lease: null });
      });

      it("counts a failed attempt and makes the delivery available again at retryAt", async () => {
        const { run, id } = await runWithDelivery();
        const now = soon();
        await store().claimDeliveries({ owner: "worker-a", ttlMs: 30_000, now });
        const retryAt = new Date(now.getTime() + 60_000);
        await store().failDelivery(id, "worker-a", "HTTP 503", retryAt);
        const [failed] = await store().listDeliveries(run.id);
        // Counted by the claim: failing it adds none.
        expect(failed).toMatchObject({ status: "pending", attempts: 1, lastError: "HTTP 503", lease: null });
        expect(Date.parse(failed!.availableAt)).toBe(retryAt.getTime());
        const early = await store().claimDeliveries({ owner: "worker-b", ttlMs: 30_000, now: new Date(retryAt.getTime() - 1) });
        expect(early.map((d) => d.id)).not.toContain(id);
        const due = await store().claimDeliveries({ owner: "worker-b", ttlMs: 30_000, now: retryAt });
        expect(due.find((d) => d.id === id)).toMatchObject({ attempts: 2, status: "pending" });
      });

      it("gives back the claim's attempt, in the same write, when its holder fails it with countAttempt: false (a hand-back that sent nothing)", async () => {
        const { run, id } = await runWithDelivery();
        const now = soon();
        await store().claimDeliveries({ owner: "worker-a", ttlMs: 30_000, now });
        const later = new Date(now.getTime() + 60_000);
        await store().failDelivery(id, "worker-a", "left for another build", later, { countAttempt: false });
        const [handedBack] = await store().listDeliveries(run.id);
        expect(handedBack).toMatchObject({ status: "pending", attempts: 0, lastError: "left for another build", lease: null });
        expect(Date.parse(handedBack!.availableAt)).toBe(later.getTime());

        // The next claim counts as usual; a real attempt's failure keeps its count.
        expect((await store().claimDeliveries({ owner: "worker-b", ttlMs: 30_000, now: later })).find((d) => d.id === id)?.attempts).toBe(1);
        const retryAt = new Date(later.getTime() + 60_000);
        await store().failDelivery(id, "worker-b", "HTTP 503", retryAt);
        expect((await store().claimDeliveries({ owner: "worker-c", ttlMs: 30_000, now: retryAt })).find((d) => d.id === id)?.attempts).toBe(2);
        // Only the lease's holder gives an attempt back: a late call from a former holder changes nothing.
        await store().failDelivery(id, "worker-b", "late hand-back", new Date(retryAt.getTime() + 1_000), { countAttempt: false });
        expect((await store().listDeliveries(run.id))[0]).toMatchObject({ attempts: 2, lastError: "HTTP 503", lease: { owner: "worker-c" } });
        // The holder gives back its own claim's attempt only, not the real one before it.
        await store().failDelivery(id, "worker-c", "left for another build", new Date(retryAt.getTime() + 60_000), { countAttempt: false });
        expect((await store().listDeliveries(run.id))[0]).toMatchObject({ status: "pending", attempts: 1, lastError: "left for another build", lease: null });
      });

      it("fails a delivery for good when no retryAt is given", async () => {
        const { run, id } = await runWithDelivery();
        const now = soon();
        await store().claimDeliveries({ owner: "worker-a", ttlMs: 30_000, now });
        await store().failDelivery(id, "worker-a", "HTTP 400");
        expect((await store().listDeliveries(run.id))[0]).toMatchObject({ status: "failed", attempts: 1, lastError: "HTTP 400", lease: null });
        const later = await store().claimDeliveries({ owner: "worker-b", ttlMs: 30_000, now: new Date(now.getTime() + 3_600_000) });
        expect(later.map((d) => d.id)).not.toContain(id);
      });

      it("claims each delivery once across 5 concurrent claimers", async () => {
        const ids: string[] = [];
        for (let index = 0; index < 8; index += 1) ids.push((await runWithDelivery({ index })).id);
        const now = soon();
        const claims = await Promise.all(
          Array.from({ length: 5 }, (_, owner) => store().claimDeliveries({ owner: `worker-${owner}`, ttlMs: 60_000, limit: 2, now })),
        );
        for (const claim of claims) expect(claim.length).toBeLessThanOrEqual(2);
        const claimed = claims.flat().map((d) => d.id).filter((id) => ids.includes(id));
        expect(new Set(claimed).size).toBe(claimed.length);
      });

      it("with agentId, leases only the deliveries of runs of that agent and its subagents, never another agent's", async () => {
        const agent = `${uniqueId("agent")}_%`;
        const other = agent.replace("_%", "xy");
        const own = await runWithDelivery({ to: "own" }, agent);
        const child = await runWithDelivery({ to: "child" }, `${agent}/researcher`);
        const prefixed = await runWithDelivery({ to: "prefixed" }, `${agent}-eu`);
        const foreign = await runWithDelivery({ to: "foreign" }, other);
        const foreignChild = await runWithDelivery({ to: "foreign child" }, `${other}/researcher`);
        const now = soon();

        const claimed = await store().claimDeliveries({ owner: "worker-a", ttlMs: 30_000, now, agentId: agent });
        expect(claimed.map((d) => d.id).sort()).toEqual([own.id, child.id].sort());
        for (const { run, id } of [prefixed, foreign, foreignChild]) {
          expect((await store().listDeliveries(run.id)).find((d) => d.id === id), run.agentId).toMatchObject({ status: "pending", attempts: 0, lease: null });
        }

        const theirs = await store().claimDeliveries({ owner: "worker-eu", ttlMs: 30_000, now, agentId: `${agent}-eu` });
        expect(theirs.map((d) => d.id)).toEqual([prefixed.id]);
      });

      it("with agentId, skips other agents' deliveries before the limit", async () => {
        const agent = uniqueId("agent");
        for (let index = 0; index < 3; index += 1) await runWithDelivery({ index }, uniqueId("other-agent"));
        const mine = [(await runWithDelivery({ n: 1 }, agent)).id, (await runWithDelivery({ n: 2 }, `${agent}/helper`)).id];
        const claimed = await store().claimDeliveries({ owner: "worker-a", ttlMs: 30_000, limit: 2, now: soon(), agentId: agent });
        expect(claimed.map((d) => d.id).sort()).toEqual([...mine].sort());
      });

      it("enqueues a delivery id once even when two changes carry it", async () => {
        const { run, id } = await runWithDelivery({ n: 1 });
        await store().appendEvents(run.id, [{ type: "kit.again" }], { delivery: { id, channel: "http", payload: { n: 2 } } });
        const deliveries = await store().listDeliveries(run.id);
        expect(deliveries).toHaveLength(1);
        expect(deliveries[0]?.payload).toEqual({ n: 1 });
      });
    });

    describe("isolation", () => {
      it("hands out copies: mutating returned or passed-in objects never changes stored state", async () => {
        const input = newRun();
        const { run } = await store().createRun(input);
        input.input.metadata.source = "mutated";
        run.status = "failed";
        run.input.message = "mutated";
        const fetched = await store().getRun(run.id);
        expect(fetched).toMatchObject({ status: "queued", input: { message: "hello", metadata: { source: "kit" } } });
        fetched!.lease = { owner: "x", expiresAt: "2000-01-01T00:00:00.000Z", token: 99 };

        const data = { nested: { list: [1] } };
        const call = toolCall(run.id, "c1", { input: { deep: { value: 1 } } });
        const [event] = await store().appendEvents(run.id, [{ type: "kit.write", data }], { toolCall: call });
        data.nested.list.push(2);
        (call.input as { deep: { value: number } }).deep.value = 2;
        (event!.data.nested as { list: number[] }).list.push(3);
        const listed = await store().listEvents(run.id);
        (listed[1]!.data.nested as { list: number[] }).list.push(4);
        const fetchedCall = await store().getToolCall(run.id, "c1");
        (fetchedCall!.input as { deep: { value: number } }).deep.value = 3;

        expect((await store().listEvents(run.id))[1]?.data).toEqual({ nested: { list: [1] } });
        expect((await store().getToolCall(run.id, "c1"))?.input).toEqual({ deep: { value: 1 } });
        expect((await store().getRun(run.id))?.lease).toBeNull();
      });

      it("reads a value back as its JSON, as a durable store keeps it: a Date as its ISO text, an undefined field left out, NaN as null", async () => {
        const at = new Date("2020-01-02T03:04:05.000Z");
        const value = () => ({ at, gone: undefined, nan: Number.NaN, list: [undefined, 1] }) as unknown as JsonObject;
        const asJson = { at: "2020-01-02T03:04:05.000Z", nan: null, list: [null, 1] };
        const { run } = await store().createRun(newRun({ input: { message: "hi", metadata: value() } }));
        expect((await store().getRun(run.id))?.input.metadata).toEqual(asJson);
        await store().appendEvents(run.id, [{ type: "kit.write", data: value() }], {
          run: { output: value() },
          checkpoint: { runId: run.id, continuation: value(), createdAt: new Date().toISOString() },
          delivery: { id: uniqueId("delivery"), channel: "kit", payload: value() },
        });
        const read = await store().getRun(run.id);
        expect(read?.output).toEqual(asJson);
        expect((await store().listEvents(run.id))[1]?.data).toEqual(asJson);
        expect((await store().getCheckpoint(run.id))?.continuation).toEqual(asJson);
        expect((await store().listDeliveries(run.id))[0]?.payload).toEqual(asJson);
      });
    });
  });
}
