import { describe, expect, it } from "vitest";
import { automationsAt } from "./support/automations-at.js";

describe("an update that gives the stored schedule again", () => {
  it("keeps a due time passed and not yet run: 10:00, its dispatch failed and waiting out the lease, runs with the new message", async () => {
    const { automations, clock, state, runs, submitted, dispatchAll } = await automationsAt({}, "2026-03-01T09:30:00.000Z");
    await automations.create({ name: "poll", schedule: "0 * * * *", message: "poll v1" });
    clock.now = new Date("2026-03-01T10:00:01.000Z");
    await state.claimDueSchedules({ owner: "failed-dispatch", ttlMs: 60_000, now: clock.now }); // the dispatch threw; its lease is left to expire
    clock.now = new Date("2026-03-01T10:00:30.000Z");
    const updated = await automations.update("poll", { schedule: "0 * * * *", message: "poll v2" });
    expect(updated.nextRunAt).toBe("2026-03-01T10:00:00.000Z");
    clock.now = new Date("2026-03-01T10:01:05.000Z");
    const [result] = await dispatchAll();
    expect(result!.runs.map((run) => [run.dueAt, run.created])).toEqual([["2026-03-01T10:00:00.000Z", true]]);
    expect(runs.size).toBe(1);
    expect(submitted.map((run) => run.message)).toEqual(["poll v2"]);
    expect((await automations.get("poll")).nextRunAt).toBe("2026-03-01T11:00:00.000Z");
  });

  it("is no change however it is written (spaces between cron fields): a due time not yet dispatched stays", async () => {
    const { automations, clock } = await automationsAt({}, "2026-03-02T09:30:00.000Z");
    await automations.create({ name: "report", schedule: { cron: "0 10 * * 1", timezone: "Europe/Paris" }, message: "report" });
    expect((await automations.get("report")).nextRunAt).toBe("2026-03-09T09:00:00.000Z");
    clock.now = new Date("2026-03-09T09:00:00.500Z"); // due, and the scheduler has not polled yet
    const updated = await automations.update("report", { schedule: { cron: " 0  10 * *  1 ", timezone: "Europe/Paris" }, message: "weekly report" });
    expect(updated).toMatchObject({ nextRunAt: "2026-03-09T09:00:00.000Z", schedule: { expression: "0  10 * *  1" } });
  });
});

describe("an update that gives a new schedule", () => {
  it("keeps a due time passed and not yet run, runs it once, then continues on the new schedule", async () => {
    const { automations, clock, state, runs, dispatchAll } = await automationsAt({}, "2026-03-01T09:30:00.000Z");
    await automations.create({ name: "poll", schedule: "0 * * * *", message: "poll" });
    clock.now = new Date("2026-03-01T10:00:01.000Z");
    await state.claimDueSchedules({ owner: "failed-dispatch", ttlMs: 60_000, now: clock.now });
    clock.now = new Date("2026-03-01T10:00:30.000Z");
    expect((await automations.update("poll", { schedule: "30 * * * *" })).nextRunAt).toBe("2026-03-01T10:00:00.000Z");
    clock.now = new Date("2026-03-01T10:01:05.000Z");
    await dispatchAll();
    expect([...runs.keys()].map((key) => key.slice(-24))).toEqual(["2026-03-01T10:00:00.000Z"]);
    expect((await automations.get("poll")).nextRunAt).toBe("2026-03-01T10:30:00.000Z");
  });

  it("given while a dispatch holds that due time, moves on to the new schedule when the dispatch ends, without dispatching it again", async () => {
    const { automations, clock, state, runs } = await automationsAt({}, "2026-03-01T09:30:00.000Z");
    await automations.create({ name: "poll", schedule: "0 * * * *", message: "poll v1" });
    clock.now = new Date("2026-03-01T10:00:01.000Z");
    const [row] = await state.claimDueSchedules({ owner: "scheduler", ttlMs: 60_000, now: clock.now });
    await automations.update("poll", { message: "poll v2" });
    const result = await automations.dispatchDue(row!);
    // Completed as a scheduler completes it: only if the row is still as claimed.
    await state.completeScheduleRun(row!.id, "scheduler", result.nextRunAt, row!.nextRunAt, row!);
    expect((await automations.get("poll")).nextRunAt).toBe("2026-03-01T11:00:00.000Z");
    expect(runs.size).toBe(1);
  });

  it("given after the dispatch last read the row and before it completes, is kept: no run at a time only the old schedule had", async () => {
    const { automations, clock, state, runs, dispatchAll } = await automationsAt({}, "2026-03-01T10:00:00.000Z");
    await automations.create({ name: "poll", schedule: { every: 60_000 }, message: "poll" });
    clock.now = new Date("2026-03-01T10:01:05.000Z");
    const [row] = await state.claimDueSchedules({ owner: "replica-1", ttlMs: 60_000, now: clock.now });
    const result = await automations.dispatchDue(row!);
    expect(result.nextRunAt.toISOString()).toBe("2026-03-01T10:02:00.000Z");
    // The due time it ran, passed, is kept by the update; the dispatch's answer is the old schedule's.
    await automations.update("poll", { schedule: { cron: "0 12 * * *" } });
    await state.completeScheduleRun(row!.id, "replica-1", result.nextRunAt, row!.nextRunAt, row!);
    expect(await state.getSchedule(row!.id)).toMatchObject({ lease: null, nextRunAt: "2026-03-01T10:01:00.000Z" });
    // Dispatched again, 10:01 starts no second run, and the row moves on to the new schedule.
    await dispatchAll();
    expect(runs.size).toBe(1);
    expect((await automations.get("poll")).nextRunAt).toBe("2026-03-01T12:00:00.000Z");
  });

  it("of an interval, kept due time or not, comes back to the interval's series (multiples since the epoch)", async () => {
    const { automations, clock, state, dispatchAll } = await automationsAt({}, "2026-03-01T09:50:00.000Z");
    await automations.create({ name: "poll", schedule: "7 10 * * *", message: "poll" });
    clock.now = new Date("2026-03-01T10:07:01.000Z");
    await state.claimDueSchedules({ owner: "failed-dispatch", ttlMs: 60_000, now: clock.now });
    clock.now = new Date("2026-03-01T10:07:30.000Z");
    expect((await automations.update("poll", { schedule: { every: 3_600_000 } })).nextRunAt).toBe("2026-03-01T10:07:00.000Z");
    clock.now = new Date("2026-03-01T10:08:05.000Z");
    await dispatchAll();
    // On the hour, not 11:07.
    expect((await automations.get("poll")).nextRunAt).toBe("2026-03-01T11:00:00.000Z");
  });

  it("of an automation that rests (paused) owes nothing: it starts from the new schedule's next due time", async () => {
    const { automations, clock } = await automationsAt({}, "2026-03-01T09:30:00.000Z");
    await automations.create({ name: "poll", schedule: "0 * * * *", message: "poll" });
    await automations.setPaused("poll", true);
    clock.now = new Date("2026-03-01T12:10:00.000Z");
    await automations.update("poll", { schedule: "30 * * * *" });
    expect((await automations.setPaused("poll", false)).nextRunAt).toBe("2026-03-01T12:30:00.000Z");
  });

  it("with no due time waiting starts at the new schedule's first due time after now", async () => {
    const { automations, clock } = await automationsAt({}, "2026-03-01T09:30:00.000Z");
    await automations.create({ name: "poll", schedule: "0 * * * *", message: "poll" });
    clock.now = new Date("2026-03-01T09:40:00.000Z");
    expect((await automations.update("poll", { schedule: "45 * * * *" })).nextRunAt).toBe("2026-03-01T09:45:00.000Z");
  });
});

describe("a build whose automations/ file changed its schedule", () => {
  it("keeps a due time the old schedule owed and no host has run yet, runs it once, then continues on the new schedule", async () => {
    const file = (cron: string) => ({ "automations/poll.ts": `import { defineAutomation } from "@assemblyline-agents/core";\nexport default defineAutomation({ schedule: "${cron}", message: "poll" });\n` });
    const { make, bundle, clock, runs, dispatchAll } = await automationsAt(file("0 * * * *"), "2026-03-01T09:30:00.000Z");
    expect((await make().get("poll")).nextRunAt).toBe("2026-03-01T10:00:00.000Z");
    // 10:00 is due and not yet dispatched when a host of the new build (on :30) starts and syncs.
    clock.now = new Date("2026-03-01T10:00:20.000Z");
    const rebuilt = make(bundle.manifest.automations.map((entry) => ({ ...entry, schedule: { kind: "cron" as const, expression: "30 * * * *", timezone: "UTC" } })));
    await rebuilt.syncStatic();
    expect((await rebuilt.get("poll")).nextRunAt).toBe("2026-03-01T10:00:00.000Z");
    clock.now = new Date("2026-03-01T10:00:40.000Z");
    await dispatchAll(rebuilt);
    expect([...runs.keys()].map((key) => key.slice(-24))).toEqual(["2026-03-01T10:00:00.000Z"]);
    expect((await rebuilt.get("poll")).nextRunAt).toBe("2026-03-01T10:30:00.000Z");
  });
});
