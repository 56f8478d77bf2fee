import { describe, expect, it } from "vitest";
import type {
  ConversationMessage,
  ConversationStore,
  FileIndexStore,
  FileListOptions,
  FileRecord,
  MemoryStateStore,
  RuntimeSettingsStore,
  SandboxSessionRecord,
  SandboxSessionStore,
  ScheduleRecord,
  ScheduleStateStore,
  UsageRecord,
  UsageStore,
} from "../../state/index.js";
import type { JsonValue } from "../../json.js";
import { MAX_MEMORY_FILE_BYTES } from "../../state/input-checks.js";
import { stateInputRefusal } from "./refusal.js";
import { clockAt, uniqueId, useSubject, type StateKitFactory } from "./subject.js";

const message = (content: string, role: ConversationMessage["role"] = "user"): ConversationMessage => ({
  role,
  content,
  runId: null,
  createdAt: new Date().toISOString(),
});

/** The `conversations` facet: append-only history, read oldest first. */
export function describeConversationStoreConformance(name: string, factory: StateKitFactory<ConversationStore>): void {
  describe(`${name}: ConversationStore conformance`, () => {
    const store = useSubject(factory);

    it("lists appended messages oldest first, per conversation", async () => {
      const a = uniqueId("conv");
      const b = uniqueId("conv");
      await store().appendConversationMessages(a, [message("1"), message("2", "assistant")]);
      await store().appendConversationMessages(b, [message("other")]);
      await store().appendConversationMessages(a, [{ ...message("3"), runId: "run-1" }]);
      const listed = await store().listConversationMessages(a);
      expect(listed.map((m) => [m.role, m.content, m.runId])).toEqual([
        ["user", "1", null],
        ["assistant", "2", null],
        ["user", "3", "run-1"],
      ]);
      expect((await store().listConversationMessages(b)).map((m) => m.content)).toEqual(["other"]);
    });

    it("returns only the last `limit` messages, still oldest first", async () => {
      const id = uniqueId("conv");
      await store().appendConversationMessages(id, ["1", "2", "3", "4", "5"].map((content) => message(content)));
      expect((await store().listConversationMessages(id, { limit: 2 })).map((m) => m.content)).toEqual(["4", "5"]);
      expect((await store().listConversationMessages(id, { limit: 50 })).map((m) => m.content)).toEqual(["1", "2", "3", "4", "5"]);
      expect(await store().listConversationMessages(id, { limit: 0 })).toEqual([]);
    });

    it("refuses a limit that is not a whole number >= 0 as bad input, on every store alike", async () => {
      const id = uniqueId("conv");
      await store().appendConversationMessages(id, [message("1"), message("2")]);
      for (const limit of [Number.NaN, 1.5, -1]) {
        for (const options of [{ limit }, { limit, agentId: "support" }]) {
          await expect(store().listConversationMessages(id, options), `limit ${limit}${options.agentId ? " of an agent" : ""}`).rejects.toMatchObject(
            stateInputRefusal(`listConversationMessages(conversation "${id}") got limit ${limit}, which is not a whole number of entries`),
          );
        }
      }
    });

    it("returns an empty history for an unknown conversation", async () => {
      expect(await store().listConversationMessages(uniqueId("conv"))).toEqual([]);
    });

    it("keeps every message when 20 appends race", async () => {
      const id = uniqueId("conv");
      await Promise.all(Array.from({ length: 20 }, (_, index) => store().appendConversationMessages(id, [message(`m${index}`)])));
      const listed = await store().listConversationMessages(id);
      expect(listed.map((m) => m.content).sort()).toEqual(Array.from({ length: 20 }, (_, index) => `m${index}`).sort());
    });

    it("lists two agents' messages in one conversation id apart; without agentId, all of them", async () => {
      const id = uniqueId("conv");
      await store().appendConversationMessages(id, [message("a1"), message("a2", "assistant")], { agentId: "support" });
      await store().appendConversationMessages(id, [message("b1")], { agentId: "sales" });
      // A subagent's history is its own agent id's; the message's own agentId field is not the append's.
      await store().appendConversationMessages(id, [message("s1")], { agentId: "support/researcher" });
      await store().appendConversationMessages(id, [{ ...message("a3"), agentId: "sales" }], { agentId: "support" });
      const of = async (agentId?: string) =>
        (await store().listConversationMessages(id, agentId === undefined ? {} : { agentId })).map((m) => [m.content, m.agentId]);
      expect(await of("support")).toEqual([["a1", "support"], ["a2", "support"], ["a3", "support"]]);
      expect(await of("sales")).toEqual([["b1", "sales"]]);
      expect(await of("support/researcher")).toEqual([["s1", "support/researcher"]]);
      expect(await of("support/")).toEqual([]);
      expect(await of()).toEqual([["a1", "support"], ["a2", "support"], ["b1", "sales"], ["s1", "support/researcher"], ["a3", "support"]]);
    });

    it("counts only the agent's messages in `limit`", async () => {
      const id = uniqueId("conv");
      await store().appendConversationMessages(id, ["1", "2", "3"].map((content) => message(content)), { agentId: "support" });
      await store().appendConversationMessages(id, ["x", "y", "z"].map((content) => message(content)), { agentId: "sales" });
      expect((await store().listConversationMessages(id, { agentId: "support", limit: 2 })).map((m) => m.content)).toEqual(["2", "3"]);
      expect((await store().listConversationMessages(id, { agentId: "support", limit: 5 })).map((m) => m.content)).toEqual(["1", "2", "3"]);
      expect(await store().listConversationMessages(id, { agentId: "support", limit: 0 })).toEqual([]);
      expect((await store().listConversationMessages(id, { limit: 2 })).map((m) => m.content)).toEqual(["y", "z"]);
    });

    it("lists messages appended without an agent (legacy) to every agent, agentId null", async () => {
      const id = uniqueId("conv");
      await store().appendConversationMessages(id, [message("old")]);
      await store().appendConversationMessages(id, [message("a1")], { agentId: "support" });
      await store().appendConversationMessages(id, [message("b1")], { agentId: "sales" });
      const of = async (options: { agentId?: string; limit?: number }) =>
        (await store().listConversationMessages(id, options)).map((m) => [m.content, m.agentId]);
      expect(await of({ agentId: "support" })).toEqual([["old", null], ["a1", "support"]]);
      expect(await of({ agentId: "sales" })).toEqual([["old", null], ["b1", "sales"]]);
      expect(await of({ agentId: "sales", limit: 1 })).toEqual([["b1", "sales"]]);
      expect(await of({ agentId: "nobody" })).toEqual([["old", null]]);
    });

    it("refuses a message whose role is neither user nor assistant, appending none of the batch", async () => {
      const id = uniqueId("conv");
      const batch = [message("hi"), message("be brief", "system" as "user")];
      await expect(store().appendConversationMessages(id, batch)).rejects.toMatchObject(
        stateInputRefusal(`appendConversationMessages(conversation "${id}"): messages[1].role must be one of user, assistant, got "system"`),
      );
      expect(await store().listConversationMessages(id)).toEqual([]);
    });

    it("stores copies of the messages it is given and returns copies", async () => {
      const id = uniqueId("conv");
      const input = [message("original")];
      await store().appendConversationMessages(id, input);
      input[0]!.content = "changed";
      const listed = await store().listConversationMessages(id);
      listed[0]!.content = "changed again";
      expect((await store().listConversationMessages(id))[0]?.content).toBe("original");
    });
  });
}

/** The `schedules` facet: recurring work, leased when due. */
export function describeScheduleStateStoreConformance(name: string, factory: StateKitFactory<ScheduleStateStore>): void {
  describe(`${name}: ScheduleStateStore conformance`, () => {
    const store = useSubject(factory);
    const schedule = (id: string, nextRunAt: Date, enabled = true) => ({
      id,
      intervalMs: 60_000,
      nextRunAt: nextRunAt.toISOString(),
      payload: { job: id },
      enabled,
    });

    it("upserts, reads, lists by id and deletes schedules", async () => {
      await store().upsertSchedule(schedule("b", clockAt(0)));
      await store().upsertSchedule(schedule("a", clockAt(0)));
      await store().upsertSchedule({ ...schedule("b", clockAt(5_000)), intervalMs: 5_000 });
      expect(await store().getSchedule("b")).toEqual({ ...schedule("b", clockAt(5_000)), intervalMs: 5_000, lease: null });
      expect((await store().listSchedules()).map((s) => s.id)).toEqual(["a", "b"]);
      await store().deleteSchedule("a");
      expect(await store().getSchedule("a")).toBeUndefined();
      expect((await store().listSchedules()).map((s) => s.id)).toEqual(["b"]);
    });

    it("lists schedules by id in code-point order", async () => {
      for (const id of ["job-\u{1F600}", "job-\uffff", "job-a"]) await store().upsertSchedule(schedule(id, clockAt(0)));
      expect((await store().listSchedules()).map((s) => s.id)).toEqual(["job-a", "job-\uffff", "job-\u{1F600}"]);
    });

    it("claims schedules due at the same time in code-point order of id, as listSchedules lists them", async () => {
      for (const id of ["job-\u{1F600}", "job-\uE000", "job-a"]) await store().upsertSchedule(schedule(id, clockAt(0)));
      const claimed = await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) });
      expect(claimed.map((s) => s.id)).toEqual(["job-a", "job-\uE000", "job-\u{1F600}"]);
    });

    it("claims only enabled schedules that are due, and leases them", async () => {
      await store().upsertSchedule(schedule("due", clockAt(0)));
      await store().upsertSchedule(schedule("later", clockAt(10_000)));
      await store().upsertSchedule(schedule("disabled", clockAt(0), false));
      const claimed = await store().claimDueSchedules({ owner: "scheduler-a", ttlMs: 5_000, now: clockAt(0) });
      expect(claimed.map((s) => s.id)).toEqual(["due"]);
      expect(claimed[0]?.lease).toEqual({ owner: "scheduler-a", expiresAt: clockAt(5_000).toISOString() });
      expect((await store().getSchedule("due"))?.lease?.owner).toBe("scheduler-a");
    });

    it("does not hand a leased schedule to another claimer until the lease expires", async () => {
      await store().upsertSchedule(schedule("job", clockAt(0)));
      expect(await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) })).toHaveLength(1);
      expect(await store().claimDueSchedules({ owner: "b", ttlMs: 5_000, now: clockAt(4_999) })).toHaveLength(0);
      const retaken = await store().claimDueSchedules({ owner: "b", ttlMs: 5_000, now: clockAt(5_000) });
      expect(retaken.map((s) => s.lease?.owner)).toEqual(["b"]);
    });

    it("claims each due schedule once across 5 concurrent claimers", async () => {
      for (let index = 0; index < 6; index += 1) await store().upsertSchedule(schedule(`job-${index}`, clockAt(-index)));
      const claims = await Promise.all(
        Array.from({ length: 5 }, (_, owner) => store().claimDueSchedules({ owner: `s-${owner}`, ttlMs: 60_000, now: clockAt(0), limit: 2 })),
      );
      for (const claim of claims) expect(claim.length).toBeLessThanOrEqual(2);
      const ids = claims.flat().map((s) => s.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.sort()).toEqual(Array.from({ length: 6 }, (_, index) => `job-${index}`).sort());
    });

    it("completes a run by releasing the lease and moving to the next time", async () => {
      await store().upsertSchedule(schedule("job", clockAt(0)));
      await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) });
      await store().completeScheduleRun("job", "a", clockAt(60_000));
      expect(await store().getSchedule("job")).toMatchObject({ lease: null, nextRunAt: clockAt(60_000).toISOString() });
      expect(await store().claimDueSchedules({ owner: "b", ttlMs: 5_000, now: clockAt(59_999) })).toHaveLength(0);
      expect(await store().claimDueSchedules({ owner: "b", ttlMs: 5_000, now: clockAt(60_000) })).toHaveLength(1);
    });

    it("keeps a row re-timed during its dispatch when completed with the time it was claimed at, and releases the lease either way", async () => {
      await store().upsertSchedule(schedule("job", clockAt(0)));
      const [claimed] = await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) });
      // An edit while the lease is held moves the row to 90 s; the dispatch then completes with the old schedule's 60 s.
      await store().upsertSchedule(schedule("job", clockAt(90_000)));
      await store().completeScheduleRun("job", "a", clockAt(60_000), claimed!.nextRunAt);
      expect(await store().getSchedule("job")).toMatchObject({ lease: null, nextRunAt: clockAt(90_000).toISOString() });
      // Not re-timed: the claimed time still stands, so the row moves on.
      const [again] = await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(90_000) });
      await store().completeScheduleRun("job", "a", clockAt(150_000), again!.nextRunAt);
      expect(await store().getSchedule("job")).toMatchObject({ lease: null, nextRunAt: clockAt(150_000).toISOString() });
      await expect(store().completeScheduleRun("job", "a", clockAt(1), "not a time")).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining("claimedNextRunAt") });
    });

    it("keeps a row rewritten during its dispatch with its due time unchanged when completed with the row as claimed, and releases the lease either way", async () => {
      await store().upsertSchedule(schedule("job", clockAt(0)));
      const [claimed] = await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) });
      // A new schedule given while the lease is held keeps the due time passed; the dispatch then completes with the old schedule's 60 s.
      const edited = { ...schedule("job", clockAt(0)), intervalMs: 3_600_000, payload: { job: "job", every: "hour" } };
      await store().upsertSchedule(edited);
      await store().completeScheduleRun("job", "a", clockAt(60_000), claimed!.nextRunAt, claimed);
      expect(await store().getSchedule("job")).toEqual({ ...edited, lease: null });
      // Unchanged since its claim, the row moves on.
      const [again] = await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(1) });
      await store().completeScheduleRun("job", "a", clockAt(3_600_000), again!.nextRunAt, again);
      expect(await store().getSchedule("job")).toMatchObject({ lease: null, nextRunAt: clockAt(3_600_000).toISOString(), payload: edited.payload });
    });

    it("refuses a claimed row of another schedule in completeScheduleRun (AL_ERR_STATE_INPUT_INVALID naming claimed.id) and keeps the lease", async () => {
      await store().upsertSchedule(schedule("job", clockAt(0)));
      const [claimed] = await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) });
      await expect(store().completeScheduleRun("job", "a", clockAt(60_000), claimed!.nextRunAt, { ...claimed!, id: "other" })).rejects.toMatchObject({
        code: "AL_ERR_STATE_INPUT_INVALID",
        message: expect.stringContaining("claimed.id"),
      });
      expect(await store().getSchedule("job")).toMatchObject({ lease: { owner: "a" }, nextRunAt: clockAt(0).toISOString() });
    });

    it("refuses a next run time that is no time (AL_ERR_STATE_INPUT_INVALID naming nextRunAt) and keeps the lease", async () => {
      await store().upsertSchedule(schedule("job", clockAt(0)));
      await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) });
      await expect(store().completeScheduleRun("job", "a", new Date("nope"))).rejects.toMatchObject({
        code: "AL_ERR_STATE_INPUT_INVALID",
        message: expect.stringContaining("nextRunAt"),
      });
      expect(await store().getSchedule("job")).toMatchObject({ lease: { owner: "a" }, nextRunAt: clockAt(0).toISOString() });
      expect(await store().claimDueSchedules({ owner: "b", ttlMs: 5_000, now: clockAt(1) })).toHaveLength(0);
    });

    it("refuses a schedule row no claim could read (AL_ERR_STATE_INPUT_INVALID naming the field), in upsertSchedule and insertSchedule, storing nothing", async () => {
      const rows: Array<[string, Record<string, unknown>]> = [
        ["schedule.id", { id: "" }],
        ["schedule.intervalMs", { intervalMs: -1 }],
        ["schedule.intervalMs", { intervalMs: Number.NaN }],
        ["schedule.intervalMs", { intervalMs: "60000" }],
        ["schedule.nextRunAt", { nextRunAt: "garbage" }],
        ["schedule.nextRunAt", { nextRunAt: undefined }],
        ["schedule.enabled", { enabled: "yes" }],
        ["schedule.enabled", { enabled: undefined }],
        ["schedule.agentId", { agentId: "" }],
      ];
      for (const [field, change] of rows) {
        const row = { ...schedule("bad", clockAt(0)), ...change } as unknown as ReturnType<typeof schedule>;
        await expect(store().upsertSchedule(row), `upsertSchedule with ${field}`).rejects.toMatchObject({
          code: "AL_ERR_STATE_INPUT_INVALID",
          message: expect.stringContaining(field),
        });
        const insert = store().insertSchedule?.bind(store());
        if (insert) {
          await expect(insert(row), `insertSchedule with ${field}`).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining(field) });
        }
      }
      expect(await store().listSchedules()).toEqual([]);
      expect(await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) })).toEqual([]);
    });

    it("refuses a claim for an empty owner, leasing nothing", async () => {
      await store().upsertSchedule(schedule("job", clockAt(0)));
      await expect(store().claimDueSchedules({ owner: "", ttlMs: 5_000, now: clockAt(0) })).rejects.toMatchObject(stateInputRefusal('claimDueSchedules: options.owner must be a non-empty string, got ""'));
      expect((await store().getSchedule("job"))?.lease).toBeNull();
    });

    it("keeps nextRunAt as the ISO UTC time it names, in upsert, insert and replace, as PostgreSQL gives it back", async () => {
      const at = (id: string, nextRunAt: string) => ({ ...schedule(id, clockAt(0)), nextRunAt });
      await store().upsertSchedule(at("upserted", "2031-03-04T10:06:07+05:00"));
      expect((await store().getSchedule("upserted"))?.nextRunAt).toBe(clockAt(0).toISOString());
      if (store().insertSchedule) {
        await store().insertSchedule!(at("inserted", "2031-03-04T10:06:07+05:00"));
        expect((await store().getSchedule("inserted"))?.nextRunAt).toBe(clockAt(0).toISOString());
      }
      if (store().replaceSchedule) {
        // The expected row may name the stored time with its offset: the same moment.
        expect(await store().replaceSchedule!(at("upserted", "2031-03-04T10:06:07+05:00"), at("upserted", "2031-03-04T06:07:07+01:00"))).toBe(true);
        expect((await store().getSchedule("upserted"))?.nextRunAt).toBe(clockAt(60_000).toISOString());
      }
    });

    it("keeps the agent a schedule is written with, and none when written without", async () => {
      await store().upsertSchedule({ ...schedule("job", clockAt(0)), agentId: "agent-a" });
      expect(await store().getSchedule("job")).toEqual({ ...schedule("job", clockAt(0)), agentId: "agent-a", lease: null });
      expect((await store().listSchedules()).map((s) => s.agentId)).toEqual(["agent-a"]);
      await store().upsertSchedule(schedule("job", clockAt(0)));
      expect((await store().getSchedule("job"))?.agentId ?? null).toBeNull();
    });

    it("claims for an agent only its schedules and those of no agent, before the limit", async () => {
      await store().upsertSchedule({ ...schedule("b-first", clockAt(-2)), agentId: "agent-b" });
      await store().upsertSchedule({ ...schedule("b-second", clockAt(-1)), agentId: "agent-b" });
      await store().upsertSchedule({ ...schedule("a-own", clockAt(0)), agentId: "agent-a" });
      await store().upsertSchedule(schedule("no-agent", clockAt(0)));
      const claimed = await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0), limit: 2, agentId: "agent-a" });
      expect(claimed.map((s) => s.id)).toEqual(["a-own", "no-agent"]);
      expect((await store().getSchedule("b-first"))?.lease).toBeNull();
      expect(await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0), agentId: "agent-a" })).toEqual([]);
      const unscoped = await store().claimDueSchedules({ owner: "b", ttlMs: 5_000, now: clockAt(0) });
      expect(unscoped.map((s) => [s.id, s.agentId])).toEqual([
        ["b-first", "agent-b"],
        ["b-second", "agent-b"],
      ]);
    });

    it("inserts a schedule only if none has its id, once across concurrent inserts (insertSchedule, when the store has it)", async (context) => {
      const insert = store().insertSchedule?.bind(store());
      if (!insert) return context.skip();
      expect(await insert(schedule("job", clockAt(0)))).toBe(true);
      expect(await insert({ ...schedule("job", clockAt(5_000)), payload: { job: "second" } })).toBe(false);
      expect(await store().getSchedule("job")).toEqual({ ...schedule("job", clockAt(0)), lease: null });
      const results = await Promise.all(["a", "b", "c", "d"].map((writer) => insert({ ...schedule("raced", clockAt(0)), payload: { writer } })));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = ["a", "b", "c", "d"][results.indexOf(true)];
      expect((await store().getSchedule("raced"))?.payload).toEqual({ writer: winner });
    });

    it("replaces a schedule only while it still equals the row expected, keeping its lease (replaceSchedule, when the store has it)", async (context) => {
      const replace = store().replaceSchedule?.bind(store());
      if (!replace) return context.skip();
      const stored = { ...schedule("job", clockAt(0)), agentId: "agent-a", payload: { job: "job", options: { a: 1, b: [1, 2] } } };
      await store().upsertSchedule(stored);
      await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) });
      // Expected as read back: the same time in another form, the payload's keys in another order.
      const expected = { ...stored, nextRunAt: clockAt(0).toISOString().replace("Z", "+00:00"), payload: { options: { b: [1, 2], a: 1 }, job: "job" } };
      const next = { ...stored, payload: { job: "edited" }, nextRunAt: clockAt(30_000).toISOString() };
      expect(await replace(expected, next)).toBe(true);
      expect(await store().getSchedule("job")).toEqual({ ...next, lease: { owner: "a", expiresAt: clockAt(5_000).toISOString() } });
      // The row expected is no longer there: nothing changes, whatever field differs.
      const changes: Array<Partial<Omit<ScheduleRecord, "lease">>> = [{ payload: { job: "job" } }, { nextRunAt: clockAt(0).toISOString() }, { enabled: false }, { intervalMs: 1 }, { agentId: null }, { agentId: "agent-b" }];
      for (const change of changes) expect(await replace({ ...next, ...change }, { ...next, payload: { job: "lost" } }), JSON.stringify(change)).toBe(false);
      expect((await store().getSchedule("job"))?.payload).toEqual({ job: "edited" });
      // A row deleted is not written again.
      await store().deleteSchedule("job");
      expect(await replace(next, { ...next, payload: { job: "back" } })).toBe(false);
      expect(await store().getSchedule("job")).toBeUndefined();
      // A row written without an agent matches an expected row with agentId null or left out.
      await store().upsertSchedule(schedule("plain", clockAt(0)));
      expect(await replace({ ...schedule("plain", clockAt(0)), agentId: null }, { ...schedule("plain", clockAt(0)), agentId: "agent-a" })).toBe(true);
      expect((await store().getSchedule("plain"))?.agentId).toBe("agent-a");
    });

    it("lets exactly one of concurrent replaces from one row win, and keeps its row (replaceSchedule, when the store has it)", async (context) => {
      const replace = store().replaceSchedule?.bind(store());
      if (!replace) return context.skip();
      const stored = schedule("job", clockAt(0));
      await store().upsertSchedule(stored);
      const writers = ["a", "b", "c", "d"];
      const results = await Promise.all(writers.map((writer) => replace(stored, { ...stored, payload: { writer } })));
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await store().getSchedule("job"))?.payload).toEqual({ writer: writers[results.indexOf(true)] });
      // Two changes of different fields from one row: the loser reads again and applies its change on the winner's row.
      const { lease: _lease, ...row } = (await store().getSchedule("job"))!;
      const [paused, moved] = await Promise.all([replace(row, { ...row, enabled: false }), replace(row, { ...row, nextRunAt: clockAt(90_000).toISOString() })]);
      expect([paused, moved].filter(Boolean)).toHaveLength(1);
      const { lease: _again, ...now } = (await store().getSchedule("job"))!;
      expect(await replace(now, paused ? { ...now, nextRunAt: clockAt(90_000).toISOString() } : { ...now, enabled: false })).toBe(true);
      expect(await store().getSchedule("job")).toMatchObject({ enabled: false, nextRunAt: clockAt(90_000).toISOString() });
    });

    it("deletes a schedule only while it still equals the row expected, whatever its lease (deleteScheduleIf, when the store has it)", async (context) => {
      const deleteIf = store().deleteScheduleIf?.bind(store());
      if (!deleteIf) return context.skip();
      const stored = { ...schedule("job", clockAt(0)), agentId: "agent-a", payload: { job: "job", options: { a: 1, b: [1, 2] } } };
      await store().upsertSchedule(stored);
      await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) });
      // Expected as read back: the same time in another form, the payload's keys in another order.
      expect(await deleteIf({ ...stored, nextRunAt: clockAt(0).toISOString().replace("Z", "+00:00"), payload: { options: { b: [1, 2], a: 1 }, job: "job" } })).toBe(true);
      expect(await store().getSchedule("job")).toBeUndefined();
      // A row gone: nothing to delete.
      expect(await deleteIf(stored)).toBe(false);
      // A row changed since it was read stays, whatever field differs.
      await store().upsertSchedule(stored);
      const changes: Array<Partial<Omit<ScheduleRecord, "lease">>> = [{ payload: { job: "job" } }, { nextRunAt: clockAt(1).toISOString() }, { enabled: false }, { intervalMs: 1 }, { agentId: null }, { agentId: "agent-b" }];
      for (const change of changes) expect(await deleteIf({ ...stored, ...change }), JSON.stringify(change)).toBe(false);
      expect(await store().getSchedule("job")).toMatchObject({ ...stored });
      // A row deleted and written again under its id by another writer is not the row read: it stays.
      await store().deleteSchedule("job");
      const recreated = { ...stored, payload: { job: "job", instance: "second" } };
      await store().upsertSchedule(recreated);
      expect(await deleteIf(stored)).toBe(false);
      expect(await store().getSchedule("job")).toEqual({ ...recreated, lease: null });
      // A row written without an agent matches an expected row with agentId null or left out.
      await store().upsertSchedule(schedule("plain", clockAt(0)));
      expect(await deleteIf({ ...schedule("plain", clockAt(0)), agentId: null })).toBe(true);
      expect((await store().listSchedules()).map((s) => s.id)).toEqual(["job"]);
    });

    it("lets exactly one of a delete and concurrent replaces from one row win (deleteScheduleIf, when the store has it)", async (context) => {
      const deleteIf = store().deleteScheduleIf?.bind(store());
      if (!deleteIf) return context.skip();
      const stored = schedule("job", clockAt(0));
      await store().upsertSchedule(stored);
      const deletes = await Promise.all([deleteIf(stored), deleteIf(stored), deleteIf(stored)]);
      expect(deletes.filter(Boolean)).toHaveLength(1);
      expect(await store().getSchedule("job")).toBeUndefined();
      const replace = store().replaceSchedule?.bind(store());
      if (!replace) return;
      await store().upsertSchedule(stored);
      const [deleted, ...replaced] = await Promise.all([deleteIf(stored), replace(stored, { ...stored, payload: { writer: "a" } }), replace(stored, { ...stored, payload: { writer: "b" } })]);
      expect([deleted, ...replaced].filter(Boolean)).toHaveLength(1);
      const after = await store().getSchedule("job");
      if (deleted) expect(after).toBeUndefined();
      else expect(after?.payload).toEqual({ writer: replaced[0] ? "a" : "b" });
    });

    it("refuses a conditional delete of a row no claim could read (AL_ERR_STATE_INPUT_INVALID naming the field), changing nothing", async (context) => {
      const deleteIf = store().deleteScheduleIf?.bind(store());
      if (!deleteIf) return context.skip();
      const stored = schedule("job", clockAt(0));
      await store().upsertSchedule(stored);
      const calls: Array<[string, Record<string, unknown>]> = [
        ["expected.nextRunAt", { nextRunAt: "garbage" }],
        ["expected.enabled", { enabled: "yes" }],
        ["expected.intervalMs", { intervalMs: -1 }],
        ["expected.id", { id: "" }],
      ];
      for (const [field, change] of calls) {
        await expect(deleteIf({ ...stored, ...change } as typeof stored), field).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining(field) });
      }
      expect(await store().listSchedules()).toEqual([{ ...stored, lease: null }]);
    });

    it("refuses a replace of rows no claim could read, or of two ids (AL_ERR_STATE_INPUT_INVALID naming the field), changing nothing", async (context) => {
      const replace = store().replaceSchedule?.bind(store());
      if (!replace) return context.skip();
      const stored = schedule("job", clockAt(0));
      await store().upsertSchedule(stored);
      const calls: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
        ["expected.nextRunAt", { nextRunAt: "garbage" }, {}],
        ["next.enabled", {}, { enabled: "yes" }],
        ["next.intervalMs", {}, { intervalMs: -1 }],
        ["next.id", {}, { id: "other" }],
      ];
      for (const [field, expectedChange, nextChange] of calls) {
        await expect(replace({ ...stored, ...expectedChange } as typeof stored, { ...stored, payload: { job: "bad" }, ...nextChange } as typeof stored), field).rejects.toMatchObject({
          code: "AL_ERR_STATE_INPUT_INVALID",
          message: expect.stringContaining(field),
        });
      }
      expect(await store().listSchedules()).toEqual([{ ...stored, lease: null }]);
    });

    it("keeps a live lease when the schedule is upserted again", async () => {
      await store().upsertSchedule(schedule("job", clockAt(0)));
      await store().claimDueSchedules({ owner: "a", ttlMs: 5_000, now: clockAt(0) });
      await store().upsertSchedule({ ...schedule("job", clockAt(0)), payload: { job: "edited" } });
      expect(await store().claimDueSchedules({ owner: "b", ttlMs: 5_000, now: clockAt(1) })).toHaveLength(0);
      expect((await store().getSchedule("job"))?.payload).toEqual({ job: "edited" });
    });
  });
}

/** The `files` facet: the index of files stored in blobs under `/files`. */
export function describeFileIndexStoreConformance(name: string, factory: StateKitFactory<FileIndexStore>): void {
  describe(`${name}: FileIndexStore conformance`, () => {
    const store = useSubject(factory);
    const createdAt = new Date().toISOString();
    const file = (path: string, size = 1): FileRecord => ({
      path,
      blobKey: `blobs/${path}`,
      size,
      contentType: "text/plain",
      sha256: "0".repeat(64),
      runId: null,
      createdAt,
    });

    it("puts, overwrites, reads and deletes file records by path", async () => {
      await store().putFileRecord(file("/files/a.txt", 1));
      await store().putFileRecord(file("/files/a.txt", 2));
      expect(await store().getFileRecord("/files/a.txt")).toEqual(file("/files/a.txt", 2));
      await store().deleteFileRecord("/files/a.txt");
      expect(await store().getFileRecord("/files/a.txt")).toBeUndefined();
      await store().deleteFileRecord("/files/never-existed.txt");
    });

    it("refuses a record whose size is not a whole number of bytes >= 0, or whose path is empty, keeping what was there", async () => {
      const record = file("/files/kit.txt", 3);
      await store().putFileRecord(record);
      for (const size of [-1, 1.5, Number.NaN]) {
        await expect(store().putFileRecord({ ...record, size })).rejects.toMatchObject(stateInputRefusal(`putFileRecord: record.size must be a whole number of bytes >= 0, got ${size}`));
      }
      await expect(store().putFileRecord({ ...record, path: "" })).rejects.toMatchObject(stateInputRefusal('putFileRecord: record.path must be a non-empty string, got ""'));
      expect(await store().getFileRecord(record.path)).toEqual(record);
      expect(await store().getFileRecord("")).toBeUndefined();
    });

    it("lists records under a prefix, sorted by path", async () => {
      for (const path of ["/files/b/2.txt", "/files/a.txt", "/files/b/1.txt", "/other/x.txt"]) await store().putFileRecord(file(path));
      expect((await store().listFileRecords({ prefix: "/files/b/" })).map((f) => f.path)).toEqual(["/files/b/1.txt", "/files/b/2.txt"]);
      expect((await store().listFileRecords()).map((f) => f.path)).toEqual(["/files/a.txt", "/files/b/1.txt", "/files/b/2.txt", "/other/x.txt"]);
    });

    it("leaves out the records under excludePrefix, whatever sorts around them", async () => {
      for (const path of ["/files/attachments/r1/a.png", "/files/z.txt", "/files/attachments/r2/b.png", "/files/a.txt", "/files/attachmentsX.txt", "/other/x.txt", "/files/attachments0.txt", "/files/attachments.txt", "/files/\u00e9a.txt", "/files/\u00eab.txt"]) {
        await store().putFileRecord(file(path));
      }
      const list = async (options: { prefix?: string; excludePrefix?: string }) => (await store().listFileRecords(options)).map((f) => f.path);
      const kept = ["/files/a.txt", "/files/attachments.txt", "/files/attachments0.txt", "/files/attachmentsX.txt", "/files/z.txt", "/files/\u00e9a.txt", "/files/\u00eab.txt"];
      expect(await list({ prefix: "/files", excludePrefix: "/files/attachments/" })).toEqual(kept);
      // Just past the excluded range, and a last character outside ASCII.
      expect(await list({ prefix: "/files/", excludePrefix: "/files/\u00e9" })).toEqual([...kept.slice(0, 5), "/files/attachments/r1/a.png", "/files/attachments/r2/b.png", "/files/\u00eab.txt"].sort((a, b) => (a < b ? -1 : 1)));
      expect(await list({ prefix: "/files/", excludePrefix: "/files/attachments" })).toEqual(["/files/a.txt", "/files/z.txt", "/files/\u00e9a.txt", "/files/\u00eab.txt"]);
      expect(await list({ excludePrefix: "/files/" })).toEqual(["/other/x.txt"]);
      expect(await list({ excludePrefix: "" })).toEqual([]);
      expect(await list({ prefix: "/files/attachments/", excludePrefix: "/files/attachments/r1/" })).toEqual(["/files/attachments/r2/b.png"]);
      expect(await list({ prefix: "/files/attachments/r2/", excludePrefix: "/nowhere/" })).toEqual(["/files/attachments/r2/b.png"]);
    });

    it("sorts paths in code-point order: characters above U+FFFF after U+E000-U+FFFF", async () => {
      const paths = ["/files/\u{1F600}/b.txt", "/files/\uffff.txt", "/files/\u{1F600}.txt", "/files/\ue000.txt", "/files/\ud7ff.txt", "/files/\u{10000}.txt", "/files/a.txt"];
      for (const path of paths) await store().putFileRecord(file(path));
      const inCodePointOrder = ["/files/a.txt", "/files/\ud7ff.txt", "/files/\ue000.txt", "/files/\uffff.txt", "/files/\u{10000}.txt", "/files/\u{1F600}.txt", "/files/\u{1F600}/b.txt"];
      const list = async (options: FileListOptions) => (await store().listFileRecords(options)).map((f) => f.path);
      expect(await list({ prefix: "/files/" })).toEqual(inCodePointOrder);
      expect(await list({ prefix: "/files/", excludePrefix: "/files/\uffff" })).toEqual(inCodePointOrder.filter((path) => !path.startsWith("/files/\uffff")));
      expect(await list({ prefix: "/files/", excludePrefix: "/files/\u{1F600}" })).toEqual(inCodePointOrder.slice(0, 5));
      expect(await list({ prefix: "/files/\u{1F600}" })).toEqual(inCodePointOrder.slice(5));
      const first = store().firstFileRecords;
      if (first) expect(await first.call(store(), { prefix: "/files/", excludePrefix: "/files/\ue000" }, 4)).toEqual({ records: (await store().listFileRecords({ prefix: "/files/", excludePrefix: "/files/\ue000" })).slice(0, 4), total: 6 });
    });

    it("gives the first records of a listing and how many it has, when it has firstFileRecords", async (context) => {
      const subject = store();
      if (!subject.firstFileRecords) return context.skip();
      for (const path of ["/files/attachments/r1/a.png", "/files/z.txt", "/files/attachments/r2/b.png", "/files/a.txt", "/files/attachmentsX.txt", "/files/attachments0.txt", "/other/x.txt", "/files/m.txt"]) {
        await subject.putFileRecord(file(path));
      }
      const listings = [
        {},
        { prefix: "/files/" },
        { prefix: "/files", excludePrefix: "/files/attachments/" },
        { prefix: "/files/attachments/", excludePrefix: "/files/attachments/r1/" },
        { prefix: "/files/attachments/r2/", excludePrefix: "/files/" },
        { prefix: "/files/", excludePrefix: "/other/" },
        { excludePrefix: "" },
        { prefix: "/nothing/" },
      ];
      for (const options of listings) {
        const listed = await subject.listFileRecords(options);
        for (const limit of [0, 1, 3, 100]) {
          expect(await subject.firstFileRecords(options, limit), `${JSON.stringify(options)} ${limit}`).toEqual({ records: listed.slice(0, limit), total: listed.length });
        }
      }
      for (const limit of [-1, 0.5, Number.NaN]) {
        await expect(subject.firstFileRecords({}, limit), `limit ${limit}`).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining("firstFileRecords") });
      }
    });
  });
}

/** The `usage` facet: token and cost accounting, idempotent per model call. */
export function describeUsageStoreConformance(name: string, factory: StateKitFactory<UsageStore>): void {
  describe(`${name}: UsageStore conformance`, () => {
    const store = useSubject(factory);
    const usage = (id: string, runId: string, conversationId: string | null, inputTokens = 10): UsageRecord => ({
      id,
      runId,
      conversationId,
      provider: "kit",
      model: "kit-model",
      inputTokens,
      outputTokens: 5,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0.001,
      createdAt: new Date().toISOString(),
    });

    it("counts a usage id once even when it is recorded twice", async () => {
      const runId = uniqueId("run");
      await store().recordUsage(usage("u1", runId, null, 10));
      await store().recordUsage(usage("u1", runId, null, 999));
      await Promise.all([store().recordUsage(usage("u2", runId, null)), store().recordUsage(usage("u2", runId, null))]);
      const listed = await store().listUsage({ runId });
      expect(listed.map((u) => u.id).sort()).toEqual(["u1", "u2"]);
      expect(listed.find((u) => u.id === "u1")?.inputTokens).toBe(10);
    });

    it("refuses a record with a count or cost that is no finite number, or a createdAt that is no time, recording nothing", async () => {
      const runId = uniqueId("run");
      const rows: Array<[Partial<UsageRecord>, string]> = [
        [{ inputTokens: Number.NaN }, "record.inputTokens must be a finite number, got NaN"],
        [{ outputTokens: Number.POSITIVE_INFINITY }, "record.outputTokens must be a finite number, got Infinity"],
        [{ costUsd: "0.1" as never }, 'record.costUsd must be a finite number, got "0.1"'],
        [{ createdAt: "yesterday" }, 'record.createdAt must be an ISO-8601 time, got "yesterday"'],
        [{ id: "" }, 'record.id must be a non-empty string, got ""'],
      ];
      for (const [change, problem] of rows) {
        await expect(store().recordUsage({ ...usage(uniqueId("usage"), runId, null), ...change }), problem).rejects.toMatchObject(stateInputRefusal(`recordUsage: ${problem}`));
      }
      expect(await store().listUsage({ runId })).toEqual([]);
    });

    it("keeps a record's createdAt as the ISO UTC time it names, as PostgreSQL gives it back", async () => {
      const record = { ...usage(uniqueId("usage"), uniqueId("run"), null), createdAt: "2024-01-01T12:00:00+05:00" };
      await store().recordUsage(record);
      expect(await store().listUsage({ runId: record.runId })).toEqual([expect.objectContaining({ id: record.id, createdAt: "2024-01-01T07:00:00.000Z" })]);
    });

    it("filters by run and by conversation", async () => {
      const runA = uniqueId("run");
      const runB = uniqueId("run");
      const conversation = uniqueId("conv");
      await store().recordUsage(usage(uniqueId("u"), runA, conversation));
      await store().recordUsage(usage(uniqueId("u"), runB, conversation));
      await store().recordUsage(usage(uniqueId("u"), runB, null));
      expect(await store().listUsage({ runId: runA })).toHaveLength(1);
      expect(await store().listUsage({ runId: runB })).toHaveLength(2);
      expect(await store().listUsage({ conversationId: conversation })).toHaveLength(2);
      expect(await store().listUsage({ runId: runB, conversationId: conversation })).toHaveLength(1);
    });

    it("keeps the agent a record was written with; one written without an agent reads back with none", async () => {
      const runId = uniqueId("run");
      await store().recordUsage({ ...usage("agent-a", runId, null), agentId: "support" });
      await store().recordUsage({ ...usage("agent-sub", runId, null), agentId: "support/researcher" });
      await store().recordUsage({ ...usage("agent-null", runId, null), agentId: null });
      await store().recordUsage(usage("agent-none", runId, null));
      const listed = await store().listUsage({ runId });
      expect(listed.map((u) => [u.id, u.agentId ?? null])).toEqual([
        ["agent-a", "support"],
        ["agent-sub", "support/researcher"],
        ["agent-null", null],
        ["agent-none", null],
      ]);
    });

    it("lists a conversation's usage of one agent: its own, its subagents' and those without an agent, not another agent's", async () => {
      const conversation = uniqueId("conv");
      const runId = uniqueId("run");
      // "support-eu" starts with "support" without the "/" of a subagent: another agent.
      const written: Array<[string, string | null | undefined]> = [
        ["support", "support"],
        ["eu", "support-eu"],
        ["researcher", "support/researcher"],
        ["sales", "sales"],
        ["legacy-null", null],
        ["eu-researcher", "support-eu/researcher"],
        ["legacy-none", undefined],
        ["support-again", "support"],
      ];
      for (const [id, agentId] of written) {
        const record = usage(`${conversation}-${id}`, runId, conversation);
        await store().recordUsage(agentId === undefined ? record : { ...record, agentId });
      }
      // The same agent in another conversation is not this conversation's.
      await store().recordUsage({ ...usage(uniqueId("u"), runId, uniqueId("conv")), agentId: "support" });
      const of = async (filter: { agentId?: string; runId?: string }) =>
        (await store().listUsage({ conversationId: conversation, ...filter })).map((u) => u.id.slice(conversation.length + 1));
      expect(await of({ agentId: "support" })).toEqual(["support", "researcher", "legacy-null", "legacy-none", "support-again"]);
      expect(await of({ agentId: "support-eu" })).toEqual(["eu", "legacy-null", "eu-researcher", "legacy-none"]);
      expect(await of({ agentId: "support/researcher" })).toEqual(["researcher", "legacy-null", "legacy-none"]);
      expect(await of({ agentId: "sup" })).toEqual(["legacy-null", "legacy-none"]);
      expect(await of({ agentId: "support", runId })).toEqual(["support", "researcher", "legacy-null", "legacy-none", "support-again"]);
      expect(await of({ agentId: "support", runId: uniqueId("run") })).toEqual([]);
      expect(await of({})).toEqual(written.map(([id]) => id));
      expect((await store().listUsage({ runId, agentId: "sales" })).map((u) => u.id.slice(conversation.length + 1))).toEqual(["sales", "legacy-null", "legacy-none"]);
    });

    it("lists only the records since a time, with the agent's filter too, in the order recorded", async () => {
      const conversation = uniqueId("conv");
      const runId = uniqueId("run");
      const at = (id: string, createdAt: string, agentId?: string) => store().recordUsage({ ...usage(`${conversation}-${id}`, runId, conversation), createdAt, ...(agentId ? { agentId } : {}) });
      await at("yesterday", "2026-03-01T23:59:59.999Z", "support");
      await at("midnight", "2026-03-02T00:00:00.000Z", "support");
      await at("other-agent", "2026-03-02T08:00:00.000Z", "support-eu");
      await at("morning", "2026-03-02T09:30:00.000Z");
      await at("noon", "2026-03-02T12:00:00.000Z", "support");
      const of = async (filter: { agentId?: string; since: string }) => (await store().listUsage({ conversationId: conversation, ...filter })).map((u) => u.id.slice(conversation.length + 1));
      expect(await of({ since: "2026-03-02T00:00:00.000Z" })).toEqual(["midnight", "other-agent", "morning", "noon"]);
      expect(await of({ since: "2026-03-02T00:00:00.000Z", agentId: "support" })).toEqual(["midnight", "morning", "noon"]);
      expect(await of({ since: "2026-03-02T12:00:00.001Z", agentId: "support" })).toEqual([]);
      // The same moment written without milliseconds.
      expect(await of({ since: "2026-03-02T12:00:00Z", agentId: "support" })).toEqual(["noon"]);
      expect((await store().listUsage({ runId, since: "2026-03-02T09:30:00.000Z" })).map((u) => u.id.slice(conversation.length + 1))).toEqual(["morning", "noon"]);
    });

    it("compares `since` with a record's time, also when the record was written with an offset", async () => {
      const runId = uniqueId("run");
      // 12:00 at +05:00 is 07:00 UTC: before 08:00Z, though its text sorts after it.
      await store().recordUsage({ ...usage("offset", runId, null), createdAt: "2020-01-01T12:00:00+05:00" });
      await store().recordUsage({ ...usage("utc", runId, null), createdAt: "2020-01-01T07:30:00.000Z" });
      const since = async (at: string) => (await store().listUsage({ runId, since: at })).map((u) => u.id);
      expect(await since("2020-01-01T08:00:00Z")).toEqual([]);
      expect(await since("2020-01-01T07:15:00.000Z")).toEqual(["utc"]);
      expect(await since("2020-01-01T07:00:00.000Z")).toEqual(["offset", "utc"]);
      expect(await since("2020-01-01T11:59:00+05:00")).toEqual(["offset", "utc"]);
    });
  });
}

/** The `sandboxSessions` facet: which sandbox session serves which key. */
export function describeSandboxSessionStoreConformance(name: string, factory: StateKitFactory<SandboxSessionStore>): void {
  describe(`${name}: SandboxSessionStore conformance`, () => {
    const store = useSubject(factory);
    const at = new Date().toISOString();
    const session = (key: string, sessionId: string): SandboxSessionRecord => ({
      key,
      adapter: "local",
      sessionId,
      data: { dir: `/tmp/${sessionId}` },
      createdAt: at,
      updatedAt: at,
    });

    it("puts, replaces, reads, lists and deletes sessions by key", async () => {
      await store().putSandboxSession(session("run-b", "s1"));
      await store().putSandboxSession(session("run-a", "s2"));
      await store().putSandboxSession(session("run-b", "s3"));
      expect(await store().getSandboxSession("run-b")).toEqual(session("run-b", "s3"));
      expect((await store().listSandboxSessions()).map((s) => [s.key, s.sessionId])).toEqual([
        ["run-a", "s2"],
        ["run-b", "s3"],
      ]);
      await store().deleteSandboxSession("run-b");
      expect(await store().getSandboxSession("run-b")).toBeUndefined();
      expect(await store().listSandboxSessions()).toHaveLength(1);
    });

    it("refuses a session whose data is undefined (AL_ERR_STATE_INPUT_INVALID naming record.data) and keeps the stored one", async () => {
      await store().putSandboxSession(session("run-a", "s1"));
      const undefinedData = { ...session("run-a", "s2"), data: undefined } as unknown as SandboxSessionRecord;
      await expect(store().putSandboxSession(undefinedData)).rejects.toMatchObject({
        code: "AL_ERR_STATE_INPUT_INVALID",
        message: expect.stringContaining("record.data"),
      });
      expect(await store().getSandboxSession("run-a")).toEqual(session("run-a", "s1"));
      // null is the value for "no data".
      await store().putSandboxSession({ ...session("run-a", "s3"), data: null });
      expect((await store().getSandboxSession("run-a"))?.data).toBeNull();
    });

    it("lists sessions by key in code-point order", async () => {
      for (const key of ["run-\u{1F600}", "run-\uffff", "run-a"]) await store().putSandboxSession(session(key, key));
      expect((await store().listSandboxSessions()).map((s) => s.key)).toEqual(["run-a", "run-\uffff", "run-\u{1F600}"]);
    });
  });
}

/** The `memory` facet: the agent's durable notes, addressed by path. */
export function describeMemoryStateStoreConformance(name: string, factory: StateKitFactory<MemoryStateStore>): void {
  describe(`${name}: MemoryStateStore conformance`, () => {
    const store = useSubject(factory);

    it("writes, overwrites, reads and deletes memory by path", async () => {
      expect(await store().readMemory("notes/a.md")).toBeUndefined();
      await store().writeMemory("notes/a.md", "first");
      await store().writeMemory("notes/a.md", "second");
      const record = await store().readMemory("notes/a.md");
      expect(record).toMatchObject({ path: "notes/a.md", content: "second" });
      expect(Number.isNaN(Date.parse(record!.updatedAt))).toBe(false);
      await store().deleteMemory("notes/a.md");
      expect(await store().readMemory("notes/a.md")).toBeUndefined();
    });

    it("refuses an empty path and content that is not a string (AL_ERR_STATE_INPUT_INVALID naming the field), storing nothing", async () => {
      await store().writeMemory("kept.md", "before");
      const refused = (path: unknown, content: unknown, field: string) =>
        expect(store().writeMemory(path as string, content as string), `${JSON.stringify(path)} / ${String(content)}`).rejects.toMatchObject({
          code: "AL_ERR_STATE_INPUT_INVALID",
          message: expect.stringContaining(`${field} must be`),
          details: { field },
        });
      await refused("", "root", "path");
      await refused(undefined, "x", "path");
      await refused(42, "x", "path");
      for (const content of [{ a: 1 }, 42, null, undefined, Buffer.from("bytes")]) await refused("kept.md", content, "content");
      await refused("fresh.md", { a: 1 }, "content");
      expect(await store().listMemory()).toEqual(["kept.md"]);
      expect((await store().readMemory("kept.md"))?.content).toBe("before");
    });

    it("keeps a memory file of MAX_MEMORY_FILE_BYTES of UTF-8 and refuses a larger one (AL_ERR_MEMORY_TOO_LARGE), keeping what was there", async () => {
      // Two bytes a character: a limit counted in characters would take this file.
      const atLimit = "\u00e9".repeat(MAX_MEMORY_FILE_BYTES / 2);
      await store().writeMemory("big.md", atLimit);
      expect((await store().readMemory("big.md"))?.content).toBe(atLimit);
      await expect(store().writeMemory("big.md", `${atLimit}x`)).rejects.toMatchObject({
        code: "AL_ERR_MEMORY_TOO_LARGE",
        details: { path: "big.md", size: MAX_MEMORY_FILE_BYTES + 1, limit: MAX_MEMORY_FILE_BYTES },
      });
      await expect(store().writeMemory("fresh.md", `${atLimit}x`)).rejects.toMatchObject({ code: "AL_ERR_MEMORY_TOO_LARGE" });
      expect((await store().readMemory("big.md"))?.content).toBe(atLimit);
      expect(await store().listMemory()).toEqual(["big.md"]);
    });

    it("keeps text with NUL or a lone surrogate exactly, or refuses it (AL_ERR_STATE_INPUT_INVALID), never storing it changed or merging two paths", async () => {
      const kept = async (write: () => Promise<unknown>): Promise<boolean> => {
        try {
          await write();
          return true;
        } catch (error) {
          expect((error as { code?: unknown }).code, String(error)).toBe("AL_ERR_STATE_INPUT_INVALID");
          return false;
        }
      };
      for (const content of ["half an emoji \ud83d", "a \u0000 byte"]) {
        await store().writeMemory("odd/content.md", "before");
        if (await kept(() => store().writeMemory("odd/content.md", content))) expect((await store().readMemory("odd/content.md"))?.content).toBe(content);
        else expect((await store().readMemory("odd/content.md"))?.content).toBe("before");
      }
      // Two paths that differ only in a lone surrogate stay two, or are refused.
      const first = await kept(() => store().writeMemory("odd/\ud800.md", "first"));
      const second = await kept(() => store().writeMemory("odd/\udc00.md", "second"));
      if (first) expect((await store().readMemory("odd/\ud800.md"))?.content).toBe("first");
      if (second) expect((await store().readMemory("odd/\udc00.md"))?.content).toBe("second");
    });

    it("lists paths under a prefix, sorted", async () => {
      for (const path of ["notes/b.md", "todo.md", "notes/a.md", "notes-old/c.md"]) await store().writeMemory(path, path);
      expect(await store().listMemory("notes/")).toEqual(["notes/a.md", "notes/b.md"]);
      expect(await store().listMemory()).toEqual(["notes-old/c.md", "notes/a.md", "notes/b.md", "todo.md"]);
      expect(await store().listMemory("nothing/")).toEqual([]);
    });

    it("lists paths with their sizes in UTF-8 bytes, as listMemory does, when it has listMemoryEntries", async (context) => {
      const subject = store();
      if (!subject.listMemoryEntries) return context.skip();
      await subject.writeMemory("notes/a.md", "h\u00e9llo");
      await subject.writeMemory("notes/b.md", "");
      await subject.writeMemory("notes-old/c.md", "x".repeat(10));
      expect(await subject.listMemoryEntries("notes/")).toEqual([
        { path: "notes/a.md", size: 6 },
        { path: "notes/b.md", size: 0 },
      ]);
      expect((await subject.listMemoryEntries()).map((entry) => entry.path)).toEqual(await subject.listMemory());
      expect(await subject.listMemoryEntries("nothing/")).toEqual([]);
    });

    it("sorts paths in code-point order: characters above U+FFFF after U+E000-U+FFFF", async () => {
      for (const path of ["notes/\u{1F600}.md", "notes/\uffff.md", "notes/a.md", "notes/\ue000.md", "notes/\u{10000}.md"]) await store().writeMemory(path, path);
      const inCodePointOrder = ["notes/a.md", "notes/\ue000.md", "notes/\uffff.md", "notes/\u{10000}.md", "notes/\u{1F600}.md"];
      expect(await store().listMemory("notes/")).toEqual(inCodePointOrder);
      expect(await store().listMemory("notes/\u{1F600}")).toEqual(["notes/\u{1F600}.md"]);
      const entries = store().listMemoryEntries;
      if (entries) expect((await entries.call(store(), "notes/")).map((entry) => entry.path)).toEqual(inCodePointOrder);
      const first = store().firstMemoryEntries;
      if (first) expect((await first.call(store(), "notes/", 3)).entries.map((entry) => entry.path)).toEqual(inCodePointOrder.slice(0, 3));
    });

    it("lists the first files under a prefix and how many there are, when it has firstMemoryEntries", async (context) => {
      const subject = store();
      if (!subject.firstMemoryEntries || !subject.listMemoryEntries) return context.skip();
      for (const path of ["notes/d.md", "notes/b.md", "todo.md", "notes/a.md", "notes-old/c.md", "notes/c.md", "notes/e.md"]) await subject.writeMemory(path, `${path} \u00e9`);
      const notes = await subject.listMemoryEntries("notes/");
      expect(notes.map((entry) => entry.path)).toEqual(["notes/a.md", "notes/b.md", "notes/c.md", "notes/d.md", "notes/e.md"]);
      for (const limit of [0, 1, 2, 5, 9]) expect(await subject.firstMemoryEntries("notes/", limit), `limit ${limit}`).toEqual({ entries: notes.slice(0, limit), total: 5 });
      expect(await subject.firstMemoryEntries(undefined, 2)).toEqual({ entries: (await subject.listMemoryEntries()).slice(0, 2), total: 7 });
      expect(await subject.firstMemoryEntries("notes", 9)).toMatchObject({ total: 6 });
      expect(await subject.firstMemoryEntries("nothing/", 3)).toEqual({ entries: [], total: 0 });
      for (const limit of [-1, 1.5, Number.NaN]) {
        await expect(subject.firstMemoryEntries("notes/", limit), `limit ${limit}`).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringContaining("firstMemoryEntries") });
      }
    });

    it("lists the size a file was last written with, and no file deleted", async (context) => {
      const subject = store();
      if (!subject.listMemoryEntries) return context.skip();
      await subject.writeMemory("notes/a.md", "short");
      await subject.writeMemory("notes/b.md", "gone");
      await subject.writeMemory("notes/a.md", "\u00e9".repeat(20));
      await subject.deleteMemory("notes/b.md");
      expect(await subject.listMemoryEntries("notes/")).toEqual([{ path: "notes/a.md", size: 40 }]);
      expect(await subject.listMemory("notes/")).toEqual(["notes/a.md"]);
      await subject.writeMemory("notes/b.md", "back");
      expect(await subject.listMemoryEntries("notes/")).toEqual([
        { path: "notes/a.md", size: 40 },
        { path: "notes/b.md", size: 4 },
      ]);
    });
  });
}

/** The `settings` facet: operator settings with an audit trail written atomically with each value. */
export function describeRuntimeSettingsStoreConformance(name: string, factory: StateKitFactory<RuntimeSettingsStore>): void {
  describe(`${name}: RuntimeSettingsStore conformance`, () => {
    const store = useSubject(factory);

    it("writes a value with an audit event naming the previous value", async () => {
      expect(await store().getSetting("model")).toBeUndefined();
      const first = await store().putSetting("model", { spec: "a" }, { actor: "ops", reason: "initial" });
      expect(first).toMatchObject({ key: "model", value: { spec: "a" }, previous: null, actor: "ops", reason: "initial" });
      const second = await store().putSetting("model", { spec: "b" }, { actor: "ops" });
      expect(second).toMatchObject({ value: { spec: "b" }, previous: { spec: "a" }, reason: null });
      expect(second.id).not.toBe(first.id);
      expect(await store().getSetting("model")).toEqual({ spec: "b" });
    });

    it("lists the audit trail newest first, by key and up to limit", async () => {
      await store().putSetting("a", 1, { actor: "ops" });
      await store().putSetting("b", true, { actor: "ops" });
      await store().putSetting("a", 2, { actor: "ops" });
      expect((await store().listSettingAudit()).map((e) => [e.key, e.value])).toEqual([
        ["a", 2],
        ["b", true],
        ["a", 1],
      ]);
      expect((await store().listSettingAudit({ key: "a" })).map((e) => e.value)).toEqual([2, 1]);
      expect((await store().listSettingAudit({ limit: 1 })).map((e) => e.value)).toEqual([2]);
    });

    it("refuses an audit limit that is not a whole number >= 0 as bad input, on every store alike", async () => {
      await store().putSetting("a", 1, { actor: "ops" });
      for (const limit of [Number.NaN, 1.5, -1]) {
        for (const options of [{ limit }, { limit, key: "a" }]) {
          await expect(store().listSettingAudit(options), `limit ${limit}${options.key ? " of a key" : ""}`).rejects.toMatchObject(stateInputRefusal(`listSettingAudit got limit ${limit}, which is not a whole number of entries`));
        }
      }
      expect(await store().listSettingAudit({ limit: 0 })).toEqual([]);
    });

    it("keeps value and audit in step when 10 writers race on one key", async () => {
      await Promise.all(Array.from({ length: 10 }, (_, writer) => store().putSetting("limit", writer, { actor: `w${writer}` })));
      const trail = await store().listSettingAudit({ key: "limit" });
      expect(trail).toHaveLength(10);
      // Newest first: each event's `previous` is the value of the event written just before it.
      for (let index = 0; index < trail.length - 1; index += 1) expect(trail[index]!.previous).toEqual(trail[index + 1]!.value);
      expect(trail[trail.length - 1]!.previous).toBeNull();
      expect(await store().getSetting("limit")).toEqual(trail[0]!.value);
    });

    it("refuses an undefined value (AL_ERR_STATE_INPUT_INVALID naming value), writing neither value nor audit event", async () => {
      await store().putSetting("model", "a", { actor: "ops" });
      await expect(store().putSetting("model", undefined as unknown as JsonValue, { actor: "ops" })).rejects.toMatchObject({
        code: "AL_ERR_STATE_INPUT_INVALID",
        message: expect.stringContaining("value"),
      });
      expect(await store().getSetting("model")).toBe("a");
      expect((await store().listSettingAudit({ key: "model" })).map((e) => e.value)).toEqual(["a"]);
      // null is the value for "no setting".
      expect(await store().putSetting("model", null, { actor: "ops" })).toMatchObject({ value: null, previous: "a" });
      expect(await store().getSetting("model")).toBeNull();
    });

    it("refuses an empty key, writing neither value nor audit event", async () => {
      await expect(store().putSetting("", 1, { actor: "kit" })).rejects.toMatchObject(stateInputRefusal('putSetting(key ""): key must be a non-empty string, got ""'));
      expect(await store().getSetting("")).toBeUndefined();
      expect(await store().listSettingAudit()).toEqual([]);
    });

    it("returns copies of stored values", async () => {
      const value = { list: [1] };
      await store().putSetting("obj", value, { actor: "ops" });
      value.list.push(2);
      const read = (await store().getSetting("obj")) as { list: number[] };
      read.list.push(3);
      expect(await store().getSetting("obj")).toEqual({ list: [1] });
    });

    it("keeps a value as its JSON (a Date as its ISO text) and refuses one that has none (a BigInt) with AL_ERR_STATE_INPUT_INVALID", async () => {
      const written = await store().putSetting("when", { at: new Date("2020-01-02T03:04:05.000Z"), gone: undefined } as unknown as JsonValue, { actor: "ops" });
      expect(written.value).toEqual({ at: "2020-01-02T03:04:05.000Z" });
      expect(await store().getSetting("when")).toEqual({ at: "2020-01-02T03:04:05.000Z" });
      await expect(store().putSetting("when", { big: 10n } as unknown as JsonValue, { actor: "ops" })).rejects.toMatchObject({ code: "AL_ERR_STATE_INPUT_INVALID" });
      expect(await store().getSetting("when")).toEqual({ at: "2020-01-02T03:04:05.000Z" });
    });
  });
}
