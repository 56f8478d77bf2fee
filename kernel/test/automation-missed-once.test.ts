import { describe, expect, it } from "vitest";
import type { RuntimeLogger } from "@assemblyline-agents/core";
import { automationsAt } from "./support/automations-at.js";

const automation = (schedule: string) => `import { defineAutomation } from "@assemblyline-agents/core";
export default defineAutomation({ schedule: ${schedule}, message: "send the report" });
`;

/** The due time each started run stands for, in the order they were started. */
const dueTimes = (runs: Map<string, { metadata: unknown }>) => [...runs.values()].map((run) => (run.metadata as { automation: { dueAt: string } }).automation.dueAt);

function warnings() {
  const seen: Array<Record<string, unknown>> = [];
  const logger: RuntimeLogger = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (fields) => void seen.push(fields) };
  return { seen, logger };
}

describe("a due time whose run was started, then found again past the catch-up window", () => {
  it("runs once when the host crashed right after starting it and restarts later than the window", async () => {
    const { automations, make, clock, state, runs } = await automationsAt({ "automations/daily.ts": automation(`"0 9 * * *"`) }, "2026-03-02T08:00:00.000Z");
    clock.now = new Date("2026-03-02T09:00:01.000Z");
    const [row] = await state.claimDueSchedules({ owner: "before-crash", ttlMs: 60_000, now: clock.now });
    expect((await automations.dispatchDue(row!)).runs.map((run) => run.created)).toEqual([true]); // then the host dies before completeScheduleRun

    clock.now = new Date("2026-03-02T09:04:00.000Z"); // 239 s late: past the 180 s window
    const restarted = make();
    await restarted.syncStatic();
    const [again] = await state.claimDueSchedules({ owner: "after-restart", ttlMs: 60_000, now: clock.now });
    const result = await restarted.dispatchDue(again!);
    expect(result.runs.map((run) => run.created)).toEqual([false]);
    expect(dueTimes(runs)).toEqual(["2026-03-02T09:00:00.000Z"]);
    expect(result.nextRunAt.toISOString()).toBe("2026-03-03T09:00:00.000Z");
  });

  it("runs once when completeScheduleRun failed under a lease longer than the window", async () => {
    const { automations, clock, state, runs } = await automationsAt({ "automations/daily.ts": automation(`"0 9 * * *"`) }, "2026-03-02T08:00:00.000Z");
    clock.now = new Date("2026-03-02T09:00:01.000Z");
    const [row] = await state.claimDueSchedules({ owner: "a", ttlMs: 300_000, now: clock.now });
    await automations.dispatchDue(row!); // started; completeScheduleRun then fails, and the lease runs out
    clock.now = new Date("2026-03-02T09:05:02.000Z");
    const [retry] = await state.claimDueSchedules({ owner: "b", ttlMs: 300_000, now: clock.now });
    expect((await automations.dispatchDue(retry!)).runs.map((run) => run.created)).toEqual([false]);
    expect(runs.size).toBe(1);
  });

  it("starts nothing more when the dead replica had started every due time up to now", async () => {
    const { automations, clock, state, runs } = await automationsAt({ "automations/often.ts": automation(`{ every: 100_000 }`) }, "2026-03-02T08:00:00.000Z");
    // Its first due time is 08:01:40; the dispatch comes 150 s late (inside the window) and starts 08:01:40 and 08:03:20.
    clock.now = new Date("2026-03-02T08:04:10.000Z");
    const [row] = await state.claimDueSchedules({ owner: "dead", ttlMs: 30_000, now: clock.now });
    expect((await automations.dispatchDue(row!)).runs.map((run) => run.dueAt)).toEqual(["2026-03-02T08:01:40.000Z", "2026-03-02T08:03:20.000Z"]);
    // Found again once its 30 s lease ran out, 190 s after the first of them and before 08:05:00: nothing was missed.
    clock.now = new Date("2026-03-02T08:04:50.000Z");
    const [again] = await state.claimDueSchedules({ owner: "survivor", ttlMs: 60_000, now: clock.now });
    const result = await automations.dispatchDue(again!);
    expect(result.runs.map((run) => run.created)).toEqual([false]);
    expect(runs.size).toBe(2);
    expect(result.nextRunAt.toISOString()).toBe("2026-03-02T08:05:00.000Z");
  });

  it("still runs the due times missed after the one started, once, and a retry finds that run", async () => {
    const { automations, clock, state, runs } = await automationsAt({ "automations/daily.ts": automation(`"0 9 * * *"`) }, "2026-03-02T08:00:00.000Z");
    clock.now = new Date("2026-03-02T09:00:01.000Z");
    const [row] = await state.claimDueSchedules({ owner: "dead", ttlMs: 60_000, now: clock.now });
    await automations.dispatchDue(row!);
    clock.now = new Date("2026-03-04T12:00:00.000Z"); // down until after the 3rd's and the 4th's 09:00
    const [again] = await state.claimDueSchedules({ owner: "survivor", ttlMs: 60_000, now: clock.now });
    const result = await automations.dispatchDue(again!);
    expect(result.runs.map((run) => run.created)).toEqual([true]);
    expect(runs.size).toBe(2);
    expect([...runs.keys()][1]).toMatch(/:2026-03-04T09:00:00\.000Z$/);
    expect(result.nextRunAt.toISOString()).toBe("2026-03-05T09:00:00.000Z");
    // The survivor dies too before moving the row: found again, the collapsed run is the same one.
    clock.now = new Date("2026-03-04T12:05:00.000Z");
    expect((await automations.dispatchDue(again!)).runs.map((run) => run.created)).toEqual([false]);
    expect(runs.size).toBe(2);
  });

  it("finds the last missed time of a per-second cron down for days without stepping through each", async () => {
    const { automations, clock, state, runs } = await automationsAt({ "automations/tick.ts": automation(`"* * * * * *"`) }, "2026-03-02T08:00:00.000Z");
    clock.now = new Date("2026-03-05T08:00:00.500Z");
    const started = Date.now();
    const [row] = await state.claimDueSchedules({ owner: "a", ttlMs: 60_000, now: clock.now });
    const result = await automations.dispatchDue(row!);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.runs).toHaveLength(1);
    expect([...runs.keys()][0]).toMatch(/:2026-03-05T08:00:00\.000Z$/);
    expect(result.nextRunAt.toISOString()).toBe("2026-03-05T08:00:01.000Z");
  });
});

describe("a scheduler lease not below automationCatchUpMs", () => {
  it("is warned about once, naming both, at the first dispatch it leased", async () => {
    const { make, clock, state } = await automationsAt({ "automations/a.ts": automation(`"0 9 * * *"`), "automations/b.ts": automation(`"0 9 * * *"`) }, "2026-03-02T08:00:00.000Z");
    const { seen, logger } = warnings();
    const host = make(undefined, logger);
    clock.now = new Date("2026-03-02T09:00:01.000Z");
    for (const row of await state.claimDueSchedules({ owner: "long", ttlMs: 180_000, now: clock.now })) await host.dispatchDue(row);
    const warned = seen.filter((fields) => fields.event === "automation.lease_not_below_catch_up");
    expect(warned).toEqual([expect.objectContaining({ leaseMsAtLeast: 180_000, automationCatchUpMs: 180_000 })]);
  });

  it("is not warned about when the lease is below it", async () => {
    const { make, clock, state } = await automationsAt({ "automations/a.ts": automation(`"0 9 * * *"`) }, "2026-03-02T08:00:00.000Z");
    const { seen, logger } = warnings();
    const host = make(undefined, logger);
    clock.now = new Date("2026-03-02T09:00:01.000Z");
    for (const row of await state.claimDueSchedules({ owner: "default", ttlMs: 60_000, now: clock.now })) await host.dispatchDue(row);
    expect(seen.filter((fields) => fields.event === "automation.lease_not_below_catch_up")).toEqual([]);
    expect(host.catchUpMs).toBe(180_000);
  });
});
