import { describe, expect, it } from "vitest";
import { RUN_STATUSES, type NewRun, type StateAdapter, type UsageRecord } from "../../state/index.js";
import { clockAt, uniqueId, useSubject, type StateKitFactory } from "./subject.js";

const newRun = (overrides: Partial<NewRun> = {}): NewRun => ({
  id: uniqueId("run"),
  agentId: "kit-agent",
  agentRevision: "rev-1",
  modelSpec: "scripted/kit",
  input: { message: "hello", metadata: {} },
  ...overrides,
});

const usage = (overrides: Partial<UsageRecord> = {}): UsageRecord => ({
  id: uniqueId("usage"),
  runId: uniqueId("run"),
  conversationId: null,
  provider: "kit",
  model: "kit-model",
  inputTokens: 10,
  outputTokens: 5,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0.001,
  createdAt: "2031-03-04T05:06:07.000Z",
  ...overrides,
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The refusal of the shared checks in @assemblyline-agents/core (input-checks): the whole of what it says, word for word. */
const refusal = (summary: string) => ({ code: "AL_ERR_STATE_INPUT_INVALID", message: expect.stringMatching(new RegExp(`^AL_ERR_STATE_INPUT_INVALID: ${escape(summary)}(\n|$)`)) });

/**
 * What a state adapter refuses or rewrites before it writes, beyond the facet kits: the records
 * PostgreSQL refuses (a NaN token count, a negative file size, an empty lease owner, a message role
 * no model reads, an empty setting key, a fractional seq) are refused by every store with the same
 * message, and times are kept as ISO UTC, the form PostgreSQL gives them back in. A store passes it
 * by calling the shared checks (checkedUsageRecord, checkFileRecord, checkLeaseOwner,
 * checkConversationAppend, checkSettingWrite, checkSeqNumber, checkListLimit, checkScheduleInput)
 * before it writes. Run it beside describeStateConformance, for a state that has every facet.
 */
export function describeStateInputConformance(name: string, factory: StateKitFactory<StateAdapter>): void {
  describe(`${name}: state input conformance`, () => {
    const store = useSubject(factory);

    it("refuses a lease for an empty owner in acquireRunLease, createRun and every claim, leasing nothing", async () => {
      const { run } = await store().createRun(newRun());
      await expect(store().acquireRunLease(run.id, "", 60_000)).rejects.toMatchObject(refusal(`acquireRunLease(run "${run.id}"): owner must be a non-empty string, got ""`));
      const leased = newRun();
      await expect(store().createRun(leased, { lease: { owner: "", ttlMs: 60_000 } })).rejects.toMatchObject(refusal('createRun: options.lease.owner must be a non-empty string, got ""'));
      expect(await store().getRun(leased.id)).toBeUndefined();
      for (const claim of ["claimRecoverableRuns", "claimDeliveries", "claimDueSchedules"] as const) {
        await expect(store()[claim]({ owner: "", ttlMs: 60_000 })).rejects.toMatchObject(refusal(`${claim}: options.owner must be a non-empty string, got ""`));
      }
      expect((await store().getRun(run.id))?.lease).toBeNull();
    });

    it("takes a fractional listRuns limit as the whole runs below it, at least one", async () => {
      const agentId = uniqueId("agent");
      for (let index = 0; index < 3; index += 1) await store().createRun(newRun({ agentId }));
      expect((await store().listRuns({ agentId, limit: 2.5 })).runs).toHaveLength(2);
      expect((await store().listRuns({ agentId, limit: 0.5 })).runs).toHaveLength(1);
    });

    it("refuses a listRuns limit that is no finite number and a status no run has, instead of a default page or an empty one", async () => {
      await store().createRun(newRun());
      await expect(store().listRuns({ limit: Number.NaN })).rejects.toMatchObject(refusal("listRuns: filter.limit must be a number of runs per page (left out: the store's default), got NaN"));
      await expect(store().listRuns({ limit: Number.POSITIVE_INFINITY })).rejects.toMatchObject(refusal("listRuns: filter.limit must be a number of runs per page (left out: the store's default), got Infinity"));
      await expect(store().listRuns({ status: "bogus" as never })).rejects.toMatchObject(refusal(`listRuns: filter.status[0] must be one of ${RUN_STATUSES.join(", ")}, got "bogus"`));
      await expect(store().listRuns({ status: ["queued", "bogus" as never] })).rejects.toMatchObject(refusal(`listRuns: filter.status[1] must be one of ${RUN_STATUSES.join(", ")}, got "bogus"`));
    });

    it("refuses an append whose expectedLastSeq is not a whole number >= 0 as input, not as a seq mismatch or a failed query, appending nothing", async () => {
      const { run } = await store().createRun(newRun());
      for (const expectedLastSeq of [1.5, -1, Number.NaN]) {
        await expect(store().appendEvents(run.id, [{ type: "kit.write" }], undefined, { expectedLastSeq })).rejects.toMatchObject(
          refusal(`appendEvents(run "${run.id}"): options.expectedLastSeq must be a whole number >= 0, got ${expectedLastSeq}`),
        );
      }
      expect((await store().getRun(run.id))?.lastSeq).toBe(1);
    });

    it("refuses a listEvents limit that is not a whole number >= 0, instead of listing a part event", async () => {
      const { run } = await store().createRun(newRun());
      await store().appendEvents(run.id, [{ type: "a" }, { type: "b" }]);
      for (const limit of [1.5, -1, Number.NaN]) {
        await expect(store().listEvents(run.id, { limit })).rejects.toMatchObject(refusal(`listEvents(run "${run.id}") got limit ${limit}, which is not a whole number of entries`));
      }
      expect(await store().listEvents(run.id, { limit: 0 })).toEqual([]);
      expect((await store().listEvents(run.id, { limit: 2 })).map((event) => event.seq)).toEqual([1, 2]);
    });

    it("refuses a usage record with a count or cost that is no finite number, or a createdAt that is no time, recording nothing", async () => {
      const runId = uniqueId("run");
      const rows: Array<[Partial<UsageRecord>, string]> = [
        [{ inputTokens: Number.NaN }, "record.inputTokens must be a finite number, got NaN"],
        [{ outputTokens: Number.POSITIVE_INFINITY }, "record.outputTokens must be a finite number, got Infinity"],
        [{ costUsd: "0.1" as never }, 'record.costUsd must be a finite number, got "0.1"'],
        [{ createdAt: "yesterday" }, 'record.createdAt must be an ISO-8601 time, got "yesterday"'],
        [{ id: "" }, 'record.id must be a non-empty string, got ""'],
      ];
      for (const [change, problem] of rows) {
        await expect(store().recordUsage(usage({ runId, ...change })), problem).rejects.toMatchObject(refusal(`recordUsage: ${problem}`));
      }
      expect(await store().listUsage({ runId })).toEqual([]);
    });

    it("keeps a usage record's createdAt as the ISO UTC time it names, as PostgreSQL gives it back", async () => {
      const record = usage({ createdAt: "2024-01-01T12:00:00+05:00" });
      await store().recordUsage(record);
      expect(await store().listUsage({ runId: record.runId })).toEqual([expect.objectContaining({ id: record.id, createdAt: "2024-01-01T07:00:00.000Z" })]);
    });

    it("refuses a file record whose size is not a whole number of bytes >= 0, or whose path is empty, keeping what was there", async () => {
      const record = { path: "/files/kit.txt", blobKey: "kit.txt", size: 3, contentType: "text/plain", sha256: "abc", runId: null, createdAt: new Date().toISOString() };
      await store().putFileRecord(record);
      for (const size of [-1, 1.5, Number.NaN]) {
        await expect(store().putFileRecord({ ...record, size })).rejects.toMatchObject(refusal(`putFileRecord: record.size must be a whole number of bytes >= 0, got ${size}`));
      }
      await expect(store().putFileRecord({ ...record, path: "" })).rejects.toMatchObject(refusal('putFileRecord: record.path must be a non-empty string, got ""'));
      expect(await store().getFileRecord(record.path)).toEqual(record);
      expect(await store().getFileRecord("")).toBeUndefined();
    });

    it("refuses a conversation message whose role is neither user nor assistant, appending none of the batch", async () => {
      const conversationId = uniqueId("conv");
      const at = new Date().toISOString();
      const batch = [
        { role: "user" as const, content: "hi", runId: null, createdAt: at },
        { role: "system" as "user", content: "be brief", runId: null, createdAt: at },
      ];
      await expect(store().appendConversationMessages(conversationId, batch)).rejects.toMatchObject(
        refusal(`appendConversationMessages(conversation "${conversationId}"): messages[1].role must be one of user, assistant, got "system"`),
      );
      expect(await store().listConversationMessages(conversationId)).toEqual([]);
    });

    it("refuses a setting with an empty key, writing neither value nor audit event", async () => {
      await expect(store().putSetting("", 1, { actor: "kit" })).rejects.toMatchObject(refusal('putSetting(key ""): key must be a non-empty string, got ""'));
      expect(await store().getSetting("")).toBeUndefined();
      expect(await store().listSettingAudit()).toEqual([]);
    });

    it("keeps a schedule's nextRunAt as the ISO UTC time it names, in upsert, insert and replace, as PostgreSQL gives it back", async () => {
      const row = (id: string, nextRunAt: string) => ({ id, intervalMs: 60_000, nextRunAt, payload: null, enabled: true });
      await store().upsertSchedule(row("upserted", "2031-03-04T10:06:07+05:00"));
      expect((await store().getSchedule("upserted"))?.nextRunAt).toBe(clockAt(0).toISOString());
      if (store().insertSchedule) {
        await store().insertSchedule!(row("inserted", "2031-03-04T10:06:07+05:00"));
        expect((await store().getSchedule("inserted"))?.nextRunAt).toBe(clockAt(0).toISOString());
      }
      if (store().replaceSchedule) {
        // The expected row may name the stored time with its offset: the same moment.
        expect(await store().replaceSchedule!(row("upserted", "2031-03-04T10:06:07+05:00"), row("upserted", "2031-03-04T06:07:07+01:00"))).toBe(true);
        expect((await store().getSchedule("upserted"))?.nextRunAt).toBe(clockAt(60_000).toISOString());
      }
    });
  });
}
